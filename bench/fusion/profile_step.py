#!/usr/bin/env python3
"""Where the time of one fused training step goes: profiles 20 steps of the
hand-fused PyTorch array (pytorch_fused.py) and prints the CUDA kernels that
take the most time. colo's fused step runs the same ATen/cuDNN kernels, so
this shows what bounds both.

    profile_step.py --model lenet --models 32 [--channels-last]"""
import argparse
import sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
import pytorch_fused as pf  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="lenet")
    p.add_argument("--models", type=int, default=32)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--channels-last", action="store_true")
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    n, b = args.models, args.batch
    shape = (b, 3, 32, 32) if args.model == "resnet18" else (b, 1, 28, 28)
    model = {"lenet": pf.FusedLeNet, "mlp": pf.FusedMlp, "resnet18": pf.FusedResNet18}[args.model](n).cuda()
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
    x = torch.randn(shape, device="cuda").to(memory_format=fmt)
    y = torch.randint(0, 10, (b,), device="cuda")

    def step():
        pf.train_step(model, opt, x, y, n)

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=70))


if __name__ == "__main__":
    main()
