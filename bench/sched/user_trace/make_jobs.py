"""Writes the user trace (issue 49): real PyTorch training scripts as a user
runs them, each training a fixed number of steps, as `colo run` job files
in three variants of one job list, and as the loop a user without colo runs.

  model.toml     each Python job names its model ([job.model]); `colo train`
                 jobs declare nothing (colo estimates their specs)
  opaque.toml    nothing declared at all
  declared.toml  `mem` by hand: the peak measured alone (--peaks) plus 25%,
                 else the guess in this file's list
  loop.sh        the same commands one after another (bash loop.sh DIR)
  jobs.json      the list as written (names, commands, steps), for
                 calibrate.py and summarise.py
  specs/         the `colo train` specs
No job declares `sm_share`.

    python3 make_jobs.py --out-dir DIR [--colo build-gpu/colo] [--jobs N] [--scale F]
                         [--calibration cal.json [--target-s S]] [--peaks peaks.json]
    python3 make_jobs.py --table      # the list with its throughput guesses (README)
"""
import argparse
import json
import math
import os
import shlex
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
GiB = 2**30
FASHION_TRAIN = 60000
PY_ENV = {"PYTHONUNBUFFERED": "1"}


@dataclass
class Job:
    name: str
    args: list              # the command without --steps: ["vision.py", ...] or ["colo-train"]
    rate: float             # guessed optimiser steps per second alone on an H100
    seconds: float          # how long it should train alone
    batch: int
    guess_gib: float        # peak GPU memory guessed (declared.toml without --peaks)
    model: dict = None      # [job.model], or None
    spec: dict = None       # a `colo train` spec's fields, or None
    env: dict = field(default_factory=dict)

    @property
    def colo_train(self):
        return self.spec is not None


def vision(model, batch, opt, rate, seconds, guess_gib, lr=None, seed=None, bf16=False, frozen=False, tag=""):
    short = model.replace("timm/", "timm-").replace("_patch16_224", "")
    name = f"{short}-b{batch}-{opt}{'-bf16' if bf16 else ''}{'-frozen' if frozen else ''}{tag}"
    args = ["vision.py", "--model", model, "--batch", str(batch), "--opt", opt]
    args += (["--lr", str(lr)] if lr else []) + (["--seed", str(seed)] if seed is not None else [])
    args += (["--bf16"] if bf16 else []) + (["--freeze-backbone"] if frozen else [])
    builder = "build_" + model.replace("timm/", "timm_") + ("_frozen" if frozen else "")  # vision.builder_name
    return Job(name, args, rate, seconds, batch, guess_gib, model=dict(builder=f"vision:{builder}",
               input=[3, 224, 224], batch_size=batch, optimizer=opt), env=dict(PY_ENV))


def hf(model, seq, batch, rate, seconds, guess_gib, bf16=False, seed=None, tag=""):
    vocab = {"gpt2": 50257, "bert": 30522, "distilbert": 30522}[model]
    args = ["hf_lm.py", "--model", model, "--seq", str(seq), "--batch", str(batch), "--opt", "adamw"]
    args += (["--bf16"] if bf16 else []) + (["--seed", str(seed)] if seed is not None else [])
    return Job(f"{model}-s{seq}-b{batch}-adamw{'-bf16' if bf16 else ''}{tag}", args, rate, seconds, batch, guess_gib,
               model=dict(builder=f"hf_lm:build_{model}", input=[seq], vocab=vocab, batch_size=batch,
                          optimizer="adamw"), env=dict(PY_ENV))


def lora(base, r, seq, batch, rate, seconds, guess_gib, bf16=True):
    vocab = {"gpt2-medium": 50257, "opt-350m": 50272}[base]
    args = ["lora.py", "--base", base, "--r", str(r), "--seq", str(seq), "--batch", str(batch)]
    args += ["--bf16"] if bf16 else []
    builder = f"lora:build_{base.replace('-', '_')}_r{r}"
    return Job(f"lora-{base}-r{r}-s{seq}-b{batch}{'-bf16' if bf16 else ''}", args, rate, seconds, batch, guess_gib,
               model=dict(builder=builder, input=[seq], vocab=vocab, batch_size=batch, optimizer="adamw"),
               env=dict(PY_ENV))


def lightning(model, batch, opt, rate, seconds, guess_gib, bf16=False):
    args = ["lightning_job.py", "--model", model, "--batch", str(batch), "--opt", opt] + (["--bf16"] if bf16 else [])
    return Job(f"pl-{model}-b{batch}-{opt}{'-bf16' if bf16 else ''}", args, rate, seconds, batch, guess_gib,
               model=dict(builder=f"lightning_job:build_{model}", input=[3, 224, 224], batch_size=batch,
                          optimizer=opt), env=dict(PY_ENV))


def colo_train(name, model, batch, optimizer, rate, seconds, guess_gib, seed=0):
    spec = dict(seed=seed, batch_size=batch, model=model, optimizer=optimizer)
    return Job(name, ["colo-train"], rate, seconds, batch, guess_gib, spec=spec)


# In an order where every prefix is a fair mix (--jobs N takes the first N):
# each kind comes back every few jobs. `rate` is the steps/s assumed alone on
# an H100: 0.85 x the steady rate of a 3 s run on an H200
# (h200_smoke_calibration.json); for the `colo train` jobs a guess (ResNet-18:
# the 2026-11-26 H100 loop ran 2,800 steps in 28 s, start-up included; the
# README's table has the first guesses too). `guess_gib`, the peak a user
# writes by hand: that run's allocated peak plus 25%, rounded up to 0.5 GiB
# (a guess for `colo train`). calibrate.py measures both on the machine.
JOBS = [
    vision("resnet50", 64, "sgd", 26.1, 150, 7.0, lr=0.1),
    hf("gpt2", 512, 16, 5.1, 150, 18.0),
    colo_train("colo-resnet18-fashion", {"name": "resnet", "depth": 18}, 128,
               {"name": "sgd", "lr": 0.05, "momentum": 0.9}, 100.0, 100, 2.0),
    vision("timm/deit_small_patch16_224", 128, "adamw", 34.1, 100, 6.0, bf16=True),
    lora("gpt2-medium", 16, 512, 8, 13.5, 150, 14.5),
    vision("resnet18", 128, "sgd", 33.8, 90, 4.0, lr=0.1, seed=0, tag="-lr0.1"),
    lightning("resnet34", 128, "sgd", 19.3, 120, 5.5),
    hf("bert", 128, 64, 24.9, 90, 6.5, bf16=True),
    vision("vit_b_16", 64, "adamw", 22.9, 180, 7.5, bf16=True),
    vision("resnet18", 128, "sgd", 33.8, 90, 4.0, lr=0.05, seed=1, tag="-lr0.05"),
    colo_train("colo-transformer-fashion", {"name": "transformer", "layers": 6, "d_model": 256, "heads": 8,
               "patch_size": 4}, 256, {"name": "adam", "lr": 5e-4}, 50.0, 80, 3.0),
    vision("mobilenet_v3_large", 128, "adam", 19.0, 90, 7.0),
    vision("resnet50", 128, "sgd", 41.9, 80, 2.0, frozen=True),
    vision("timm/convnext_nano", 128, "adamw", 24.2, 90, 6.5, bf16=True),
    hf("distilbert", 256, 32, 15.1, 120, 4.5),
    vision("resnet18", 128, "sgd", 33.8, 90, 4.0, lr=0.2, seed=2, tag="-lr0.2"),
    vision("convnext_tiny", 64, "adamw", 30.4, 150, 5.5, bf16=True),
    colo_train("colo-lenet-fashion-lr0.05", {"name": "lenet"}, 64,
               {"name": "sgd", "lr": 0.05, "momentum": 0.9}, 300.0, 60, 1.0, seed=0),
    vision("efficientnet_b0", 32, "adam", 32.2, 90, 4.0),
    hf("gpt2", 256, 32, 14.1, 100, 16.0, bf16=True, seed=0, tag="-seed0"),
    vision("timm/resnet50", 128, "sgd", 15.3, 120, 7.5, bf16=True),
    lora("opt-350m", 8, 256, 16, 11.4, 120, 9.5),
    lightning("mobilenet_v3_large", 128, "adamw", 16.0, 80, 4.0, bf16=True),
    colo_train("colo-lenet-fashion-lr0.02", {"name": "lenet"}, 64,
               {"name": "sgd", "lr": 0.02, "momentum": 0.9}, 300.0, 60, 1.0, seed=1),
    hf("gpt2", 256, 32, 14.1, 100, 16.0, bf16=True, seed=1, tag="-seed1"),
    vision("resnet50", 256, "sgd", 8.0, 240, 14.0, bf16=True),
]


# With --target-s, a job trains at least this many times its calibrated
# start-up, so that start-up stays under a quarter of its run on a slower
# host too (an H100 started the jobs 1.4-1.7x slower than the H200 that
# calibrated them).
STARTUP_MULTIPLE = 4.5


def steps_of(job, scale=1.0, calibration=None, target_s=None, min_solo_s=None):
    """Optimiser steps for `job`: its rate (measured, or guessed) times its
    seconds (or, where the calibration measured it, target_s but at least
    STARTUP_MULTIPLE x its calibrated start-up, and at least min_solo_s less
    that start-up, so that its run alone lasts min_solo_s), times scale; at
    least 5."""
    measured = calibration.get(job.name, {}) if calibration else {}
    seconds = job.seconds
    if calibration and target_s and measured.get("steps_per_s"):  # others keep their planned seconds
        startup = measured.get("startup_s") or 0
        seconds = max(target_s, STARTUP_MULTIPLE * startup, (min_solo_s or 0) - startup)
    return max(5, round((measured.get("steps_per_s") or job.rate) * seconds * scale))


def spec_toml(job, steps):
    """A `colo train` spec on Fashion-MNIST held on the GPU that stops after
    `steps` optimiser steps (epochs: enough to reach them)."""
    epochs = math.ceil(steps * job.batch / FASHION_TRAIN) + 1
    lines = [f"# {job.name}: made by make_jobs.py", f"seed = {job.spec['seed']}", 'device = "auto"',
             f'output = "runs/{job.name}"', f"epochs = {epochs}", f"max_steps = {steps}",
             f"batch_size = {job.batch}", "checkpoint_every = 0", ""]
    for table, fields in (("model", job.spec["model"]), ("data", {"name": "fashion-mnist", "on_device": True}),
                          ("optimizer", job.spec["optimizer"])):
        lines.append(f"[{table}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in fields.items()]
        lines.append("")
    return "\n".join(lines)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(v)  # a JSON string is a TOML basic string


def command(job, steps, python, colo, spec_dir, runs_dir):
    """The job's shell command; a `colo train` job's spec is written to spec_dir."""
    if job.colo_train:
        os.makedirs(spec_dir, exist_ok=True)
        spec = os.path.join(spec_dir, f"{job.name}.toml")
        with open(spec, "w") as f:
            f.write(spec_toml(job, steps))
        return f"{shlex.quote(colo)} train {shlex.quote(spec)} --out {shlex.quote(os.path.join(runs_dir, job.name))}"
    return " ".join([python] + [shlex.quote(a) for a in job.args] + ["--steps", str(steps)])


def job_table(job, cmd, variant, peaks):
    lines = ["[[job]]", f"name = {json.dumps(job.name)}", f"command = {json.dumps(cmd)}",
             f"workdir = {json.dumps(HERE)}"]
    if job.env:
        lines.append("env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in job.env.items()) + " }")
    if variant == "declared":
        peak = peaks.get(job.name)
        mem = peak * 1.25 if peak else job.guess_gib * GiB  # the guess already has its margin
        lines.append(f'mem = "{math.ceil(mem / 2**20)}MiB"')
    if variant == "model" and job.model:
        lines.append("[job.model]")
        lines += [f"{k} = {toml_value(v)}" for k, v in job.model.items()]
    return "\n".join(lines) + "\n"


LOOP_HEAD = r'''#!/usr/bin/env bash
# Made by make_jobs.py: the trace's commands one after another, as a user
# without colo runs them. bash loop.sh DIR writes, per job, DIR/logs/NAME.log
# and one line of DIR/jobs.jsonl (start, end, exit status, the GPU's NVML
# energy counter before and after, LOOP_PART and CUDA_VISIBLE_DEVICES); a
# job already there is skipped, so a loop cut off by a time limit goes on
# where it stopped. LOOP_PART=K/N runs only jobs K, K+N, K+2N, ... (1-based),
# so N loops on N GPUs of one host, each with its CUDA_VISIBLE_DEVICES,
# measure every job alone in 1/N of the time; the loop's makespan is then
# the jobs' run times added up, as one loop would take them.
set -u
# Cut off (a time limit's SIGTERM), the job running then leaves no record: it runs again next time.
trap 'exit 143' TERM INT
dir=${1:?usage: loop.sh DIR}
part=${LOOP_PART:-1/1}
part_k=${part%%/*} part_n=${part#*/}
if [[ $part != */* || ! $part_k =~ ^[0-9]+$ || ! $part_n =~ ^[0-9]+$ ]] || (( part_k < 1 || part_k > part_n )); then
  echo "loop.sh: LOOP_PART=$part is not K/N with 1 <= K <= N" >&2; exit 2
fi
mkdir -p "$dir/logs"
energy() { python3 %(energy)s 2>/dev/null || echo null; }
count=0
job() {  # NAME WORKDIR COMMAND
  local name=$1 workdir=$2 command=$3 e0 e1 t0 t1 rc
  count=$((count + 1))
  [ $(( (count - 1) %% part_n )) -eq $(( part_k - 1 )) ] || return 0
  if grep -q "\"name\": \"$name\"" "$dir/jobs.jsonl" 2>/dev/null; then
    echo "[loop] $count/%(total)d $name: done before, skipped"; return
  fi
  e0=$(energy); t0=$(date +%%s.%%N)
  (cd "$workdir" && /bin/sh -c "$command") >"$dir/logs/$name.log" 2>&1
  rc=$?
  t1=$(date +%%s.%%N); e1=$(energy)
  printf '{"name": "%%s", "start_unix_s": %%s, "end_unix_s": %%s, "exit": %%d, "energy_start_j": %%s, "energy_end_j": %%s, "part": "%%s", "gpu": "%%s"}\n' \
    "$name" "$t0" "$t1" "$rc" "$e0" "$e1" "$part" "${CUDA_VISIBLE_DEVICES:-}" >>"$dir/jobs.jsonl"
  echo "[loop] $count/%(total)d $name: exit $rc, $(awk "BEGIN {printf \"%%.1f\", $t1 - $t0}") s"
}
'''


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", help="where to write the job files, loop.sh, jobs.json and specs/")
    p.add_argument("--colo", default=os.path.join(ROOT, "build-gpu", "colo"), help="the colo binary")
    p.add_argument("--python", default="python3")
    p.add_argument("--runs", help="where `colo train` jobs write (default OUT_DIR/runs)")
    p.add_argument("--jobs", type=int, default=len(JOBS), help="the first N jobs of the list")
    p.add_argument("--scale", type=float, default=1.0, help="multiplies every step count")
    p.add_argument("--calibration", help="JSON of measured steps_per_s per job name (calibrate.py)")
    p.add_argument("--target-s", type=float, help="with --calibration: every job trains this long alone "
                                                  "(default: each job's own seconds in the list)")
    p.add_argument("--min-solo-s", type=float, help="with --target-s: a measured job trains long enough to "
                                                    "run at least this long alone, its start-up included")
    p.add_argument("--peaks", help="JSON of peak bytes per job name measured alone (summarise.py --peaks-out), "
                                   "or calibrate.py's output; declared.toml's mem is that plus 25%%")
    p.add_argument("--table", action="store_true", help="print the list as a Markdown table and exit")
    args = p.parse_args()
    jobs = JOBS[:args.jobs]
    if args.table:
        print("| # | job | kind | batch | steps/s assumed (H100) | seconds alone | steps | peak by hand |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for i, j in enumerate(jobs, 1):
            kind = "colo train" if j.colo_train else j.args[0]
            print(f"| {i} | {j.name} | {kind} | {j.batch} | {j.rate:g} | {j.seconds:g} | {steps_of(j)} | "
                  f"{j.guess_gib:g} GiB |")
        print(f"\n{len(jobs)} jobs, {sum(j.seconds for j in jobs) / 60:.0f} min of training one after another")
        return
    if not args.out_dir:
        p.error("--out-dir is required")
    out = os.path.abspath(args.out_dir)
    runs = os.path.abspath(args.runs or os.path.join(out, "runs"))
    colo = os.path.abspath(args.colo)
    calibration = json.load(open(args.calibration)) if args.calibration else None
    peaks = {}
    if args.peaks and os.path.exists(args.peaks):
        raw = json.load(open(args.peaks))
        peaks = {k: v.get("peak_mem_bytes") if isinstance(v, dict) else v for k, v in raw.items()}
        peaks = {k: v for k, v in peaks.items() if v}
    elif args.peaks:
        print(f"{args.peaks}: not there; declared.toml uses the guessed peaks", file=sys.stderr)
    os.makedirs(out, exist_ok=True)
    records, tables = [], {v: [] for v in ("model", "opaque", "declared")}
    loop = [LOOP_HEAD % {"energy": shlex.quote(os.path.join(HERE, "energy.py")), "total": len(jobs)}]
    for job in jobs:
        steps = steps_of(job, args.scale, calibration, args.target_s, args.min_solo_s)
        # Each variant writes its own `colo train` outputs; the specs are the same.
        for variant in tables:
            cmd = command(job, steps, args.python, colo, os.path.join(out, "specs"), os.path.join(runs, variant))
            tables[variant].append(job_table(job, cmd, variant, peaks))
        cmd = command(job, steps, args.python, colo, os.path.join(out, "specs"), os.path.join(runs, "loop"))
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in job.env.items())
        loop.append(f"job {shlex.quote(job.name)} {shlex.quote(HERE)} {shlex.quote((env + ' ' if env else '') + cmd)}")
        records.append({"name": job.name, "steps": steps, "batch": job.batch, "seconds_planned": job.seconds,
                        "guessed_steps_per_s": job.rate, "colo_train": job.colo_train, "command": cmd,
                        "model": job.model, "declared_peak_bytes": peaks.get(job.name)})
    what = (f"{len(jobs)} jobs, scale {args.scale:g}" + (f", calibrated by {args.calibration}" if calibration else "")
            + (f", target {args.target_s:g} s" if calibration and args.target_s else "")
            + (f", at least {args.min_solo_s:g} s alone" if calibration and args.target_s and args.min_solo_s else ""))
    mem_from = (f"peaks measured alone in {args.peaks} plus 25%" if peaks else "the guesses in make_jobs.py")
    for variant, body in tables.items():
        with open(os.path.join(out, f"{variant}.toml"), "w") as f:
            f.write(f"# Made by bench/sched/user_trace/make_jobs.py, variant {variant}: {what}. No sm_share.\n")
            f.write(f"# mem: {mem_from}.\n\n" if variant == "declared" else "\n")
            f.write("\n".join(body))
    with open(os.path.join(out, "loop.sh"), "w") as f:
        f.write("\n".join(loop) + '\necho "[loop] done"\n')
    with open(os.path.join(out, "jobs.json"), "w") as f:
        json.dump({"what": what, "jobs": records}, f, indent=1)
    print(f"{out}: {what}; declared mem from {mem_from}", file=sys.stderr)


if __name__ == "__main__":
    main()
