#!/usr/bin/env python3
"""What colo dist's checkpoints cost: the same all-reduce run without and
with `checkpoint_steps`, then resumed from its last checkpoint.

    bench/dist/checkpoint_cost.py --colo build/colo --out bench/results/dist/checkpoint/cpu_resnet18.json

Writes one JSON: each run's train_s and checkpoint_s (result.json), the
seconds per checkpoint, the size of each worker's checkpoint file, and
whether the resumed run ended at the planned step.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

SPEC = """seed = 1
device = "{device}"
output = "{output}"
epochs = 1
max_steps = {steps}
batch_size = {batch}
[model]
name = "resnet"
depth = {depth}
[data]
name = "fashion-mnist"
prefetch = 0
train_limit = {limit}
test_limit = 256
[optimizer]
name = "sgd"
lr = 0.05
momentum = 0.9
[cluster]
workers = {workers}
checkpoint_steps = {every}
"""


def run(colo, args, every, output, resume=False):
    os.makedirs(os.path.dirname(output), exist_ok=True)
    path = output + ".toml"
    with open(path, "w") as f:
        f.write(SPEC.format(device=args.device, output=output, steps=args.steps, batch=args.batch, depth=args.depth,
                            limit=args.steps * args.batch * args.workers, workers=args.workers, every=every))
    command = [colo, "dist", path] + (["--resume"] if resume else [])
    clock = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"checkpoint_cost: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    with open(os.path.join(output, "result.json")) as f:
        result = json.load(f)
    result["process_s"] = time.perf_counter() - clock
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--colo", default="build/colo")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--depth", type=int, default=18)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="colo-ckpt-")
    plain = run(args.colo, args, 0, os.path.join(work, "plain"))
    saved = run(args.colo, args, args.every, os.path.join(work, "saved"))
    directory = os.path.join(work, "saved", "checkpoint")
    sizes = {name: os.path.getsize(os.path.join(directory, name)) for name in sorted(os.listdir(directory))}
    resumed = run(args.colo, args, args.every, os.path.join(work, "saved"), resume=True)
    checkpoints = args.steps // args.every
    report = {
        "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
        "model": f"resnet{args.depth}", "parameters": saved["parameters"], "device": saved["device"],
        "workers": args.workers, "steps": args.steps, "checkpoint_steps": args.every, "checkpoints": checkpoints,
        "train_s_without": plain["train_s"], "train_s_with": saved["train_s"],
        "checkpoint_s": saved["checkpoint_s"], "s_per_checkpoint": saved["checkpoint_s"] / max(checkpoints, 1),
        "files_bytes": sizes,
        "resumed_steps": resumed["steps"], "resumed_ok": resumed["steps"] == args.steps and resumed["resumed"],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"{report['model']}, {args.workers} workers on {report['device']}: {checkpoints} checkpoints took "
          f"{report['checkpoint_s']:.2f} s ({report['s_per_checkpoint']:.3f} s each); train {plain['train_s']:.2f} s "
          f"without, {saved['train_s']:.2f} s with; files {sizes}")


if __name__ == "__main__":
    main()
