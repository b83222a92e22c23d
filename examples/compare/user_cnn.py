"""colo compare workload: 8 configurations of a user-written CNN on
Fashion-MNIST, swept through colo.fuse (no rewrite of the model).

    colo compare examples/compare/user_cnn.py --steps 2000

Run by itself (python3 examples/compare/user_cnn.py) it is a plain
colo.fuse sweep. $FASHION_MNIST names the data directory (default Debian's
/usr/share/datasets/fashion-mnist)."""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn

import colo.fuse


class UserCnn(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.head(self.features(x))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape).copy())


class Batches:
    """Shuffled batches of a split held on the device, re-drawn every epoch."""

    def __init__(self, images, labels, batch, shuffle, device):
        self.x = ((images.float() / 255 - 0.286) / 0.353).unsqueeze(1).to(device)
        self.y = labels.long().to(device)
        self.batch, self.shuffle = batch, shuffle

    def __len__(self):
        return len(self.y) // self.batch

    def __iter__(self):
        order = torch.randperm(len(self.y), device=self.y.device) if self.shuffle else None
        for i in range(len(self)):
            pick = slice(i * self.batch, (i + 1) * self.batch)
            yield (self.x[order[pick]], self.y[order[pick]]) if self.shuffle else (self.x[pick], self.y[pick])


if __name__ == "__main__":
    root = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    train = Batches(read_idx(f"{root}/train-images-idx3-ubyte.gz"), read_idx(f"{root}/train-labels-idx1-ubyte.gz"),
                    128, True, device)
    test = Batches(read_idx(f"{root}/t10k-images-idx3-ubyte.gz"), read_idx(f"{root}/t10k-labels-idx1-ubyte.gz"),
                   1000, False, device)
    colo.fuse.compare_workload(UserCnn, {"lr": [0.01, 0.03, 0.1, 0.3], "width": [32], "seed": [0, 1]}, train, test,
                               epochs=2, optimizer={"momentum": 0.9}, device=device, cuda_graph=True,
                               channels_last=True, on_epoch=None)
