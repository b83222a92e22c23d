#!/usr/bin/env python3
"""Where a fused torchvision ResNet-18 (N = 8, batch 128 per model, 32x32,
fp32) spends its step, and how other ways of running N models in one
process compare (issue 18's fp32 target). One process per row:

    resnet_strategies.py run --out DIR

rows:
  fused_nhwc     colo.fuse, grouped convolutions over stacked channels (NHWC), one CUDA graph
  replicas_one   N ordinary models, one after another on one stream, one CUDA graph
  replicas_many  N ordinary models, each on its own stream, all in one CUDA graph
  mps            N single-model processes under MPS (the alternative to beat)
plus the fused step's ten most expensive kernels (torch.profiler)."""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import user_models  # noqa: E402


def graphed_replicas(n, batch, streams):
    """N torchvision ResNet-18s, each with its own SGD, captured as one graph;
    on N side streams when `streams`, else one after another."""
    models = [user_models.build("resnet18").cuda().train() for _ in range(n)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.01 * (1 + i % 4), momentum=0.9, foreach=True)
            for i, m in enumerate(models)]
    x, y = user_models.batches("resnet18", batch, "cuda")
    static_x, static_y = x[0].clone(), y[0].clone()
    side = [torch.cuda.Stream() for _ in range(n)] if streams else None

    def body():
        main = torch.cuda.current_stream()  # the capturing stream, during capture
        for m, opt, s in zip(models, opts, side or [main] * n):
            s.wait_stream(main)
            with torch.cuda.stream(s):
                loss = F.cross_entropy(m(static_x), static_y)
                opt.zero_grad(set_to_none=False)
                loss.backward()
                opt.step()
        for s in side or []:
            main.wait_stream(s)
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % x.shape[0]
        static_x.copy_(x[i])
        static_y.copy_(y[i])
        graph.replay()
    return step


def top_kernels(step, count=10):
    from torch.profiler import ProfilerActivity, profile
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if t > 0:
            rows.append({"kernel": e.key[:120], "us_per_step": t / 10, "calls_per_step": e.count / 10})
    rows.sort(key=lambda r: -r["us_per_step"])
    return rows[:count]


def one(mode, n, batch, seconds):
    torch.backends.cudnn.benchmark = True
    if mode == "fused_nhwc":
        step, _, _ = user_models.run_colo("resnet18", n, batch, False, True, channels_last=True)
    else:
        step = graphed_replicas(n, batch, mode == "replicas_many")
    steps, secs = user_models.timed(step, seconds, 5)
    row = {"mode": mode, "models": n, "batch": batch, "samples_per_s": steps * n * batch / secs,
           "step_ms": 1000 * secs / steps}
    if mode == "fused_nhwc":
        row["top_kernels"] = top_kernels(step)
    print(json.dumps(row), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    o = sub.add_parser("one")
    o.add_argument("--mode", required=True)
    o.add_argument("--models", type=int, default=8)
    o.add_argument("--batch", type=int, default=128)
    o.add_argument("--seconds", type=float, default=3.0)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    if args.command == "one":
        one(args.mode, args.models, args.batch, args.seconds)
        return
    os.makedirs(args.out, exist_ok=True)
    for mode in ("fused_nhwc", "replicas_one", "replicas_many"):
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "one", "--mode", mode,
                               "--seconds", str(args.seconds)], capture_output=True, text=True, timeout=400)
        lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
        row = json.loads(lines[-1]) if lines else {"mode": mode, "error": done.stderr[-1500:]}
        with open(os.path.join(args.out, "strategies.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps({k: v for k, v in row.items() if k != "top_kernels"}), flush=True)
        for k in row.get("top_kernels", []):
            print(f"  {k['us_per_step']:9.1f} us x{k['calls_per_step']:5.1f}  {k['kernel']}")
    row = user_models.mps_processes("resnet18", 8, 128, "fp32", args.seconds)
    with open(os.path.join(args.out, "strategies.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
