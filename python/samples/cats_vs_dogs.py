"""The tutorials' cats_vs_dogs classifier, with sluice as the input pipeline.

The steps are the tutorial's: list the image files of train/cats and
train/dogs with their labels, Dataset.from_tensor_slices((filenames,
labels)), map a function that reads, decodes and resizes each image (/255)
with num_parallel_calls=AUTOTUNE, shuffle, batch, prefetch; then train a
small CNN (Conv-MaxPool-Conv-MaxPool-Flatten-Dense-Dense, Adam, sparse
categorical cross-entropy) and evaluate it on valid/. The model is
PyTorch's, fed by sluice.torch.DataLoader (tensors share sluice's buffers);
without torch the sample runs the pipeline alone and says so.

By default it makes a small image folder of the same layout (see
sample_images.py) and trains on 64x64 images for two epochs in a few
seconds; --data-dir takes the tutorial's folder (JPEG needs sluice.image).

    python cats_vs_dogs.py                       # the built-in folder
    python cats_vs_dogs.py --data-dir ~/datasets/cats_vs_dogs --image-size 256 --epochs 10

The decode and resize here are a Python function (each call takes the GIL,
run on sluice's threads); sluice.image's map functions do the same in C++
without it.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

import sluice

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sample_images  # noqa: E402


def make_dataset(data_dir, split, image_size, batch_size, shuffle, seed):
    filenames, labels = sample_images.list_images(data_dir, split)

    def _decode_and_resize(filename, label):
        with open(filename, "rb") as f:
            image = sample_images.decode_image(f.read())
        return sample_images.resize(image, (image_size, image_size)) / 255.0, label

    ds = sluice.Dataset.from_tensor_slices(
        (np.array(filenames, dtype=object), np.array(labels, dtype=np.int32)))
    ds = ds.map(_decode_and_resize, num_parallel_calls=sluice.AUTOTUNE)
    if shuffle:
        ds = ds.shuffle(buffer_size=len(filenames), seed=seed)
    return ds.batch(batch_size).prefetch(sluice.AUTOTUNE)


def train_torch(train, valid, args):
    import torch
    from torch import nn

    import sluice.torch

    torch.manual_seed(args.seed)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.LazyLinear(64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = None
    loss_fn = nn.CrossEntropyLoss()
    # One rank here; under torchrun each rank would read its own share.
    train_loader = sluice.torch.DataLoader(train, rank=0, world_size=1)
    valid_loader = sluice.torch.DataLoader(valid, rank=0, world_size=1)
    for epoch in range(args.epochs):
        model.train()
        total, correct, loss_sum = 0, 0, 0.0
        for images, labels in train_loader:
            x = images.permute(0, 3, 1, 2)  # NHWC as the tutorial's, NCHW for torch: a view
            y = labels.long()
            logits = model(x)
            if optimizer is None:  # LazyLinear has its shape after the first batch
                optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
            loss = loss_fn(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            total += len(y)
        print(f"epoch {epoch + 1}/{args.epochs}: loss {loss_sum / total:.4f}, "
              f"sparse_categorical_accuracy {correct / total:.4f} ({total} images)")
    model.eval()
    total, correct = 0, 0
    with torch.no_grad():
        for images, labels in valid_loader:
            logits = model(images.permute(0, 3, 1, 2))
            correct += (logits.argmax(1) == labels.long()).sum().item()
            total += len(labels)
    print(f"valid: sparse_categorical_accuracy {correct / total:.4f} ({total} images)")
    return correct / total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", help="folder with train/{cats,dogs} and valid/{cats,dogs} "
                   "(default: a small one made in a temporary folder)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--image-size", type=int, default=64, help="the tutorial's is 256")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or sample_images.make_cats_vs_dogs(tmp, seed=args.seed)
        train = make_dataset(data_dir, "train", args.image_size, args.batch_size, True, args.seed)
        valid = make_dataset(data_dir, "valid", args.image_size, args.batch_size, False, args.seed)
        print(f"train: {train.cardinality()} batches of {args.batch_size}, "
              f"valid: {valid.cardinality()}")
        try:
            import torch  # noqa: F401
        except ImportError:
            print("torch is not installed: skipping training; running the pipeline alone")
            n = sum(int(labels.shape[0]) for _, labels in train)
            print(f"one epoch of the training pipeline: {n} images")
            return 0
        train_torch(train, valid, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
