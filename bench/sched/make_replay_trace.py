"""Writes the replay trace of the GPU check: 40 real training jobs arriving
within ~15 s (Poisson), mixing `colo train` specs and plain PyTorch scripts.
Six hold 24 GiB each (at most three fit an 80 GiB GPU at once) and two
declare 2 GiB but take 40 GiB, so blind collocation would run out of memory.

    python3 bench/sched/make_replay_trace.py COLO_BINARY OUT.csv
"""
import random
import sys

colo, out = sys.argv[1], sys.argv[2]
rng = random.Random(5)
GiB = 2**30
jobs = []
for i in range(20):
    jobs.append((f"mlp-{i}", f"{colo} train examples/quickstart.toml --device cuda --out /tmp/colo-replay/$COLO_JOB_ID",
                 int(1.5 * GiB), 0.15))
for i in range(8):
    jobs.append((f"lenet-{i}", f"{colo} train bench/sched/lenet_1epoch.toml --device cuda --out /tmp/colo-replay/$COLO_JOB_ID",
                 int(1.5 * GiB), 0.2))
for i in range(4):
    jobs.append((f"resnet18-{i}", f"{colo} train bench/sched/resnet18_1epoch.toml --device cuda --out /tmp/colo-replay/$COLO_JOB_ID",
                 4 * GiB, 0.6))
for i in range(6):
    jobs.append((f"torch-big-{i}", "python3 bench/sched/torch_job.py --seconds 5 --hold-gib 24 --size 2048",
                 25 * GiB, 0.3))
for i in range(2):
    jobs.append((f"torch-liar-{i}", "python3 bench/sched/torch_job.py --seconds 5 --hold-gib 40 --size 2048",
                 2 * GiB, 0.3))
rng.shuffle(jobs)
t = 0.0
with open(out, "w") as f:
    f.write("submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,command\n")
    for name, command, estimate, sm in jobs:
        f.write(f"{t:.2f},{name},10,{estimate},{sm},{estimate},0,{command}\n")
        t += rng.expovariate(1 / 0.35)
