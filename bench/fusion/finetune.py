#!/usr/bin/env python3
"""Fused fine-tuning (issue 52) against what a user has without colo, each
set-up in one run on one GPU: N fine-tunes of one pretrained model
(bench/fusion/finetune_models.py) as

  fused       colo.fuse (frozen parts held once and run once, adapters as
              batched low-rank GEMMs), colo's fused AdamW, bf16 autocast
  single      one fine-tune alone: the rate of N runs one after another
  mps         N single fine-tunes at once, one process each, under MPS
  vmap        torch.func over the N models' stacked parameters (frozen_heads)
  by_hand     the backbone once under no_grad, then N heads as one batched
              GEMM: what an expert writes by hand (frozen_heads)

    finetune.py all --out DIR [--setups frozen_heads,frozen_blocks,lora,lora_mixed] [--seconds S]
    finetune.py check            # fused outputs against each model's, peft round trip
    finetune.py one --setup S --mode M --models N ...   # one row (JSON line)

Throughput is aggregate training samples/s (models x batch x steps / s,
a sample being an image or a sequence) over a timed window after warm-up;
memory is the GPU's used memory (nvidia-smi) at its peak during the run,
less what was used before it. Inputs are random and resident on the GPU."""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from finetune_models import GPT, adapters_kind, fine_tune, lm_loss, pretrained  # noqa: E402
from measure import GpuMemoryPeak, invoke, mps_rows, timed, wait_until  # noqa: E402

SETUPS = {  # models, batch per model, ranks cycled over the models (LoRA)
    "frozen_heads": {"models": 16, "batch": 64, "ranks": [8]},
    "frozen_blocks": {"models": 8, "batch": 8, "ranks": [8]},
    "lora": {"models": 8, "batch": 8, "ranks": [8]},
    "lora_mixed": {"models": 8, "batch": 8, "ranks": [4, 8, 16]},
}
MODES = {"frozen_heads": ("fused", "single", "mps", "vmap", "by_hand"),
         "frozen_blocks": ("fused", "single", "mps"), "lora": ("fused", "single", "mps"),
         "lora_mixed": ("fused", "single", "mps")}


def kind(setup):
    return "frozen_heads" if setup == "frozen_heads" else ("frozen_blocks" if setup == "frozen_blocks" else "lora")


def data(setup, batch, count=8):
    if setup == "frozen_heads":
        return (torch.randn(count, batch, 3, 224, 224, device="cuda"),
                torch.randint(0, 100, (count, batch), device="cuda"))
    tokens = torch.randint(0, 50257, (count, batch, 257), device="cuda")
    return tokens[:, :, :-1].contiguous(), tokens[:, :, 1:].contiguous()


def loss_fn(setup):
    return F.cross_entropy if setup == "frozen_heads" else lm_loss


def models_of(setup, n, ranks, first=0):
    base = pretrained(kind(setup))
    return [fine_tune(base, kind(setup), first + i, rank=ranks[(first + i) % len(ranks)]) for i in range(n)]


def cycle(x, y, run):
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % x.shape[0]
        run(x[i], y[i])
    return step


def run_fused(setup, n, batch, ranks, graph=True, release_warmup_cache=True):
    import colo.fuse as cf
    fused = cf.fuse(models_of(setup, n, ranks)).cuda()
    opt = cf.optimizer(fused, "adamw", lr=[1e-4 * (1 + i % 4) for i in range(n)], weight_decay=0.01)
    trainer = cf.Trainer(fused, opt, loss_fn(setup), cuda_graph=graph, bf16=True,
                         release_warmup_cache=release_warmup_cache)
    x, y = data(setup, batch)
    return cycle(x, y, trainer.step), (lambda: {"graphed": trainer.graph is not None,
                                                "graph_error": trainer.graph_error[:300]})


def run_single(setup, batch, ranks, index):
    model = models_of(setup, 1, ranks, first=index)[0].cuda()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, weight_decay=0.01,
                            fused=True)
    loss = loss_fn(setup)
    x, y = data(setup, batch)

    def run(inputs, targets):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(inputs)
        value = loss(out.float(), targets)
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
    return cycle(x, y, run), dict


def run_vmap(n, batch):
    """torch.func over the N models' stacked parameters, gradients of the heads only."""
    from torch.func import functional_call, grad, stack_module_state, vmap
    models = [m.cuda() for m in models_of("frozen_heads", n, [8])]
    params, buffers = stack_module_state(models)
    trainable = {k: v for k, v in params.items() if k.startswith("fc.")}
    frozen = {k: v.detach() for k, v in params.items() if not k.startswith("fc.")}
    base = models[0]

    def loss_of(head, rest, b, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = functional_call(base, ({**rest, **head}, b), (x,))
        return F.cross_entropy(out.float(), y)
    grads_of = vmap(grad(loss_of), in_dims=(0, 0, 0, None, None))
    opt = torch.optim.AdamW(list(trainable.values()), lr=1e-4, weight_decay=0.01, foreach=True)
    x, y = data("frozen_heads", batch)

    def run(inputs, targets):
        grads = grads_of(trainable, frozen, buffers, inputs, targets)
        for name, p in trainable.items():
            p.grad = grads[name]
        opt.step()
    return cycle(x, y, run), dict


def run_by_hand(n, batch):
    """The frozen backbone once under no_grad, then the N heads as one bmm."""
    models = models_of("frozen_heads", n, [8])
    weight = nn.Parameter(torch.stack([m.fc.weight.detach() for m in models]).cuda())
    bias = nn.Parameter(torch.stack([m.fc.bias.detach() for m in models]).cuda())
    backbone = models[0].cuda()
    backbone.fc = nn.Identity()
    opt = torch.optim.AdamW([weight, bias], lr=1e-4, weight_decay=0.01, fused=True)
    x, y = data("frozen_heads", batch)

    def run(inputs, targets):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            with torch.no_grad():
                features = backbone(inputs)
            out = torch.baddbmm(bias.unsqueeze(1), features.unsqueeze(0).expand(n, -1, -1), weight.transpose(1, 2))
        losses = F.cross_entropy(out.float().flatten(0, 1), targets.repeat(n), reduction="none").view(n, -1).mean(1)
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        opt.step()
    return cycle(x, y, run), dict


def one(args):
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    spec = SETUPS[args.setup]
    n = args.models or spec["models"]
    if args.mode in ("fused", "fused_keep_warmup_cache"):
        step, extra = run_fused(args.setup, n, spec["batch"], spec["ranks"],
                                release_warmup_cache=args.mode == "fused")
    elif args.mode == "vmap":
        step, extra = run_vmap(n, spec["batch"])
    elif args.mode == "by_hand":
        step, extra = run_by_hand(n, spec["batch"])
    else:
        step, extra = run_single(args.setup, spec["batch"], spec["ranks"], args.index)
        n = 1
    late = 0.0
    if args.start_at:
        wait_until(args.start_at, step, args.warmup)
        late = max(0.0, time.time() - args.start_at)
        steps, seconds = timed(step, args.seconds, 0)
    else:
        steps, seconds = timed(step, args.seconds, args.warmup)
    row = {"gpu": torch.cuda.get_device_name(0), "setup": args.setup, "mode": args.mode, "models": n, "batch": spec["batch"], "steps": steps,
           "seconds": seconds, "samples_per_s": steps * spec["batch"] * n / seconds, "started_late_s": late,
           "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
           "peak_reserved_bytes": torch.cuda.max_memory_reserved(), "torch": torch.__version__}
    if args.setup.startswith("lora"):
        row["adapters"] = adapters_kind()
    row.update(extra())
    print(json.dumps(row), flush=True)


def measure(setup, mode, seconds):
    """One mode of one set-up, with the GPU memory it took."""
    n = SETUPS[setup]["models"]
    argv = ["--setup", setup, "--seconds", str(seconds)]
    with GpuMemoryPeak() as memory:
        if mode == "mps":
            rows = mps_rows(os.path.abspath(__file__), argv + ["--mode", "single"], n, start_delay=30,
                            per_process=lambda i: ["--index", str(i)])
            ok = [r for r in rows if "samples_per_s" in r]
            row = {"gpu": ok[0]["gpu"] if ok else None, "setup": setup, "mode": "mps", "models": n,
                   "processes_ok": len(ok),
                   "samples_per_s": sum(r["samples_per_s"] for r in ok) if len(ok) == n else None,
                   "started_late_s_max": max((r["started_late_s"] for r in ok), default=None),
                   "errors": [r["error"] for r in rows if "error" in r][:2]}
        else:
            row = invoke(os.path.abspath(__file__), argv + ["--mode", mode])
    row["gpu_memory_mib"] = memory.peak_mib
    return row


def ratio(a, b):
    return a / b if a and b else None


TARGETS = {"frozen_heads_over_best": 6.0, "frozen_heads_mem_ratio": 0.25, "frozen_blocks_over_best": 2.5,
           "lora_over_best": 1.5, "lora_mem_ratio": 0.5, "lora_mixed_rank_over_best": 1.3, "sweep_time_ratio": 3.0}


def summarise(rows, command):
    by = {(r["setup"], r["mode"]): r for r in rows}
    summary = {"gpu": sorted({r["gpu"] for r in rows if r.get("gpu")}), "torch": sorted({r["torch"] for r in rows
               if r.get("torch")}), "rows": rows, "command": command, "targets": TARGETS}
    keys = {"frozen_heads": ("frozen_heads_over_best", "frozen_heads_mem_ratio"),
            "frozen_blocks": ("frozen_blocks_over_best", None), "lora": ("lora_over_best", "lora_mem_ratio"),
            "lora_mixed": ("lora_mixed_rank_over_best", None)}
    for setup, (speed_key, memory_key) in keys.items():
        fused = by.get((setup, "fused"), {})
        others = {m: by[(setup, m)].get("samples_per_s") for m in MODES[setup] if m not in ("fused", "by_hand")
                  and (setup, m) in by}
        best = max((v for v in others.values() if v), default=None)
        summary[speed_key] = ratio(fused.get("samples_per_s"), best)
        summary[f"{setup}_best_alternative"] = max(others, key=lambda m: others[m] or 0) if best else None
        if memory_key:
            summary[memory_key] = ratio(fused.get("gpu_memory_mib"), by.get((setup, "mps"), {}).get("gpu_memory_mib"))
        if (setup, "by_hand") in by:
            summary[f"{setup}_over_by_hand"] = ratio(fused.get("samples_per_s"), by[(setup, "by_hand")].get("samples_per_s"))
    return summary


def summarise_files(args):
    rows = [json.loads(line) for path in args.rows for line in open(path) if line.strip()]
    summary = summarise(rows, args.how)
    if args.sweep:  # bench/fusion/finetune_sweep_time.py's result
        with open(args.sweep) as f:
            sweep = json.load(f)
        summary["sweep_time_ratio"] = sweep["sweep_time_ratio"]
        summary["sweep"] = sweep
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=2)


def run_all(args):
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for setup in args.setups.split(","):
        for mode in (args.modes.split(",") if args.modes else MODES[setup]):
            row = measure(setup, mode, args.seconds)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in ("errors",)}), flush=True)
            with open(os.path.join(args.out, "rows.jsonl"), "a") as f:
                f.write(json.dumps(row) + "\n")
    command = f"bench/gpu/run.sh finetune (bench/fusion/finetune.py all --setups {args.setups} --seconds {args.seconds})"
    summary = summarise(rows, command)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"{'setup/mode':28} {'samples/s':>10} {'GPU MiB':>9}")
    for r in rows:
        rate = r.get("samples_per_s")
        print(f"{r['setup'] + '/' + r['mode']:28} {rate or 0:10.1f} {r['gpu_memory_mib']:9.0f}"
              + ("" if rate else f"  ERROR {str(r.get('error') or r.get('errors'))[:200]}"))
    for key, value in summary.items():
        if key.endswith(("_over_best", "_mem_ratio", "_over_by_hand")):
            print(f"{key:34} {value}")


def profile(args):
    """The GPU kernels of a few eager steps of one mode, the costliest first."""
    from torch.profiler import ProfilerActivity
    spec = SETUPS[args.setup]
    n = args.models or spec["models"]
    for mode in ("fused", "single"):
        step, _ = run_fused(args.setup, n, spec["batch"], spec["ranks"], graph=False) if mode == "fused" else \
            run_single(args.setup, spec["batch"], spec["ranks"], 0)
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        print(f"== {args.setup} {mode} (3 steps)")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=args.rows, max_name_column_width=70))


def check(args):
    """Fused outputs equal each model's own (fp32, eval); after fused
    training steps, peft loads adapter_state and gives the fused outputs."""
    import colo.fuse as cf
    torch.manual_seed(0)
    size = {"layers": 3, "width": 64, "heads": 4, "vocab": 300, "tokens": 16}
    report = {"adapters": adapters_kind()}
    tokens = torch.randint(0, 300, (4, 16), device="cuda")
    for setup, ranks in (("frozen_blocks", [8]), ("lora", [8]), ("lora_mixed", [2, 4, 8])):
        base = GPT(**size)
        models = [fine_tune(base, kind(setup), i, rank=ranks[i % len(ranks)], frozen_blocks=2).cuda().eval()
                  for i in range(3)]
        fused = cf.fuse(models).cuda().eval()
        with torch.no_grad():
            got = fused(tokens)
            want = torch.stack([m(tokens) for m in models])
        report[f"{setup}_forward_max_abs_diff"] = (got - want).abs().max().item()
        if setup.startswith("lora"):
            fused.train()
            opt = cf.optimizer(fused, "adamw", lr=1e-2)
            trainer = cf.Trainer(fused, opt, lm_loss)
            for _ in range(3):
                trainer.step(tokens, tokens)
            fused.eval()
            worst = 0.0
            for i, model in enumerate(models):
                state = cf.adapter_state(fused, i)
                try:
                    from peft import set_peft_model_state_dict
                    set_peft_model_state_dict(model, state)
                except ImportError:
                    model.load_state_dict({k.replace(".lora_A.", ".lora_A.default.").replace(".lora_B.", ".lora_B.default."): v
                                           for k, v in state.items()}, strict=False)
                with torch.no_grad():
                    worst = max(worst, (fused(tokens)[i] - model(tokens)).abs().max().item())
            report[f"{setup}_adapter_round_trip_max_abs_diff"] = worst
    print(json.dumps(report), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    o = sub.add_parser("one")
    o.add_argument("--setup", choices=sorted(SETUPS), required=True)
    o.add_argument("--mode", choices=["fused", "fused_keep_warmup_cache", "single", "vmap", "by_hand"], required=True)
    o.add_argument("--models", type=int, default=0)
    o.add_argument("--index", type=int, default=0, help="which fine-tune a single run trains")
    o.add_argument("--seconds", type=float, default=8.0)
    o.add_argument("--warmup", type=int, default=5)
    o.add_argument("--start-at", type=float, default=0.0)
    a = sub.add_parser("all")
    a.add_argument("--out", required=True)
    a.add_argument("--setups", default="frozen_heads,frozen_blocks,lora,lora_mixed")
    a.add_argument("--seconds", type=float, default=8.0)
    a.add_argument("--modes", default="", help="these modes (comma-separated; fused_keep_warmup_cache: "
                   "the Trainer without release_warmup_cache, for a before/after in one call)")
    m = sub.add_parser("summarise", help="one summary.json of rows.jsonl files from runs on one machine")
    m.add_argument("rows", nargs="+")
    m.add_argument("--out", required=True)
    m.add_argument("--how", required=True, help="the exact commands that made the rows")
    m.add_argument("--sweep", default="", help="finetune_sweep_time.py's JSON, for sweep_time_ratio")
    sub.add_parser("check")
    f = sub.add_parser("profile")
    f.add_argument("--setup", choices=sorted(SETUPS), required=True)
    f.add_argument("--models", type=int, default=0)
    f.add_argument("--rows", type=int, default=18)
    args = p.parse_args()
    {"one": one, "all": run_all, "check": check, "profile": profile, "summarise": summarise_files}[args.command](args)


if __name__ == "__main__":
    main()
