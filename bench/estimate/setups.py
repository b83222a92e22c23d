"""colo.estimate against real training processes for the set-ups people train
with today (issue 50): a frozen backbone with a trainable head, the last
blocks trainable, peft LoRA adapters, bf16 and fp16 autocast (fp16 with
torch.cuda.amp.GradScaler), a pure bf16 model, gradient accumulation,
zero_grad(set_to_none=False), and the `out = model(x)` form. The same
loops, with gradient checkpointing and plain fp32 training besides, serve
bench/estimate/real_training.py (issue 50's validation set) through
`measure`, given its own models.

    PYTHONPATH=BUILD/python python3 bench/estimate/setups.py run --out DIR [--only SETUP,...] [--parallel 2]
    python3 bench/estimate/setups.py summarize DIR/rows.jsonl --out DIR

Truth is what bench/estimate/real_models.py measures (the process's peak
NVML footprint over 4 steps of a fresh process), with the loop each set-up
describes; colo is colo.estimate told the same set-up on the CPU. Both see
the same model object built the same way (frozen parts, adapters, dtype).
"""
import argparse
import concurrent.futures
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.utils.checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from real_models import LEARNED, MODELS, horus_rule, loss_of, print_truth  # noqa: E402

HEADS = {"resnet50": "fc", "convnext_tiny": "classifier", "vit_b_16": "heads", "hf_bert": "classifier"}
LAST_BLOCKS = {"resnet50": ("layer4", "fc"), "hf_gpt2": ("transformer.h.4", "transformer.h.5", "transformer.ln_f")}

TRUTH_TIMEOUT_S = 300  # a row's truth takes 10-20 s on an H100; a hung one must not stop the rest

# (setup, model, batch, optimizer): the loop of each set-up is in `truth`.
ROWS = [
    ("frozen_backbone", "resnet50", 64, "adamw"), ("frozen_backbone", "resnet50", 128, "sgd"),
    ("frozen_backbone", "convnext_tiny", 64, "adamw"), ("frozen_backbone", "vit_b_16", 64, "adamw"),
    ("last_blocks", "resnet50", 64, "adamw"), ("last_blocks", "hf_gpt2", 16, "adamw"),
    ("lora", "hf_gpt2", 16, "adamw"), ("lora", "hf_bert", 32, "adamw"),
    ("bf16", "resnet50", 64, "adamw"), ("bf16", "convnext_tiny", 64, "adamw"), ("bf16", "hf_gpt2", 16, "adamw"),
    ("bf16", "vit_b_16", 64, "adamw"),
    ("fp16_scaler", "resnet50", 64, "adamw"), ("fp16_scaler", "hf_gpt2", 16, "adamw"),
    ("pure_bf16", "resnet50", 64, "adamw"), ("pure_bf16", "hf_gpt2", 16, "adamw"),
    ("accumulate4", "resnet50", 32, "adamw"), ("accumulate4", "hf_gpt2", 8, "adamw"),
    ("keep_grads", "resnet50", 64, "adam"), ("keep_grads", "hf_gpt2", 16, "adam"),
    ("keep_output", "hf_gpt2", 16, "adamw"), ("keep_output", "resnet50", 64, "adamw"),
]


def row_dict(setup, model, batch, optimizer):
    return {"setup": setup, "model": model, "family": MODELS[model][0], "batch": batch, "optimizer": optimizer}


class Checkpointed(nn.Module):
    """`block` run under torch.utils.checkpoint: its activations are not kept
    for backward but recomputed there. Positional tensors only (the reentrant
    kind takes no keyword arguments)."""

    def __init__(self, block, reentrant):
        super().__init__()
        self.block = block
        self.reentrant = reentrant

    def forward(self, *args):
        return torch.utils.checkpoint.checkpoint(self.block, *args, use_reentrant=self.reentrant)


def checkpoint_blocks(model, containers, reentrant):
    """Wraps in Checkpointed each child of every (container path, first index)
    in `containers`; a model with Hugging Face's gradient_checkpointing_enable
    (`containers` == "hf") uses that instead."""
    if containers == "hf":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": reentrant})
        return
    for path, first in containers:
        container = model.get_submodule(path)
        for i, child in list(enumerate(container))[first:]:
            container[i] = Checkpointed(child, reentrant)


def build(row, models=MODELS):
    """The row's model as its set-up trains it (on the CPU): frozen parts,
    adapters, checkpointed blocks, dtype. A row may name its own head
    (`head`), trainable blocks (`trainable`), LoRA targets (`lora_targets`)
    and checkpointed containers (`checkpoint_blocks`); else the tables above."""
    torch.manual_seed(0)
    model = models[row["model"]][1]()
    setup = row["setup"]
    if setup == "frozen_backbone":
        model.requires_grad_(False)
        model.get_submodule(row.get("head") or HEADS[row["model"]]).requires_grad_(True)
    elif setup == "last_blocks":
        model.requires_grad_(False)
        for name in row.get("trainable") or LAST_BLOCKS[row["model"]]:
            model.get_submodule(name).requires_grad_(True)
    elif setup == "lora":
        from peft import LoraConfig, get_peft_model
        targets = row.get("lora_targets") or (["c_attn", "c_proj"] if row["model"] == "hf_gpt2"
                                              else ["query", "key", "value", "dense"])
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=targets, lora_dropout=0.05))
    elif setup in ("checkpoint", "checkpoint_reentrant"):
        blocks = row["checkpoint_blocks"]
        checkpoint_blocks(model, blocks if blocks == "hf" else [tuple(b) for b in blocks],
                          reentrant=setup == "checkpoint_reentrant")
    elif setup == "pure_bf16":
        model = model.to(torch.bfloat16)
    return model


def example(row, models=MODELS):
    one = models[row["model"]][2]()
    return one.to(torch.bfloat16) if row["setup"] == "pure_bf16" and one.is_floating_point() else one


def make_optimizer(name, model):
    params = [p for p in model.parameters() if p.requires_grad]
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4)
    return torch.optim.Adam(params, lr=1e-4)


def autocast_of(row):
    return {"bf16": "bf16", "fp16_scaler": "fp16"}.get(row["setup"])


def truth(row, models=MODELS):
    """Child process: 4 optimiser steps of the row's set-up on the GPU; prints its NVML peak."""
    print_truth(gpu_loop(row, models))


def gpu_loop(row, models=MODELS):
    """() -> None running 4 optimiser steps of the row's set-up on the GPU, its
    model and optimiser made now. Any set-up not named here (fp32, checkpoint)
    is the plain loop on the model build() gives."""
    model = build(row, models).cuda().train()
    opt = make_optimizer(row["optimizer"], model)
    one = example(row, models)
    x = one.expand(row["batch"], *one.shape[1:]).contiguous().cuda()
    if not x.is_floating_point():
        x = torch.randint(0, int(one.max()) + 1, x.shape, device="cuda")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(autocast_of(row))
    scaler = torch.cuda.amp.GradScaler() if row["setup"] == "fp16_scaler" else None
    micro = 4 if row["setup"] == "accumulate4" else 1

    def train():
        for _ in range(4):
            opt.zero_grad(set_to_none=row["setup"] != "keep_grads")
            for _ in range(micro):
                with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                    if row["setup"] == "keep_output":
                        out = model(x)
                        loss = loss_of(out)
                    else:
                        loss = loss_of(model(x))
                (scaler.scale(loss) if scaler else loss).backward()
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
    return train


def colo_estimate(row, threads, models=MODELS, gpu=None, foreach=False):
    """colo.estimate of the row's set-up on the CPU with `threads` threads, for
    the stored GPU profile `gpu` (None: colo.estimate's default), with the
    optimiser's foreach step when `foreach` (torch 2's default on a GPU, which
    torch 1.13 does not take), as a record's fields; a model that cannot be built or estimated gives
    `build_error` or `colo_error` instead (never raises)."""
    import colo
    try:
        model = build(row, models)
        one = example(row, models)
    except Exception as exc:  # a missing library, a model this torch lacks: the row says which
        return {"build_error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    start = time.time()
    try:
        optimizer = make_optimizer(row["optimizer"], model)
        for group in optimizer.param_groups if foreach else ():
            group["foreach"] = True
        e = colo.estimate(model, one, batch_size=row["batch"], optimizer=optimizer,
                          autocast=autocast_of(row), keep_output=row["setup"] == "keep_output",
                          set_to_none=row["setup"] != "keep_grads",
                          accumulation_steps=4 if row["setup"] == "accumulate4" else 1, threads=threads, gpu=gpu)
    except Exception as exc:  # the row says how colo failed; the others go on
        return {"colo_error": f"{type(exc).__name__}: {str(exc)[:300]}", "colo_s": time.time() - start,
                "colo_threads": threads}
    return {"colo_bytes": e.bytes, "colo_high_bytes": e.bytes_high, "colo_s": time.time() - start,
            "colo_threads": threads, "colo_phase": e.peak_phase, "colo_unmodelled": e.unmodelled_ops,
            "colo_breakdown": e.breakdown}


def peer_estimates(row, models=MODELS):
    """The peers' answers for the row's set-up, as a record's fields:
    `horus_bytes` (real_models.horus_rule: counts only, no frozen weights, no
    autocast) and `learned_bytes` (colo's learned estimator on the model's
    summary); `peer_error` instead when the model cannot be built or run."""
    import colo
    try:
        model = build(row, models)
        one = example(row, models)
        e = colo.estimate(model, one, batch_size=row["batch"], optimizer=make_optimizer(row["optimizer"], model),
                          autocast=autocast_of(row), keep_output=row["setup"] == "keep_output",
                          set_to_none=row["setup"] != "keep_grads",
                          accumulation_steps=4 if row["setup"] == "accumulate4" else 1, learned=LEARNED)
        model.eval()
        return {"horus_bytes": horus_rule(model, one, row), "learned_bytes": e.learned_bytes}
    except Exception as exc:  # the row says how the peers failed; the others go on
        return {"peer_error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def estimator_pool(workers, threads, context):
    """A pool of `workers` spawned estimate workers, each capped at `threads`
    CPU threads before it builds a model, as colo's scheduler starts its
    estimates (OMP_NUM_THREADS and the like, python_model_estimator.cpp).
    Without it a worker builds the model on every core's threads and
    colo.estimate's own cap (torch.set_num_threads) comes after."""
    return concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=torch.set_num_threads,
                                                  initargs=(threads,))


def estimate_alone(estimate, row, threads, context):
    """`estimate(row, threads)` in a process of its own; its death is the row's colo_error."""
    with estimator_pool(1, threads, context) as alone:
        try:
            return alone.submit(estimate, row, threads).result()
        except concurrent.futures.process.BrokenProcessPool as exc:
            return {"colo_error": f"the estimate's process died: {exc}"}


def measure(rows, out_dir, parallel, threads, script, estimate=colo_estimate, estimators=1):
    """Measures every row: its truth in a fresh process (`script truth ROW`),
    `parallel` at a time on the GPU, and `estimate(row, threads)` in
    `estimators` worker processes on the CPU meanwhile. Appends one record a
    row to out_dir/rows.jsonl, in the rows' order, and prints its line.
    `estimate` must be picklable (a module-level function): the workers are
    spawned. A worker that dies marks its row and a new pool takes the rest."""
    os.makedirs(out_dir, exist_ok=True)
    context = multiprocessing.get_context("spawn")  # no fork of a process holding torch's threads
    pool = estimator_pool(estimators, threads, context)
    estimates = [pool.submit(estimate, row, threads) for row in rows]
    pending, running = list(enumerate(rows)), []
    with open(os.path.join(out_dir, "rows.jsonl"), "a") as out:
        while pending or running:
            while pending and len(running) < parallel:
                i, row = pending.pop(0)
                child = subprocess.Popen([sys.executable, script, "truth", json.dumps(row)],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                running.append((i, row, child))
            i, row, child = running.pop(0)
            try:
                stdout, stderr = child.communicate(timeout=TRUTH_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                stdout, stderr = child.communicate()
                stderr += f"\ntruth timed out after {TRUTH_TIMEOUT_S} s"
            try:
                est = estimates[i].result()
            except concurrent.futures.process.BrokenProcessPool:
                # This row's worker, or one beside it, died: the row again on its own, the rest in a new pool.
                pool.shutdown(wait=False, cancel_futures=True)
                est = estimate_alone(estimate, row, threads, context)
                pool = estimator_pool(estimators, threads, context)
                estimates[i + 1:] = [pool.submit(estimate, r, threads) for r in rows[i + 1:]]
            record = dict(row, **est, torch=torch.__version__)
            try:
                record.update(json.loads(stdout.strip().splitlines()[-1]))
            except (ValueError, IndexError):
                record["truth_error"] = stderr[-400:]
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(line_of(record), flush=True)
    pool.shutdown()


def run(args):
    rows = [row_dict(*r) for r in ROWS if not args.only or r[0] in args.only.split(",")]
    measure(rows, args.out, args.parallel, args.threads, __file__, estimators=args.estimators)


def error(record, key="colo_bytes"):
    """(estimate - truth) / truth of `key`, or None when either is missing."""
    if not record.get("truth_bytes") or not record.get(key):
        return None
    return (record[key] - record["truth_bytes"]) / record["truth_bytes"]


def line_of(r):
    e, h = error(r), error(r, "colo_high_bytes")
    if e is None:
        why = r.get("skipped") or r.get("build_error") or r.get("colo_error") or r.get("truth_error", "")[-200:]
        return f"{r['setup']:16} {r['model']:14} b{r['batch']:<4} {why}"
    return (f"{r['setup']:16} {r['model']:14} b{r['batch']:<4} truth {r['truth_bytes'] / 2**30:6.2f} GiB "
            f"colo {r['colo_bytes'] / 2**30:6.2f} GiB ({100 * e:+5.1f}%, high {100 * h:+5.1f}%) "
            f"peak in {r['colo_phase']}")


def summarize(args):
    records = [json.loads(line) for path in args.rows for line in open(path) if line.strip()]
    measured = [r for r in records if error(r) is not None]
    errs = [error(r) for r in measured]
    summary = {
        "rows": len(measured), "failed_rows": len(records) - len(measured),
        "median_abs_pct": 100 * statistics.median(abs(e) for e in errs) if errs else None,
        "under": sum(e < 0 for e in errs), "under10": sum(e < -0.10 for e in errs),
        "high_under": sum(error(r, "colo_high_bytes") < 0 for r in measured),
        "per_setup": {s: {"rows": len(v), "errors_pct": [round(100 * error(r), 1) for r in v]}
                      for s in sorted({r["setup"] for r in measured})
                      for v in [[r for r in measured if r["setup"] == s]]},
        "gpu": args.gpu, "command": args.command,
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for r in records:
        print(line_of(r))
    print(json.dumps({k: v for k, v in summary.items() if k != "per_setup"}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--only", default="", help="comma-separated set-ups")
    r.add_argument("--parallel", type=int, default=2, help="truth processes at once on the GPU")
    r.add_argument("--threads", type=int, default=4, help="CPU threads of each colo.estimate")
    r.add_argument("--estimators", type=int, default=1, help="colo.estimate processes at once on the CPU")
    t = sub.add_parser("truth")
    t.add_argument("row")
    s = sub.add_parser("summarize")
    s.add_argument("rows", nargs="+")
    s.add_argument("--out", required=True)
    s.add_argument("--gpu", default="")
    s.add_argument("--command", default="bench/gpu/run.sh estsetups")
    args = parser.parse_args()
    if args.verb == "run":
        run(args)
    elif args.verb == "truth":
        truth(json.loads(args.row))
    else:
        summarize(args)


if __name__ == "__main__":
    main()
