"""Where a real_training row's memory peaks, phase by phase, on the GPU and in
colo.estimate's replay: for finding which part of an estimate is off, not for
scoring it (real_training.py does that).

    PYTHONPATH=BUILD/python python3 bench/estimate/phase_peaks.py --only MODEL:SETUP,... --out ROWS.jsonl

For each row, a fresh GPU process runs the row's loop (setups.gpu_loop's, with
the same model, batch and optimiser) for 4 optimiser steps and records, for
steps 2-4, the caching allocator's allocated peak in the forward, the backward
and the optimiser step, what is allocated when each begins and what is
reserved when each ends (the allocator never gives segments back); then
colo.estimate of the same row runs on this host's CPU with its replay traced
(COLO_ESTIMATE_TRACE), and the replay's allocated peak per phase is taken
from the trace. One JSON line per row: `gpu` and `colo`, each by phase, MiB."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_training as rt  # noqa: E402  (beside this file)
import setups  # noqa: E402

MIB = 1 << 20


def gpu_phases(row):
    """Child process: the row's loop on the GPU, phase by phase; prints one JSON line."""
    models = rt.MODELS
    model = setups.build(row, models).cuda().train()
    opt = setups.make_optimizer(row["optimizer"], model)
    one = setups.example(row, models)
    x = one.expand(row["batch"], *one.shape[1:]).contiguous().cuda()
    if not x.is_floating_point():
        x = torch.randint(0, int(one.max()) + 1, x.shape, device="cuda")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(setups.autocast_of(row))
    scaler = torch.cuda.amp.GradScaler() if row["setup"] == "fp16_scaler" else None
    micro = 4 if row["setup"] == "accumulate4" else 1
    steps = []

    def mark(phases, name, since):
        torch.cuda.synchronize()
        phases[name] = {"at_start": since / MIB, "peak": torch.cuda.max_memory_allocated() / MIB,
                        "reserved": torch.cuda.memory_reserved() / MIB}
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated()

    for _ in range(4):
        phases = {}
        opt.zero_grad(set_to_none=row["setup"] != "keep_grads")
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        now = torch.cuda.memory_allocated()
        for m in range(micro):
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = setups.loss_of(model(x))
            now = mark(phases, f"forward{m or ''}", now)
            (scaler.scale(loss) if scaler else loss).backward()
            now = mark(phases, f"backward{m or ''}", now)
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        mark(phases, "optimizer", now)
        steps.append(phases)
    print(json.dumps({"steps": steps[1:], "max_reserved": torch.cuda.max_memory_reserved() / MIB}))


def replay_phases(trace_path):
    """The replay's allocated peak and the bytes allocated at each phase's first event, per phase, MiB."""
    phases = {}
    for line in open(trace_path):
        what, phase, kind, _op, _bytes, allocated, reserved, _id = line.split()[:8]
        if what != "A":
            continue
        p = phases.setdefault(phase, {"peak": 0, "reserved": 0})
        p["peak"] = max(p["peak"], int(allocated) / MIB)
        p["reserved"] = max(p["reserved"], int(reserved) / MIB)
    return phases


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", required=True, help="MODEL:SETUP pairs, comma-separated")
    parser.add_argument("--out", required=True)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = {(r["model"], r["setup"]): r for r in rt.all_rows()}
    if args.child:
        gpu_phases(rows[tuple(args.child.split(":"))])
        return
    with open(args.out, "w") as out:
        for pair in args.only.split(","):
            row = rows.get(tuple(pair.split(":")))
            if row is None:
                print(f"phase_peaks: no row {pair}", file=sys.stderr)
                continue
            record = {"row": pair, "batch": row["batch"], "optimizer": row["optimizer"]}
            done = subprocess.run([sys.executable, __file__, "--only", pair, "--out", "-", "--child", pair],
                                  capture_output=True, text=True, timeout=300)
            record["gpu"] = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 \
                else {"error": done.stderr[-600:]}
            with tempfile.NamedTemporaryFile(suffix=".trace") as trace:
                os.environ["COLO_ESTIMATE_TRACE"] = trace.name
                estimate = rt.estimate_row(row, 2)
                del os.environ["COLO_ESTIMATE_TRACE"]
                record["colo"] = {"replay": replay_phases(trace.name), "phase": estimate.get("colo_phase"),
                                  "breakdown": {k: v / MIB for k, v in (estimate.get("colo_breakdown") or {}).items()},
                                  "bytes": estimate.get("colo_bytes", 0) / MIB,
                                  "error": estimate.get("colo_error") or estimate.get("build_error")}
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(json.dumps(record)[:600], flush=True)


if __name__ == "__main__":
    main()
