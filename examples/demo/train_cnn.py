"""A plain PyTorch training script, as a user writes one: a small CNN on
Fashion-MNIST for a fixed number of steps (work-bound), on the GPU when
there is one.

    python3 train_cnn.py --steps 60 --batch 64 [--gpu-batch 3072] [--width 32]

`--gpu-batch` replaces the batch size on a GPU: the demo's job file declares
1 GiB for this job and asks for a batch that needs several, so under MPS it
dies of its own out-of-memory and colo reruns it alone.
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def idx_file(directory, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise SystemExit(f"train_cnn.py: no {stem}[.gz] in {directory}")


class Cnn(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(1, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.head = nn.Linear(2 * width * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--gpu-batch", type=int, default=0, help="batch size on a GPU (0: --batch)")
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--data", default=DATA)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batch = args.gpu_batch if device.type == "cuda" and args.gpu_batch > 0 else args.batch
    images = read_idx(idx_file(args.data, "train-images-idx3-ubyte"))
    labels = read_idx(idx_file(args.data, "train-labels-idx1-ubyte"))
    x_all = torch.from_numpy(images.copy()).float().div_(255).unsqueeze(1)
    y_all = torch.from_numpy(labels.astype(np.int64))

    model = Cnn(args.width).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = time.time()
    for step in range(args.steps):
        idx = torch.randint(0, x_all.shape[0], (batch,))
        x, y = x_all[idx].to(device), y_all[idx].to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step + 1}/{args.steps} loss {loss.item():.4f}", flush=True)
    seconds = time.time() - start
    print(f"done: {args.steps} steps of batch {batch} on {device} in {seconds:.1f} s "
          f"({args.steps * batch / seconds:.0f} samples/s)")


if __name__ == "__main__":
    main()
