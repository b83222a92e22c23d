#!/usr/bin/env python3
"""What bounds a fused LeNet step on the GPU: times forward + backward of the
second convolution (N models, 6 -> 16 channels, 5x5, on 12x12) written as
cuDNN's grouped convolution (NCHW and channels-last) and as im2col + one
batched matmul, then the whole hand-fused step (pytorch_fused.FusedLeNet,
SGD foreach) eager and replayed as one CUDA graph with each form. Prints one
JSON line per measurement.

    conv_forms.py [--models 32 64] [--batch 128]"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import pytorch_fused as pf  # noqa: E402


def conv_im2col(x, weight, bias, n, k):
    """x [B, N*Cin, H, W], weight [N*Cout, Cin, k, k] -> [B, N*Cout, H-k+1, W-k+1]."""
    b, c, h, w = x.shape
    cin, cout = c // n, weight.shape[0] // n
    ho, wo = h - k + 1, w - k + 1
    cols = F.unfold(x, k)  # [B, N*Cin*k*k, L]
    cols = cols.view(b, n, cin * k * k, ho * wo).permute(1, 0, 3, 2).reshape(n, b * ho * wo, cin * k * k)
    wmat = weight.view(n, cout, cin * k * k).transpose(1, 2)  # [N, Cin*k*k, Cout]
    out = torch.baddbmm(bias.view(n, 1, cout), cols, wmat)  # [N, B*L, Cout]
    return out.view(n, b, ho, wo, cout).permute(1, 0, 4, 2, 3).reshape(b, n * cout, ho, wo)


def timed(fn, steps=50):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps


def conv_times(n, b):
    x0 = torch.randn(b, n * 6, 12, 12, device="cuda")
    w = torch.randn(n * 16, 6, 5, 5, device="cuda", requires_grad=True)
    bias = torch.zeros(n * 16, device="cuda", requires_grad=True)
    forms = {
        "grouped": lambda x: F.conv2d(x, w, bias, groups=n),
        "grouped_cl": lambda x: F.conv2d(x, w.to(memory_format=torch.channels_last), bias, groups=n),
        "im2col_bmm": lambda x: conv_im2col(x, w, bias, n, 5),
    }
    ref = forms["grouped"](x0)
    for name, form in forms.items():
        x = x0.to(memory_format=torch.channels_last) if name.endswith("_cl") else x0.clone()
        x.requires_grad_(True)
        err = (form(x) - ref).abs().max().item()

        def step():
            form(x).sum().backward()
        print(json.dumps({"what": "conv2_fwd_bwd", "form": name, "models": n, "batch": b,
                          "ms": timed(step), "max_abs_diff": err}), flush=True)


def step_times(n, b):
    for form in ("grouped", "im2col_bmm"):
        model = pf.FusedLeNet(n).cuda()
        if form == "im2col_bmm":
            conv = model.conv2
            conv.forward = lambda x, c=conv: conv_im2col(x, c.weight, c.bias, n, 5)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
        x = torch.randn(b, 1, 28, 28, device="cuda")
        y = torch.randint(0, 10, (b,), device="cuda")

        def step():
            pf.train_step(model, opt, x, y, n, set_to_none=False)
        eager = timed(step)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        graphed = timed(graph.replay)
        for mode, ms in (("eager", eager), ("graph", graphed)):
            print(json.dumps({"what": "lenet_step", "form": form, "mode": mode, "models": n, "batch": b, "ms": ms,
                              "samples_per_s": n * b / ms * 1e3}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", type=int, nargs="+", default=[32, 64])
    p.add_argument("--batch", type=int, default=128)
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    for n in args.models:
        conv_times(n, args.batch)
        step_times(n, args.batch)


if __name__ == "__main__":
    main()
