"""A plain PyTorch job for scheduler replays: holds HOLD_GIB of GPU memory and
multiplies SIZE x SIZE matrices for SECONDS. Exits 1 with PyTorch's own
out-of-memory message when the memory is not there. Under colo, with the
colo package importable, it reports its steps as training progress
(colo.report_progress)."""
import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=8)
parser.add_argument("--hold-gib", type=float, default=0)
parser.add_argument("--size", type=int, default=2048)
args = parser.parse_args()

held = torch.empty(int(args.hold_gib * 2**30), dtype=torch.uint8, device="cuda") if args.hold_gib else None
a = torch.randn(args.size, args.size, device="cuda")
try:
    from colo.progress import report_progress
except ImportError:
    report_progress = None
end = time.time() + args.seconds
steps = 0
while time.time() < end:
    a = torch.tanh(a @ a * (1.0 / args.size))
    steps += 1
    if steps % 16 == 0:
        torch.cuda.synchronize()
        if report_progress is not None:
            report_progress(samples=steps)
print(f"steps {steps}", flush=True)
