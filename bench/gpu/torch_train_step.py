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

--model heavy is the reference for BM_TrainStep/gpu_heavy: five 3x3 'same'
convolutions (32, 64, 128, 256, 256 channels, each with ReLU and a 2x2 max
pool) on [128, 224, 224, 3], Flatten, Linear 10 (its modes end in "_heavy").
The CUDA graph is captured with Adam(capturable=True), which PyTorch requires
for a captured optimizer step; eager steps use the default Adam.

    python3 bench/gpu/torch_train_step.py [--steps 50] [--batch 32] [--side 256] [--graph] [--bf16]
                                           [--model tutorial|heavy]

Prints one JSON line per mode: {"system": "torch", "mode": "eager"|"graph",
"images_per_s": ..., "step_ms": ..., "device": ..., "torch": ...}.
"""
import argparse
import json
import time

import torch
from torch import nn


def make_model(side, kind="tutorial"):
    if kind == "heavy":
        layers, c = [], 3
        for filters in (32, 64, 128, 256, 256):
            layers += [nn.Conv2d(c, filters, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
            c = filters
        after = side // 32
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(c * after * after, 10))
    after = ((side - 2) // 2 - 4) // 2
    return nn.Sequential(
        nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * after * after, 64), nn.ReLU(), nn.Linear(64, 2))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=50, help="timed steps per mode")
    p.add_argument("--batch", type=int, default=None, help="default 32 (heavy: 128)")
    p.add_argument("--side", type=int, default=None, help="default 256 (heavy: 224)")
    p.add_argument("--graph", action="store_true", help="also time CUDA-graph replay")
    p.add_argument("--bf16", action="store_true",
                   help="autocast the forward pass and loss to bfloat16 (mixed precision)")
    p.add_argument("--device", default="cuda", help="cuda, or cpu to check the script anywhere")
    p.add_argument("--model", choices=("tutorial", "heavy"), default="tutorial")
    a = p.parse_args()
    heavy = a.model == "heavy"
    a.batch = a.batch or (128 if heavy else 32)
    a.side = a.side or (224 if heavy else 256)
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_train_step.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    torch.manual_seed(1)
    model = make_model(a.side, a.model).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    classes = 10 if a.model == "heavy" else 2
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(5)
    x_u8 = torch.randint(0, 256, (a.batch, a.side, a.side, 3), dtype=torch.uint8, generator=g)
    y = (torch.arange(a.batch) % classes).to(dev)
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
        # A captured optimizer step needs Adam's state on the device.
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, capturable=True)
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
    suffix = ("_bf16" if a.bf16 else "") + ("_heavy" if a.model == "heavy" else "")
    for mode, seconds in results.items():
        print(json.dumps({"system": "torch", "mode": mode + suffix, "images_per_s": a.batch / seconds,
                          "step_ms": seconds * 1e3, "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
                          "torch": torch.__version__}))


if __name__ == "__main__":
    main()
