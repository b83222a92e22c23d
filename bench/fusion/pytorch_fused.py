#!/usr/bin/env python3
"""The peer of colo's fused arrays: the same horizontal fusion written by hand
in PyTorch eager Python, as a user of HFTA-style fusion writes it today --
grouped conv2d over N stacked channel groups, baddbmm for linear layers,
BatchNorm over N*C channels, torch.optim.SGD(foreach=True).

    pytorch_fused.py --model lenet --models 32 --seconds 3

Prints one JSON line with the aggregate training samples/s over a timed
window (same protocol as fusion_throughput: warm-up steps, then whole chunks
of 10 steps until the window is over, synchronised at the end)."""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F


class FusedConv(torch.nn.Module):
    def __init__(self, n, cin, cout, k, stride=1, padding=0, bias=True, shared_input=False):
        super().__init__()
        self.n, self.stride, self.padding, self.shared = n, stride, padding, shared_input
        w = torch.empty(n * cout, cin, k, k)
        torch.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
        self.weight = torch.nn.Parameter(w)
        self.bias = torch.nn.Parameter(torch.zeros(n * cout)) if bias else None

    def forward(self, x):
        groups = 1 if self.shared else self.n
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, 1, groups)


class FusedLinear(torch.nn.Module):
    def __init__(self, n, fin, fout):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n, fin, fout) / fin ** 0.5)
        self.bias = torch.nn.Parameter(torch.zeros(n, 1, fout))

    def forward(self, x):  # x [N, B, in]
        return torch.baddbmm(self.bias, x, self.weight)


def train_step(model, opt, x, y, n, set_to_none=True):
    """One step of a hand-fused array of n models on batch (x, y): the models'
    mean losses summed (times n, so each model's gradient is its own), then
    backward and the optimiser. set_to_none=False keeps the gradient buffers,
    as a CUDA graph capture needs."""
    loss = F.cross_entropy(model(x).reshape(n * y.numel(), -1), y.repeat(n)) * n
    opt.zero_grad(set_to_none=set_to_none)
    loss.backward()
    opt.step()


def to_model_major(x, n):  # [B, N*C, ...] -> [N, B, C*...]
    return x.reshape(x.shape[0], n, -1).transpose(0, 1)


class FusedLeNet(torch.nn.Module):
    def __init__(self, n, classes=10):
        super().__init__()
        self.n = n
        self.conv1 = FusedConv(n, 1, 6, 5, padding=2, shared_input=True)
        self.conv2 = FusedConv(n, 6, 16, 5)
        self.fc1, self.fc2, self.fc3 = FusedLinear(n, 400, 120), FusedLinear(n, 120, 84), FusedLinear(n, 84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(to_model_major(x, self.n)))
        return self.fc3(F.relu(self.fc2(x)))


class FusedMlp(torch.nn.Module):
    def __init__(self, n, fin=784, widths=(256, 128), classes=10):
        super().__init__()
        self.n = n
        dims = [fin, *widths, classes]
        self.layers = torch.nn.ModuleList(FusedLinear(n, a, b) for a, b in zip(dims, dims[1:]))

    def forward(self, x):
        x = x.flatten(1).unsqueeze(0).expand(self.n, -1, -1)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


class FusedBlock(torch.nn.Module):
    def __init__(self, n, cin, planes, stride):
        super().__init__()
        self.conv1 = FusedConv(n, cin, planes, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(n * planes)
        self.conv2 = FusedConv(n, planes, planes, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(n * planes)
        self.short = None
        if stride != 1 or cin != planes:
            self.short = torch.nn.Sequential(FusedConv(n, cin, planes, 1, stride, 0, bias=False),
                                             torch.nn.BatchNorm2d(n * planes))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.short(x) if self.short is not None else x))


class FusedResNet18(torch.nn.Module):
    def __init__(self, n, classes=10):
        super().__init__()
        self.n = n
        self.stem = FusedConv(n, 3, 64, 3, 1, 1, bias=False, shared_input=True)
        self.bn = torch.nn.BatchNorm2d(n * 64)
        blocks, cin = [], 64
        for stage, planes in enumerate((64, 128, 256, 512)):
            for b in range(2):
                blocks.append(FusedBlock(n, cin, planes, 2 if stage > 0 and b == 0 else 1))
                cin = planes
        self.blocks = torch.nn.Sequential(*blocks)
        self.head = FusedLinear(n, 512, classes)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn(self.stem(x))))
        return self.head(to_model_major(F.adaptive_avg_pool2d(x, 1), self.n))


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(directory, device):
    names = {"x": "train-images-idx3-ubyte", "y": "train-labels-idx1-ubyte"}
    arrays = {}
    for key, name in names.items():
        path = os.path.join(directory, name)
        arrays[key] = read_idx(path + ".gz" if os.path.exists(path + ".gz") else path)
    x = torch.tensor(arrays["x"], dtype=torch.float32, device=device).unsqueeze(1) / 255.0
    x = (x - x.mean()) / x.std()
    return x, torch.tensor(arrays["y"], dtype=torch.long, device=device)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["mlp", "lenet", "resnet18"], default="lenet")
    p.add_argument("--models", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--warmup-steps", type=int, default=30)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    n, b = args.models, args.batch
    if args.model == "resnet18":
        x_all = torch.randn(8192, 3, 32, 32, device=device)
        y_all = torch.randint(0, 10, (8192,), device=device)
        model = FusedResNet18(n)
    else:
        x_all, y_all = fashion_mnist(args.data, device)
        model = FusedLeNet(n) if args.model == "lenet" else FusedMlp(n)
    model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
    state = {"order": torch.randperm(len(y_all), device=device), "pos": 0}

    def step():
        if state["pos"] + b > len(y_all):
            state["order"], state["pos"] = torch.randperm(len(y_all), device=device), 0
        idx = state["order"][state["pos"]:state["pos"] + b]
        state["pos"] += b
        train_step(model, opt, x_all[idx], y_all[idx], n)

    for _ in range(args.warmup_steps):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < args.seconds:
        for _ in range(10):
            step()
        steps += 10
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    print(json.dumps({"model": args.model, "mode": "pytorch_fused", "models": n, "batch": b,
                      "steps": steps, "seconds": elapsed,
                      "samples_per_s": steps * b * n / elapsed,
                      "peak_alloc_bytes": torch.cuda.max_memory_allocated(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
