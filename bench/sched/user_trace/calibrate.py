"""Measures each job of the user trace alone for a short, fixed amount of
work: its steady optimiser steps per second, its start-up (process start to
first step) and its peak memory, into a JSON file that make_jobs.py takes
as --calibration (steps so that each job trains its seconds alone) and as
--peaks. Each job trains about --seconds at its guessed rate; jobs already
in --out are skipped, so a run cut off by a time limit goes on.

    python3 calibrate.py --colo build-gpu/colo --out cal.json [--seconds 8] [--jobs N]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import make_jobs


def final_line(text):
    """The last JSON object line a job script printed (common.TrainingClock), or None."""
    for line in reversed(text.splitlines()):
        if line.startswith("{") and '"train_s"' in line:
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def colo_train_figures(run_dir, batch):
    """Steady steps/s and peak memory from a `colo train` run's metrics.jsonl:
    the epochs after the first (warm-up), or the only one."""
    records = [json.loads(line) for path in glob.glob(os.path.join(run_dir, "metrics.jsonl")) for line in open(path)]
    if not records:
        return None, None
    steady = records[1:] or records
    samples_per_s = sum(r["samples_per_s"] * r["epoch_s"] for r in steady) / sum(r["epoch_s"] for r in steady)
    peak = max((r.get("peak_mem_bytes") or 0) for r in records) or None
    return samples_per_s / batch, peak


def measure(job, steps, colo, work):
    cmd = make_jobs.command(job, steps, sys.executable, colo, os.path.join(work, "specs"), os.path.join(work, "runs"))
    env = dict(os.environ, **job.env)
    start = time.time()
    done = subprocess.run(cmd, shell=True, cwd=make_jobs.HERE, env=env, capture_output=True, text=True)
    wall = time.time() - start
    out = {"steps": steps, "wall_s": round(wall, 2), "exit": done.returncode}
    if done.returncode != 0:
        out["error"] = (done.stdout + done.stderr)[-2000:]
        return out
    if job.colo_train:
        rate, peak = colo_train_figures(os.path.join(work, "runs", job.name), job.batch)
        out.update(steps_per_s=rate, peak_mem_bytes=peak,
                   startup_s=round(wall - steps / rate, 2) if rate else None)  # evaluation counts as start-up here
    else:
        line = final_line(done.stdout) or {}
        out.update(steps_per_s=line.get("steady_steps_per_s"), peak_mem_bytes=line.get("peak_mem_bytes"),
                   startup_s=line.get("startup_s"))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--colo", required=True, help="the colo binary (for the `colo train` jobs)")
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=8.0, help="training per job, at its guessed rate")
    p.add_argument("--jobs", type=int, default=len(make_jobs.JOBS), help="the first N jobs of the list")
    args = p.parse_args()
    results = json.load(open(args.out)) if os.path.exists(args.out) else {}
    colo = os.path.abspath(args.colo)
    work = tempfile.mkdtemp(prefix="colo-user-trace-calibrate-")
    for job in make_jobs.JOBS[:args.jobs]:
        if job.name in results and results[job.name].get("exit") == 0:
            continue
        steps = max(20, round(job.rate * args.seconds))
        r = measure(job, steps, colo, work)
        results[job.name] = r
        json.dump(results, open(args.out, "w"), indent=1)  # after every job: a cut-off run keeps what it measured
        rate = f"{r['steps_per_s']:.2f} steps/s (guessed {job.rate:g})" if r.get("steps_per_s") else "no rate"
        print(f"[calibrate] {job.name}: exit {r['exit']}, {r['wall_s']} s, {rate}, start-up {r.get('startup_s')} s, "
              f"peak {(r.get('peak_mem_bytes') or 0) / 2**30:.2f} GiB", flush=True)
        if r["exit"] != 0:
            print(r["error"][-600:], flush=True)


if __name__ == "__main__":
    main()
