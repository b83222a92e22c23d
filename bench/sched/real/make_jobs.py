"""Writes the scheduler's real, work-bound trace as a `colo run` job file:
40 training jobs (one GPU), or with --two-gpu the two-GPU variant, all
submitted at once. Every job trains a fixed number of steps; none declares
an SM share. Plain PyTorch jobs are hyper-parameter searches run as colo job
arrays (the array index picks seed and learning rate), so every copy has the
same command and colo's history applies; their `mem` is colo.estimate's
answer for their model (estimates.json, made here on the CPU with
--estimate), plus the data they keep on the GPU. `colo train` jobs declare
no memory: colo estimates their specs itself.

    python3 bench/sched/real/make_jobs.py --estimate        # refresh estimates.json (CPU, colo package built)
    python3 bench/sched/real/make_jobs.py --colo build-gpu/colo --out jobs.toml [--two-gpu]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
GiB = 2**30

# (model, res, batch, optimizer, steps, copies): CNN searches at batch sizes users pick.
VISION = [
    ("resnet18", 32, 128, "sgd", 700, 3),
    ("resnet18", 64, 64, "adam", 500, 3),
    ("resnet18", 64, 256, "sgd", 250, 2),
    ("mobilenet_v3_small", 64, 128, "sgd", 500, 3),
    ("mobilenet_v3_small", 64, 256, "adam", 300, 2),
    ("shufflenet_v2_x1_0", 64, 128, "sgd", 400, 3),
    ("efficientnet_b0", 32, 64, "adam", 300, 3),
    ("resnet50", 64, 64, "sgd", 250, 3),
    ("vgg11_bn", 32, 128, "sgd", 400, 2),
]
# (layers, d, heads, seq, batch, optimizer, steps, copies): GPT-style byte-level LMs.
LANGUAGE = [
    (4, 256, 4, 256, 32, "adamw", 500, 2),
    (6, 384, 6, 256, 32, "adamw", 350, 2),
    (6, 512, 8, 128, 64, "adam", 300, 2),
]
# (spec, copies): colo's own training jobs.
COLO_TRAIN = [
    ("examples/quickstart.toml", 3),
    ("bench/sched/lenet_1epoch.toml", 4),
    ("bench/sched/resnet18_1epoch.toml", 3),
]
# Two-GPU variant: data-parallel ResNets under torchrun, (model, res, batch, steps, copies).
TWO_GPU = [("resnet18", 64, 128, 500, 2), ("resnet50", 64, 64, 250, 1)]

DATA_BYTES = {"vision": 60000 * 28 * 28 + 60000 * 8, "language": 16 << 20}


def vision_key(model, res, batch, opt):
    return f"vision:{model}:{res}:{batch}:{opt}"


def language_key(layers, d, heads, seq, batch, opt):
    return f"language:{layers}:{d}:{heads}:{seq}:{batch}:{opt}"


def estimate_all(path):
    """colo.estimate of every Python job's model, in bytes, into `path`."""
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))  # the built package (colo._core)
    sys.path.insert(0, HERE)
    import torch
    import colo
    import lm_job
    import vision_job

    out = {}
    for model, res, batch, opt, _, _ in VISION + [(m, r, b, "sgd", s, c) for m, r, b, s, c in TWO_GPU]:
        key = vision_key(model, res, batch, opt)
        if key in out:
            continue
        e = colo.estimate(vision_job.build(model), torch.randn(1, 3, res, res), batch_size=batch, optimizer=opt,
                          keep_output=False)
        out[key] = int(e.bytes) + DATA_BYTES["vision"]
        print(f"{key}: {out[key] / GiB:.2f} GiB", flush=True)
    for layers, d, heads, seq, batch, opt, _, _ in LANGUAGE:
        key = language_key(layers, d, heads, seq, batch, opt)
        model = lm_job.TinyGpt(layers, d, heads, seq)
        e = colo.estimate(model, torch.randint(0, 256, (1, seq)), batch_size=batch, optimizer=opt)
        out[key] = int(e.bytes) + DATA_BYTES["language"]
        print(f"{key}: {out[key] / GiB:.2f} GiB", flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


def toml_job(name, command, copies, mem=None, gpus=1, first=0):
    """One [[job]] table; an array of `copies` from index `first`."""
    lines = ["[[job]]", f'name = "{name}"', f"command = {json.dumps(command)}", f'workdir = "{HERE}"']
    if copies > 1 or first > 0:
        lines.append(f'array = "{first}-{copies - 1}"')
    if mem is not None:
        lines.append(f'mem = "{int(mem) >> 20}MiB"')
    if gpus > 1:
        lines.append(f"gpus = {gpus}")
    return "\n".join(lines) + "\n"


def rest_of(tables, first_job):
    """The [[job]] tables from expanded job `first_job` (1-based) on."""
    out, seen = [], 0
    for table in tables:
        lines = table.splitlines()
        array = [l for l in lines if l.startswith("array = ")]
        copies = int(array[0].split('"')[1].split("-")[1]) + 1 if array else 1
        if seen + copies >= first_job:
            skip = max(0, first_job - 1 - seen)
            if skip:
                lines = [l if not l.startswith("array = ") else f'array = "{skip}-{copies - 1}"' for l in lines]
            out.append("\n".join(lines) + "\n")
        seen += copies
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--estimate", action="store_true", help="refresh estimates.json with colo.estimate (CPU)")
    p.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    p.add_argument("--python", default="python3")
    p.add_argument("--out", default="jobs.toml")
    p.add_argument("--runs", default="/tmp/colo-real-trace", help="where colo train jobs write")
    p.add_argument("--two-gpu", action="store_true", help="the two-GPU variant (adds torchrun jobs)")
    p.add_argument("--from-job", type=int, default=1,
                   help="only the jobs from this one on (1-based, arrays expanded): the rest of a cut-off run")
    args = p.parse_args()
    estimates_path = os.path.join(HERE, "estimates.json")
    if args.estimate:
        estimate_all(estimates_path)
        return
    estimates = json.load(open(estimates_path))
    margin = 1.10  # the 10% colo adds to every estimate it makes itself
    jobs = []
    for model, res, batch, opt, steps, copies in VISION:
        command = f"{args.python} vision_job.py --model {model} --res {res} --batch {batch} --opt {opt} --steps {steps}"
        jobs.append(toml_job(f"{model}-{res}px-b{batch}-{opt}", command, copies,
                             estimates[vision_key(model, res, batch, opt)] * margin))
    for layers, d, heads, seq, batch, opt, steps, copies in LANGUAGE:
        command = (f"{args.python} lm_job.py --layers {layers} --d {d} --heads {heads} --seq {seq} --batch {batch} "
                   f"--opt {opt} --steps {steps}")
        jobs.append(toml_job(f"gpt-{layers}x{d}-s{seq}-b{batch}", command, copies,
                             estimates[language_key(layers, d, heads, seq, batch, opt)] * margin))
    for spec, copies in COLO_TRAIN:
        command = f"{args.colo} train {os.path.join(ROOT, spec)} --device cuda --out {args.runs}/$COLO_JOB_ID"
        jobs.append(toml_job("colo-" + os.path.basename(spec).replace(".toml", ""), command, copies))
    if args.two_gpu:
        for model, res, batch, steps, copies in TWO_GPU:
            command = (f"{args.python} -m torch.distributed.run --standalone --nproc_per_node 2 vision_job.py "
                       f"--model {model} --res {res} --batch {batch} --opt sgd --steps {steps}")
            jobs.append(toml_job(f"ddp2-{model}-{res}px-b{batch}", command, copies,
                                 estimates[vision_key(model, res, batch, "sgd")] * margin, gpus=2))
    if args.from_job > 1:
        jobs = rest_of(jobs, args.from_job)
    with open(args.out, "w") as f:
        f.write("# Made by bench/sched/real/make_jobs.py; work-bound, no sm_share anywhere.\n\n")
        f.write("\n".join(jobs))
    count = sum(c for *_, c in VISION) + sum(c for *_, c in LANGUAGE) + sum(c for _, c in COLO_TRAIN)
    if args.two_gpu:
        count += sum(c for *_, c in TWO_GPU)
    print(f"{args.out}: {count} jobs", file=sys.stderr)


if __name__ == "__main__":
    main()
