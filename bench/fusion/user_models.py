#!/usr/bin/env python3
"""colo.fuse on users' own models against what a user has without colo, in
one run on one GPU (issue 18's targets):

  LeNet written by a user, N = 32, batch 128 per model, fp32:
    colo.fuse (CUDA graph) | torch.func vmap | hand-fused grouped convolutions
    (bench/fusion/pytorch_fused.py), eager and in one CUDA graph
  torchvision ResNet-18 on 32x32, N = 8, batch 128, fp32 and bf16:
    colo.fuse | N processes under MPS | torch.func vmap

    user_models.py all --out DIR        # every measurement, rows.jsonl + summary.json
    user_models.py one --case lenet --mode vmap --models 32 ...   # one row (JSON line)

Inputs are random tensors resident on the GPU, the same for every mode;
throughput is aggregate training samples/s (models x batch x steps / s)
over a timed window after warm-up, synchronised at the end."""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from measure import mps_rows, timed, wait_until  # noqa: E402
from measure import invoke as invoke_script  # noqa: E402


class UserLeNet(nn.Module):
    """LeNet-5 as a user writes it (the model colo.fuse is given)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def build(case):
    if case == "lenet":
        return UserLeNet()
    import torchvision
    return torchvision.models.resnet18(num_classes=10)


def input_shape(case):
    return (1, 28, 28) if case == "lenet" else (3, 32, 32)


def batches(case, batch, device, count=16):
    x = torch.randn(count, batch, *input_shape(case), device=device)
    y = torch.randint(0, 10, (count, batch), device=device)
    return x, y


def run_colo(case, n, batch, bf16, graph, channels_last=False):
    import colo.fuse as cf
    fused = cf.fuse(lambda: build(case), n, channels_last=channels_last).cuda()
    opt = cf.optimizer(fused, "sgd", lr=[0.01 * (1 + i % 4) for i in range(n)], momentum=0.9)
    trainer = cf.Trainer(fused, opt, cuda_graph=graph, bf16=bf16)
    x, y = batches(case, batch, "cuda")
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % x.shape[0]
        trainer.step(x[i], y[i])
    return step, {"graphed": trainer.graph is not None, "graph_error": trainer.graph_error[:200]}, trainer


def run_vmap(case, n, batch, bf16):
    from torch.func import functional_call, grad_and_value, stack_module_state, vmap
    models = [build(case).cuda() for _ in range(n)]
    if case != "lenet":
        from torch.func import replace_all_batch_norm_modules_
        for m in models:
            replace_all_batch_norm_modules_(m)  # vmap cannot update running statistics
    params, buffers = stack_module_state(models)
    base = build(case).to("meta")
    if case != "lenet":
        from torch.func import replace_all_batch_norm_modules_
        replace_all_batch_norm_modules_(base)

    def loss_of(p, b, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            out = functional_call(base, (p, b), (x,))
        return F.cross_entropy(out.float(), y)
    per_model = vmap(grad_and_value(loss_of), in_dims=(0, 0, None, None))
    leaves = list(params.values())
    opt = torch.optim.SGD(leaves, lr=0.01, momentum=0.9, foreach=True)
    x, y = batches(case, batch, "cuda")
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % x.shape[0]
        grads, _ = per_model(params, buffers, x[i], y[i])
        for name, p in params.items():
            p.grad = grads[name]
        opt.step()
    return step, {}


def run_handfused(n, batch, graph):
    sys.path.insert(0, HERE)
    from pytorch_fused import FusedLeNet, train_step
    model = FusedLeNet(n).cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
    x, y = batches("lenet", batch, "cuda")
    state = {"i": 0}
    if not graph:
        def step():
            i = state["i"] = (state["i"] + 1) % x.shape[0]
            train_step(model, opt, x[i], y[i], n)
        return step, {}
    static_x, static_y = x[0].clone(), y[0].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            train_step(model, opt, static_x, static_y, n, set_to_none=False)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        train_step(model, opt, static_x, static_y, n, set_to_none=False)

    def step():
        i = state["i"] = (state["i"] + 1) % x.shape[0]
        static_x.copy_(x[i])
        static_y.copy_(y[i])
        g.replay()
    return step, {}


def run_single(case, batch, bf16):
    """One model trained alone (one of the N processes under MPS)."""
    model = build(case).cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
    x, y = batches(case, batch, "cuda")
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % x.shape[0]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            out = model(x[i])
        loss = F.cross_entropy(out.float(), y[i])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step, {}


def one(args):
    torch.backends.cudnn.benchmark = True
    bf16 = args.precision == "bf16"
    extra_fn = None
    if args.mode in ("colo", "colo_eager", "colo_nhwc"):
        step, extra, trainer = run_colo(args.case, args.models, args.batch, bf16, args.mode != "colo_eager",
                                        args.mode == "colo_nhwc")
        extra_fn = (lambda: {"graphed": trainer.graph is not None, "graph_error": trainer.graph_error[:300]})
    elif args.mode == "vmap":
        step, extra = run_vmap(args.case, args.models, args.batch, bf16)
    elif args.mode in ("handfused", "handfused_graph"):
        step, extra = run_handfused(args.models, args.batch, args.mode == "handfused_graph")
    else:
        step, extra = run_single(args.case, args.batch, bf16)
    if args.start_at:  # processes under MPS start their window together
        wait_until(args.start_at, step, args.warmup)
        steps, seconds = timed(step, args.seconds, 0)
    else:
        steps, seconds = timed(step, args.seconds, args.warmup)
    models = 1 if args.mode == "single" else args.models
    row = {"case": args.case, "mode": args.mode, "models": models, "batch": args.batch,
           "precision": args.precision, "steps": steps, "seconds": seconds,
           "samples_per_s": steps * args.batch * models / seconds,
           "peak_alloc_bytes": torch.cuda.max_memory_allocated(), "torch": torch.__version__}
    row.update(extra_fn() if extra_fn else extra)
    print(json.dumps(row), flush=True)


def invoke(argv, env=None, timeout=300):
    """One measurement in its own process; its JSON row, or an error row."""
    return invoke_script(os.path.abspath(__file__), argv, env, timeout)


def mps_processes(case, n, batch, precision, seconds):
    """N single-model processes at once under a private MPS daemon."""
    argv = ["--case", case, "--mode", "single", "--batch", str(batch), "--precision", precision,
            "--seconds", str(seconds)]
    rows = mps_rows(os.path.abspath(__file__), argv, n, start_delay=25, timeout=300)
    ok = [r for r in rows if "samples_per_s" in r]
    return {"case": case, "mode": "mps", "models": n, "batch": batch, "precision": precision,
            "samples_per_s": sum(r["samples_per_s"] for r in ok) if len(ok) == n else None,
            "processes_ok": len(ok), "errors": [r["error"] for r in rows if "error" in r][:2]}


def run_all(args):
    os.makedirs(args.out, exist_ok=True)
    rows = []
    common = ["--seconds", str(args.seconds)]

    def add(row):
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(os.path.join(args.out, "rows.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
    for mode in ("colo", "colo_eager", "vmap", "handfused", "handfused_graph"):
        add(invoke(["--case", "lenet", "--mode", mode, "--models", "32", "--batch", "128"] + common))
    for precision in ("fp32", "bf16"):
        for mode in ("colo", "colo_nhwc", "vmap"):
            add(invoke(["--case", "resnet18", "--mode", mode, "--models", "8", "--batch", "128",
                        "--precision", precision] + common))
        add(mps_processes("resnet18", 8, 128, precision, args.seconds))
    rate = {}
    for r in rows:
        if r.get("samples_per_s"):
            rate[(r["case"], r["mode"], r.get("precision", "fp32"))] = r["samples_per_s"]

    def ratio(a, b):
        return rate[a] / rate[b] if a in rate and b in rate else None
    summary = {
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "lenet_n32_over_vmap": ratio(("lenet", "colo", "fp32"), ("lenet", "vmap", "fp32")),
        "lenet_n32_over_graphed_handfused": ratio(("lenet", "colo", "fp32"), ("lenet", "handfused_graph", "fp32")),
        "samples_per_s": {f"{c}/{m}/{p}": v for (c, m, p), v in sorted(rate.items())},
        "command": "bench/gpu/run.sh userfuse (bench/fusion/user_models.py all --out DIR --seconds "
                   f"{args.seconds})",
    }
    for precision in ("fp32", "bf16"):
        alternatives = [rate.get(("resnet18", m, precision)) for m in ("mps", "vmap")]
        alternatives = [a for a in alternatives if a]
        colo = max([rate.get(("resnet18", m, precision)) or 0 for m in ("colo", "colo_nhwc")])
        summary[f"resnet18_n8_over_best_alternative_{precision}"] = \
            colo / max(alternatives) if colo and alternatives else None
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"{'case/mode/precision':38} {'samples/s':>12}")
    for key, value in summary["samples_per_s"].items():
        print(f"{key:38} {value:12.0f}")
    for key in ("lenet_n32_over_vmap", "lenet_n32_over_graphed_handfused",
                "resnet18_n8_over_best_alternative_fp32", "resnet18_n8_over_best_alternative_bf16"):
        print(f"{key:38} {summary[key]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    o = sub.add_parser("one")
    o.add_argument("--case", choices=["lenet", "resnet18"], required=True)
    o.add_argument("--mode", choices=["colo", "colo_eager", "colo_nhwc", "vmap", "handfused", "handfused_graph", "single"],
                   required=True)
    o.add_argument("--models", type=int, default=1)
    o.add_argument("--batch", type=int, default=128)
    o.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    o.add_argument("--seconds", type=float, default=3.0)
    o.add_argument("--warmup", type=int, default=20)
    o.add_argument("--start-at", type=float, default=0.0)
    a = sub.add_parser("all")
    a.add_argument("--out", required=True)
    a.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    one(args) if args.command == "one" else run_all(args)


if __name__ == "__main__":
    main()
