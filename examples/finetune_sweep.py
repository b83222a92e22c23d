"""A fine-tuning sweep with colo: one pretrained CNN, fine-tuned many ways at
once. The pretrained model is loaded once; every configuration freezes its
convolutions, adds a LoRA adapter of its own rank to the first dense layer
and trains a new head at its own learning rate. colo.sweep trains all
configurations of one head kind as one fused array (the frozen convolutions
held and run once, the adapters of different ranks padded into one batched
GEMM) and stops the worse half after the first epoch.

    python3 examples/finetune_sweep.py [--epochs 3] [--out DIR]

The "pretraining" is a short run on Fashion-MNIST's classes 0-4, saved to
--checkpoint and reused; fine-tuning learns classes 5-9. $FASHION_MNIST names
the data directory (default Debian's /usr/share/datasets/fashion-mnist)."""
import argparse
import copy
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import colo
from colo.fuse.adapters import LoRALinear

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare"))
from user_cnn import Batches, UserCnn, read_idx  # noqa: E402


def split(root, part, classes, subset):
    """Images and labels (renumbered from 0) of `classes` in one split."""
    prefix = "train" if part == "train" else "t10k"
    images = read_idx(f"{root}/{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(f"{root}/{prefix}-labels-idx1-ubyte.gz").long()
    keep = (labels >= classes[0]) & (labels < classes[1])
    images, labels = images[keep][:subset or None], labels[keep][:subset or None] - classes[0]
    return images, labels


def pretrained_model(path, root, device, steps, subset):
    """The pretrained CNN: loaded from `path`, else trained briefly on classes
    0-4 and saved there."""
    model = UserCnn(width=16)
    model.head[-1] = nn.Linear(128, 5)
    if os.path.exists(path):
        model.load_state_dict(torch.load(path))
        return model
    print(f"pretraining on classes 0-4 ({steps} steps) -> {path}", file=sys.stderr)
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    batches = Batches(*split(root, "train", (0, 5), subset), 128, True, device)
    done = 0
    while done < steps:
        for x, y in batches:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            done += 1
            if done == steps:
                break
    model.cpu()
    torch.save(model.state_dict(), path)
    return model


def fine_tune(pretrained, rank, head):
    """One configuration: the pretrained model frozen, LoRA of `rank` on its
    first dense layer, a new head ("linear" or "mlp") for five classes."""
    model = copy.deepcopy(pretrained).requires_grad_(False)
    dense = model.head[1]
    a, b = nn.Linear(dense.in_features, rank, bias=False), nn.Linear(rank, dense.out_features, bias=False)
    nn.init.zeros_(b.weight)
    model.head[1] = LoRALinear(dense, a, b, nn.Dropout(0.0), 8.0 / rank, "default")
    model.head[-1] = nn.Linear(128, 5) if head == "linear" else nn.Sequential(nn.Linear(128, 64), nn.ReLU(),
                                                                                 nn.Linear(64, 5))
    return model


AXES = {"rank": [2, 4, 8], "lr": [3e-3, 1e-3, 3e-4], "head": ["linear", "mlp"]}
OPTIMIZER = {"optimizer": "adamw", "weight_decay": 0.01}


def data(root, device, subset):
    """Fine-tuning batches: classes 5-9 of Fashion-MNIST's train and test splits."""
    return (Batches(*split(root, "train", (5, 10), subset), 128, True, device),
            Batches(*split(root, "test", (5, 10), subset), 500, False, device))


def run_sweep(pretrained, train, test, epochs, out=None, device=None, max_steps=None, on_epoch=None):
    """Every configuration of AXES by colo.sweep, the worse half stopped after
    the first epoch when there is more than one; colo.sweep's ranking."""
    extra = {} if on_epoch is None else {"on_epoch": on_epoch}
    return colo.sweep(lambda rank, head: fine_tune(pretrained, rank, head), AXES, train, test,
                      epochs=epochs, optimizer=OPTIMIZER,
                      halving={"rungs": [1], "keep": 0.5} if epochs > 1 else None, out=out,
                      device=device, max_steps=max_steps, **extra)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--out", default=None, help="sweep.jsonl, results.json and each model's state")
    p.add_argument("--checkpoint", default="/tmp/colo-finetune-pretrained.pt")
    p.add_argument("--pretrain-steps", type=int, default=300)
    p.add_argument("--subset", type=int, default=0, help="at most this many images per split (0: all)")
    p.add_argument("--max-steps", type=int, default=None)
    args = p.parse_args()
    root = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    pretrained = pretrained_model(args.checkpoint, root, device, args.pretrain_steps, args.subset)
    train, test = data(root, device, args.subset)
    ranked = run_sweep(pretrained, train, test, args.epochs, args.out, device, args.max_steps)
    best = ranked[0]
    print(f"best: {best['values']} test accuracy {best['test_accuracy']:.4f} "
          f"({len(ranked)} configurations, {sum(r['stopped'] for r in ranked)} stopped early)")


if __name__ == "__main__":
    main()
