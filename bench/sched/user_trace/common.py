"""What every training script of the user trace shares: its common options,
data that lives on the device (Fashion-MNIST images, token ids of the torch
package's own sources), optimisers, and the clock that times a fixed number
of steps, tells colo how far training is and prints the final JSON line.

Data sits on the GPU and batches are drawn there, so that sixteen jobs on
one host are not bound by its CPU: the trace measures GPU sharing, not
input pipelines.
"""
import argparse
import contextlib
import gzip
import json
import os
import re
import sys
import time
import zlib

import numpy as np
import torch


def process_start_unix_s():
    """When this process started (the kernel's record: the interpreter's
    start-up counts), or now when /proc cannot tell."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, IndexError):
        return time.time()


PROCESS_START_S = process_start_unix_s()
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
CACHE_DIR = os.environ.get("USER_TRACE_CACHE", "/tmp/colo-user-trace-cache")
# The scripts never download: a Hugging Face library that looks for a hub
# on an offline machine waits for time-outs first.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parser(description, steps=200, batch=64, opt="adamw", lr=None):
    """An argparse parser with the options every job script takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=steps, help="optimiser steps to train (a fixed amount of work)")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--opt", choices=["sgd", "adam", "adamw"], default=opt)
    p.add_argument("--lr", type=float, default=lr, help="default: the optimiser's usual rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast (weights stay float32)")
    p.add_argument("--device", default=None, help="cuda (default when there is one) or cpu")
    return p


def device_of(args):
    return torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))


def autocast(args, device):
    """bfloat16 autocast when --bf16, else nothing."""
    if not args.bf16:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def building_on(device):
    """Builds parameters straight on `device` where this torch can (2.0 and
    later): initialising a 355M-parameter model on the CPU first costs
    seconds of start-up."""
    return device if hasattr(torch.device, "__enter__") else contextlib.nullcontext()


def optimizer(name, params, lr=None):
    """SGD (momentum 0.9, weight decay 5e-4), Adam or AdamW (weight decay 0.01)."""
    params = [p for p in params if p.requires_grad]
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr or 0.05, momentum=0.9, weight_decay=5e-4)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr or 1e-3)
    return torch.optim.AdamW(params, lr=lr or 3e-4, weight_decay=0.01)


def fashion_on(device, directory=None):
    """Fashion-MNIST's training split on `device`: (images uint8 [60000, 28,
    28], labels int64). Random images, said on stderr, when the files are
    missing."""
    directory = directory or os.environ.get("FASHION_MNIST", FASHION_DIR)
    try:
        with gzip.open(os.path.join(directory, "train-images-idx3-ubyte.gz")) as f:
            images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(os.path.join(directory, "train-labels-idx1-ubyte.gz")) as f:
            labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
    except OSError as e:
        print(f"fashion-mnist not readable in {directory} ({e}): training on random images", file=sys.stderr)
        g = torch.Generator().manual_seed(0)
        return (torch.randint(0, 256, (60000, 28, 28), dtype=torch.uint8, generator=g).to(device),
                torch.randint(0, 10, (60000,), generator=g).to(device))
    return torch.from_numpy(images.copy()).to(device), torch.from_numpy(labels).to(device)


def image_batch(images, labels, batch, size):
    """A random batch drawn on the device: 3 x size x size, normalised."""
    idx = torch.randint(0, images.shape[0], (batch,), device=images.device)
    x = images[idx].unsqueeze(1).float().div_(255).sub_(0.286).div_(0.353)
    if size != x.shape[-1]:
        x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.expand(-1, 3, -1, -1), labels[idx]


_WORD = re.compile(rb"\w+|[^\w\s]")


def torch_source_tokens(vocab, classes=8, limit_bytes=8 << 20):
    """The torch package's .py files as token ids below `vocab` (int64 [T]),
    with each token's class (int64 [T], 0..classes-1): the subpackage its
    file is in, for sequence classification. Words and punctuation are
    hashed into the vocabulary: no tokenizer files to download, and a
    word-level, long-tailed distribution of ids as a real tokenizer gives.
    Cached under $USER_TRACE_CACHE, so jobs after the first start sooner."""
    path = os.path.join(CACHE_DIR, f"torch-src-{torch.__version__}-{vocab}-{classes}-{limit_bytes}.npz")
    try:
        with np.load(path) as cached:
            return torch.from_numpy(cached["ids"]), torch.from_numpy(cached["classes"])
    except (OSError, KeyError, ValueError):
        pass
    root = os.path.dirname(torch.__file__)
    ids, labels, total = [], [], 0
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        subpackage = os.path.relpath(directory, root).split(os.sep)[0]
        label = zlib.crc32(subpackage.encode()) % classes
        for name in sorted(files):
            if not name.endswith(".py") or total >= limit_bytes:
                continue
            with open(os.path.join(directory, name), "rb") as f:
                text = f.read()
            total += len(text)
            words = np.fromiter((zlib.crc32(w) for w in _WORD.findall(text)), dtype=np.int64)
            ids.append(words % (vocab - 1) + 1)  # 0 stays free, as a padding id is
            labels.append(np.full(len(words), label, dtype=np.int64))
    ids, labels = np.concatenate(ids), np.concatenate(labels)
    os.makedirs(CACHE_DIR, exist_ok=True)
    partial = f"{path}.{os.getpid()}.npz"
    np.savez(partial, ids=ids, classes=labels)
    os.replace(partial, path)  # atomic: jobs starting together never read half a file
    return torch.from_numpy(ids), torch.from_numpy(labels)


def token_windows(ids, batch, seq):
    """`batch` random windows of `seq` tokens (int64 [batch, seq]) and where
    each starts."""
    start = torch.randint(0, ids.numel() - seq, (batch, 1), device=ids.device)
    return ids[start + torch.arange(seq, device=ids.device)], start.squeeze(1)


def _progress_reporter():
    """colo's report_progress, or None outside colo or when colo's Python
    package is not importable (said on stderr only under colo)."""
    if not os.environ.get("COLO_PROGRESS_FILE"):
        return None
    try:
        from colo.progress import report_progress
    except ImportError as e:
        print(f"colo.progress not importable ({e}): no progress reports", file=sys.stderr)
        return None
    return report_progress


class TrainingClock:
    """Times `steps` optimiser steps of `batch` samples: start() before the
    first, step_done(i) after step i (0-based), finish() after the last,
    which prints the final JSON line. Waits for the device only at the end
    of the warm-up (the first fifth of the steps) and at the finish, so the
    steady rate excludes cuDNN's and the allocator's first steps."""

    def __init__(self, steps, batch, device):
        self.steps, self.batch, self.device = steps, batch, device
        self.warm_steps = max(1, steps // 5) if steps > 1 else 0
        self.report = _progress_reporter()
        self.first_s = self.warm_s = None

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def start(self):
        self.first_s = time.time()

    def step_done(self, step):
        if self.report is not None:
            self.report((step + 1) * self.batch)  # rate-limited by colo: at most one write a second
        if step + 1 == self.warm_steps:
            self._sync()
            self.warm_s = time.time()

    def finish(self, **extra):
        """Prints {"steps", "samples", "train_s", "startup_s",
        "steady_steps_per_s", "peak_mem_bytes", ...} on one line."""
        self._sync()
        end_s = time.time()
        if self.first_s is None:
            self.first_s = end_s
        steady = None
        if self.warm_s is not None and end_s > self.warm_s and self.steps > self.warm_steps:
            steady = (self.steps - self.warm_steps) / (end_s - self.warm_s)
        cuda = self.device.type == "cuda"
        line = {"steps": self.steps, "samples": self.steps * self.batch, "train_s": round(end_s - self.first_s, 3),
                "startup_s": round(self.first_s - PROCESS_START_S, 3),
                "steady_steps_per_s": round(steady, 3) if steady else None,
                "peak_mem_bytes": torch.cuda.max_memory_allocated(self.device) if cuda else None,
                "peak_reserved_bytes": torch.cuda.max_memory_reserved(self.device) if cuda else None}
        line.update(extra)
        print(json.dumps(line), flush=True)
        return line


def train(model, opt, next_batch, loss_of, args, device, batch, **extra):
    """The plain loop: `args.steps` steps of next_batch() -> (inputs,
    targets), loss_of(model, inputs, targets) under autocast, backward,
    step. Prints the final JSON line (with `extra`) and returns it."""
    clock = TrainingClock(args.steps, batch, device)
    clock.start()
    loss = None
    for step in range(args.steps):
        inputs, targets = next_batch()
        with autocast(args, device):
            loss = loss_of(model, inputs, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        clock.step_done(step)
    return clock.finish(loss=round(loss.item(), 4) if loss is not None else None,
                        trainable_params=sum(p.numel() for p in model.parameters() if p.requires_grad), **extra)
