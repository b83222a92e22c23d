"""One job of probe_rules_check.sh: CUDA up, then a start-up with no
progress reports (CPU only, or light GPU work), then a training loop of
large matrix products that reports progress through colo.progress."""
import argparse
import time

import torch

from colo.progress import report_progress


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cpu-start-s", type=float, default=0, help="seconds on the CPU after CUDA is up")
    p.add_argument("--warm-s", type=float, default=0, help="seconds of light GPU work, no progress reported")
    p.add_argument("--train-s", type=float, default=20)
    args = p.parse_args()
    small = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    time.sleep(args.cpu_start_s)
    end = time.time() + args.warm_s
    while time.time() < end:  # some SM time, its memory constant
        small @ small
        torch.cuda.synchronize()
        time.sleep(0.0005)
    big = torch.randn(8192, 8192, device="cuda")
    samples, end = 0, time.time() + args.train_s
    while time.time() < end:
        for _ in range(4):
            big @ big
        torch.cuda.synchronize()
        samples += 4
        report_progress(samples)


if __name__ == "__main__":
    main()
