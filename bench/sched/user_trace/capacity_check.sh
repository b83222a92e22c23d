#!/usr/bin/env bash
# How much more work K copies of one user-trace job do at once under MPS than
# one alone (issue 49: is a GPU's capacity for a job 1 / its SM activity
# alone?). For each NAME:STEPS of CAPACITY_RUNS (names of jobs.json, steps
# shortened) and each K of KS, starts K copies together under one MPS daemon,
# and appends one JSON line to $OUT/capacity.jsonl: each copy's steady
# steps/s (the script's own final line), their sum, and the GPU's mean SM
# activity (GPM, nvidia-smi dmon) over the run. Lines are written as runs
# end, so a call cut short keeps the runs it finished.
#
#   [CAPACITY_RUNS="resnet50-b64-sgd:200 ..."] [KS="1 2 4"] bash bench/sched/user_trace/capacity_check.sh
#
# GPU machine; Python jobs only (no build needed). MPS runs with a private
# pipe directory and is quit on exit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
jobs_json=$here/../../results/sched/user_trace/jobs.json
out=${OUT:-/tmp/capacity}
mkdir -p "$out"
runs=${CAPACITY_RUNS:-resnet50-b64-sgd:200 bert-s128-b64-adamw-bf16:300 lora-opt-350m-r8-s256-b16-bf16:120}
export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
nvidia-cuda-mps-control -d || { echo "capacity_check.sh: MPS did not start" >&2; exit 1; }
trap 'echo quit | nvidia-cuda-mps-control' EXIT
sleep 1
work=$(mktemp -d)
for run in $runs; do
  name=${run%%:*} steps=${run#*:}
  command=$(python3 - "$jobs_json" "$name" "$steps" <<'EOF'
import json, re, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
job = next((j for j in jobs if j["name"] == sys.argv[2]), None)
if job is None or job.get("colo_train"):
    sys.exit(f"capacity_check.sh: no Python job {sys.argv[2]} in {sys.argv[1]}")
print(re.sub(r"--steps \d+", f"--steps {sys.argv[3]}", job["command"]))
EOF
  ) || exit 2
  for k in ${KS:-1 2 4}; do
    nvidia-smi dmon --gpm-metrics 2 -d 1 >"$work/dmon.txt" 2>&1 &
    dmon=$!
    started=$(date +%s.%N)
    pids=()
    for ((i = 0; i < k; i++)); do
      (cd "$here" && $command --seed "$i" >"$work/copy$i.out" 2>"$work/copy$i.err") &
      pids+=($!)
    done
    wait "${pids[@]}"
    ended=$(date +%s.%N)
    kill "$dmon" 2>/dev/null; wait "$dmon" 2>/dev/null
    python3 - "$work" "$name" "$steps" "$k" "$started" "$ended" >>"$out/capacity.jsonl" <<'EOF'
import json, os, sys
work, name, steps, k, started, ended = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *map(float, sys.argv[5:7])
rates, errors = [], []
for i in range(k):
    lines = [l for l in open(os.path.join(work, f"copy{i}.out")) if l.startswith("{")]
    line = json.loads(lines[-1]) if lines else {}
    rates.append(line.get("steady_steps_per_s"))
    if not lines:
        errors.append(open(os.path.join(work, f"copy{i}.err")).read()[-300:])
sm = []  # dmon's last column: GPM SM activity, %; "-" until GPM has a sample
for l in open(os.path.join(work, "dmon.txt")):
    fields = l.split()
    if fields and fields[0].isdigit() and fields[-1].replace(".", "", 1).isdigit():
        sm.append(float(fields[-1]) / 100)
busy = sorted(sm)[len(sm) // 4:] if sm else []  # start-ups left out: the busiest three quarters
print(json.dumps({"job": name, "steps": steps, "copies": k, "steady_steps_per_s": rates,
                  "sum_steps_per_s": round(sum(r for r in rates if r), 3), "wall_s": round(ended - started, 1),
                  "sm_active_mean_busy": round(sum(busy) / len(busy), 3) if busy else None,
                  "sm_samples": len(sm), "errors": errors}))
EOF
    tail -1 "$out/capacity.jsonl" | cut -c1-240
  done
done
head -3 "$work/dmon.txt" >"$out/dmon_header.txt"
