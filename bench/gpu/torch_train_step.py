#!/usr/bin/env python3
"""PyTorch reference for gpu_train_bench's BM_TrainStep/gpu (bench/gpu/train_bench.cc).

The tutorials' cats_vs_dogs CNN (Rescaling 1/255, Conv 32 3x3 relu, MaxPool 2,
Conv 32 5x5 relu, MaxPool 2, Flatten, Dense 64 relu, Dense 2), Adam with
Keras's defaults (lr 1e-3, epsilon 1e-7), cross-entropy, on uint8
[32, 256, 256, 3] batches, fp32 with TF32 off (as sluice's backend), NHWC
(channels_last). Each step reads the loss back (loss.item()), as
Sequential::TrainStep returns it. --graph also times the step captured once
as a CUDA graph and replayed (torch.cuda.graphs), the analogue of
tf.function. --bf16 runs the forward pass and the loss under
torch.autocast(bfloat16) (fp32 master weights), the reference for
BM_TrainStep/gpu_bf16; its modes are "eager_bf16" and "graph_bf16".

    python3 bench/gpu/torch_train_step.py [--steps 50] [--batch 32] [--side 256] [--graph] [--bf16]

Prints one JSON line per mode: {"system": "torch", "mode": "eager"|"graph",
"images_per_s": ..., "step_ms": ..., "device": ..., "torch": ...}.
"""
import argparse
import json
import time

import torch
from torch import nn


def make_model(side):
    after = ((side - 2) // 2 - 4) // 2
    return nn.Sequential(
        nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * after * after, 64), nn.ReLU(), nn.Linear(64, 2))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=50, help="timed steps per mode")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--side", type=int, default=256)
    p.add_argument("--graph", action="store_true", help="also time CUDA-graph replay")
    p.add_argument("--bf16", action="store_true",
                   help="autocast the forward pass and loss to bfloat16 (mixed precision)")
    p.add_argument("--device", default="cuda", help="cuda, or cpu to check the script anywhere")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_train_step.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    torch.manual_seed(1)
    model = make_model(a.side).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(5)
    x_u8 = torch.randint(0, 256, (a.batch, a.side, a.side, 3), dtype=torch.uint8, generator=g)
    y = (torch.arange(a.batch) % 2).to(dev)
    x_dev = x_u8.to(dev)

    def step():
        x = x_dev.permute(0, 3, 1, 2).float().mul_(1.0 / 255)  # NHWC bytes, channels_last view
        opt.zero_grad(set_to_none=False)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.bf16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def timed(run):
        for _ in range(5):
            run().item()
        sync()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            run().item()
        return (time.perf_counter() - t0) / a.steps

    results = {"eager": timed(step)}
    if a.graph and a.device == "cuda":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step()

        def replay():
            graph.replay()
            return static_loss

        results["graph"] = timed(replay)
    suffix = "_bf16" if a.bf16 else ""
    for mode, seconds in results.items():
        print(json.dumps({"system": "torch", "mode": mode + suffix, "images_per_s": a.batch / seconds,
                          "step_ms": seconds * 1e3, "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
                          "torch": torch.__version__}))


if __name__ == "__main__":
    main()
