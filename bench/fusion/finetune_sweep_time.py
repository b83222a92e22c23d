"""Time to the best configuration of examples/finetune_sweep.py (issue 52,
sweep_time_ratio): colo.sweep (configurations fused, the worse half stopped
after the first epoch) against what a user does without colo, the same
configurations trained one after another by a plain PyTorch loop in one
process (no start-up cost between runs), every one for all epochs, since
the best is known only once all have run. Both start from the same
pretrained checkpoint and data on the device; the pretraining is not timed.

    finetune_sweep_time.py --out FILE.json [--epochs 3] [--subset 0]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
import finetune_sweep as example  # noqa: E402
from colo.fuse.sweep import configurations  # noqa: E402


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def accuracy(model, test):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for x, y in test:
            right += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    model.train()
    return right / total


def one_after_another(pretrained, train, test, epochs, device):
    """Each configuration of the example's axes alone, as a user's loop trains it."""
    results = []
    for index, values in enumerate(configurations(example.AXES, "grid", 0, 0)):
        torch.manual_seed(index)
        model = example.fine_tune(pretrained, values["rank"], values["head"]).to(device).train()
        trainable = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(trainable, lr=values["lr"], weight_decay=example.OPTIMIZER["weight_decay"])
        for _ in range(epochs):
            for x, y in train:
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x), y).backward()
                opt.step()
        results.append({"values": values, "test_accuracy": accuracy(model, test)})
    return sorted(results, key=lambda r: -r["test_accuracy"])


def timed(fn, device):
    synchronize(device)
    start = time.perf_counter()
    result = fn()
    synchronize(device)
    return result, time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--subset", type=int, default=0, help="at most this many images per split (0: all)")
    p.add_argument("--checkpoint", default="/tmp/colo-finetune-pretrained.pt")
    args = p.parse_args()
    root = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    pretrained = example.pretrained_model(args.checkpoint, root, device, 300, args.subset).to(device)
    train, test = example.data(root, device, args.subset)
    # Warm-up of both paths (CUDA context, cuDNN's choices, colo.fuse's first trace) on 2 steps each.
    example.run_sweep(pretrained, train, test, 1, device=device, max_steps=2, on_epoch=lambda record: None)
    one_after_another(pretrained, [next(iter(train))], test, 1, device)

    ranked, sweep_s = timed(lambda: example.run_sweep(pretrained, train, test, args.epochs, device=device,
                                                      on_epoch=lambda record: None), device)
    alone, sequential_s = timed(lambda: one_after_another(pretrained, train, test, args.epochs, device), device)
    result = {
        "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "configurations": len(alone),
        "epochs": args.epochs,
        "train_images": len(train) * train.batch,
        "sweep_s": sweep_s,
        "sequential_s": sequential_s,
        "sweep_time_ratio": sequential_s / sweep_s,
        "sweep_best": {"values": ranked[0]["values"], "test_accuracy": ranked[0]["test_accuracy"]},
        "sweep_stopped": sum(r["stopped"] for r in ranked),
        "sequential_best": alone[0],
        "sequential_accuracy_of_sweep_best": next(r["test_accuracy"] for r in alone
                                                  if r["values"] == ranked[0]["values"]),
        "command": "bench/gpu/run.sh finetune (bench/fusion/finetune_sweep_time.py --out FILE "
                   f"--epochs {args.epochs} --subset {args.subset})",
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"sweep {sweep_s:.1f} s (best {ranked[0]['values']} {ranked[0]['test_accuracy']:.4f}), "
          f"one after another {sequential_s:.1f} s (best {alone[0]['values']} {alone[0]['test_accuracy']:.4f}): "
          f"sweep_time_ratio {result['sweep_time_ratio']:.2f}")


if __name__ == "__main__":
    main()
