#!/usr/bin/env bash
# colo on a real Slurm (slurm_cluster.sh: one host, two 80 GiB GPUs declared
# to Slurm, 1 GiB shards). Checks, from squeue/scontrol and colo slurm status:
#   1. jobs are packed by their memory: 36 GiB jobs run two to a GPU, a fifth waits;
#   2. a job that dies the way a CUDA OOM does is resubmitted with 10% more memory
#      and completes; one that always does so fails after its retries, with the reason;
#   3. restarting slurmctld while jobs run loses nothing;
#   4. a job larger than a GPU is refused at submission, and nothing is submitted;
#   5. colo dist trains across the tasks of an allocation under srun (ranks from SLURM_PROCID);
#   6. a colo dist batch job that Slurm requeues mid-run resumes from its checkpoint (--resume-if-any).
#
#   real_slurm_test.sh COLO   (exit 77: Slurm cannot run here; ctest reports a skip)
set -uo pipefail
colo=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/colo-slurm-test.XXXXXX)
cluster=$work/cluster
trap 'bash "$here/slurm_cluster.sh" stop "$cluster"; rm -rf "$work" || true' EXIT
env_line=$(bash "$here/slurm_cluster.sh" start "$cluster" "$colo") || exit $?
eval "$env_line"

failures=0
checks=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  checks=$((checks + 1))
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); return 1; fi
}
wait_until() {  # wait_until SECONDS COMMAND...
  local limit=$1; shift
  for _ in $(seq $((limit * 4))); do "$@" && return 0; sleep 0.25; done
  return 1
}
json() {  # json FILE EXPR: a Python expression over the status file's object `s`
  /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$1"
}

cd "$work"
hold="while [ ! -e $work/release ]; do sleep 0.2; done"
cat >jobs.toml <<TOML
[[job]]
name = "packed"
command = "$hold"
mem = "36GiB"
array = "0-3"

[[job]]
name = "waits"
command = "$hold"
mem = "36GiB"

[[job]]
name = "oom-once"
command = "if [ \"\$COLO_SLURM_ATTEMPT\" = 2 ]; then echo trained; else echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'; exit 1; fi"
mem = "4GiB"
TOML
cat >always_oom.toml <<TOML
name = "oom-always"
command = "echo 'RuntimeError: CUDA error: out of memory'; exit 1"
mem = "2GiB"
TOML
cat >too_big.toml <<TOML
name = "too-big"
command = "true"
mem = "100GiB"
TOML

"$colo" slurm submit jobs.toml --state "$work/state" >submit.txt 2>&1 || { cat submit.txt; exit 1; }
"$colo" slurm submit always_oom.toml --state "$work/state" --max-retries 1 >>submit.txt 2>&1 || { cat submit.txt; exit 1; }

# The batch scripts run the thin colo beside colo-torch: `slurm exec` needs no LibTorch start-up.
thin_colo_runs_jobs() {
  grep -rqs "/colo' slurm exec\|/colo slurm exec" "$work/state" && ! grep -rqs "colo-torch'* slurm exec" "$work/state"
}
check "the batch scripts run the thin colo, not colo-torch" thin_colo_runs_jobs
running() { [ "$(squeue -h -t RUNNING -n packed -o %i | wc -l)" -eq "$1" ]; }
check "four 36 GiB array tasks run at once on two 80 GiB GPUs" wait_until 30 running 4
# squeue may time out while a loaded host's slurmctld is busy, and a job's reason
# reads None until a scheduling pass has looked at it: ask again for a while.
fifth_line=""
fifth_waits() {
  fifth_line=$(squeue -h -n waits -o '%T %r' 2>&1)
  [ "$fifth_line" = "PENDING Resources" ] || [ "$fifth_line" = "PENDING Priority" ]
}
check "a fifth 36 GiB job waits for resources" wait_until 20 fifth_waits ||
  echo "  squeue said for it: '$fifth_line'"
packed_gres() { [ "$(squeue -h -n packed -o %b 2>/dev/null | sort -u)" = "gres:shard:36" ]; }
check "Slurm was asked for 36 shards per task" wait_until 10 packed_gres

bash "$here/slurm_cluster.sh" restart-ctld "$cluster"
check "slurmctld answers again after its restart" scontrol ping
check "the four tasks still run after the restart" wait_until 10 running 4

touch "$work/release"
done_all() {
  "$colo" slurm status --state "$work/state" --json status.json >status.txt 2>&1 &&
    [ "$(json status.json "s['jobs_completed'] + s['jobs_failed'] + s['lost']")" -eq 7 ]
}
check "every job ends" wait_until 90 done_all
cat status.txt
check "six jobs completed, one failed, none lost" \
  test "$(json status.json "(s['jobs_completed'], s['jobs_failed'], s['lost'])")" = "(6, 1, 0)"
check "jobs shared GPUs (two or more at once on one)" test "$(json status.json "s['max_jobs_per_gpu'] >= 2")" = True
# From colo's attempt records: what ran at once on each GPU never asked for more than its 80 GiB.
peak_asked() {
  /usr/bin/python3 - "$work/state/attempts" <<'PY'
import glob, json, sys
events = {}
for path in glob.glob(sys.argv[1] + "/*.json"):
    a = json.load(open(path))
    for gpu in a["gpus"].split(","):
        events.setdefault(gpu, []).extend([(a["start_unix"], a["mem_bytes"]), (a["end_unix"], -a["mem_bytes"])])
worst = 0
for gpu, ev in events.items():
    used = 0
    for _, delta in sorted(ev, key=lambda e: (e[0], e[1])):
        used += delta
        worst = max(worst, used)
print(worst / 2**30)
PY
}
check "jobs at once on a GPU never asked for more than its memory" \
  /usr/bin/python3 -c "import sys; sys.exit(0 if 72 <= float(sys.argv[1]) <= 80 else 1)" "$(peak_asked)"
retry=$(json status.json "[j['job_id'] for j in s['jobs'] if j['name'] == 'oom-once'][0]")
first=$(json status.json "[j['first_id'] for j in s['jobs'] if j['name'] == 'oom-once'][0]")
check "the OOM death was resubmitted as a new job" test "$retry" != "$first"
check "its retry asked Slurm for 10% more memory (5 shards)" \
  sh -c "scontrol show job $retry | grep -q 'TresPerNode=gres:shard:5'"
check "its retry completed" sh -c "scontrol show job $retry | grep -q 'JobState=COMPLETED'"
check "the first attempt's Comment says it was retried" \
  sh -c "scontrol show job $first | grep -q 'Comment=colo: attempt 1.*OUT_OF_MEMORY, retried as $retry'"
check "oom-always failed after one retry, saying why" \
  test "$(json status.json "[(j['state'], j['oom_retries'], 'after 1 retries' in j['reason']) for j in s['jobs'] if j['name'] == 'oom-always'][0]")" = "('FAILED', 1, True)"
check "two OOM deaths were requeued" test "$(json status.json "s['oom_requeued']")" = 2

before=$(squeue -h | wc -l)
"$colo" slurm submit too_big.toml --state "$work/state" >too_big.txt 2>&1
code=$?
check "a job larger than a GPU is refused with exit 2" test "$code" = 2
check "the refusal names the job and the GPU's size" grep -q "too-big: needs 100.0 GiB (100 shards), more than one GPU" too_big.txt
check "nothing was submitted" test "$(squeue -h | wc -l)" = "$before"

# colo dist under srun: two tasks, each a rank of one data-parallel run (Gloo on the CPU).
sed -e 's/^epochs = .*/epochs = 1/' -e 's/^widths = .*/widths = [32]/' -e "s#^output = .*#output = \"$work/dist\"#" \
  "$here/../../examples/cluster.toml" >cluster.toml
cat >dist.sbatch <<SBATCH
#!/bin/sh
#SBATCH --ntasks=2
#SBATCH --output=$work/dist-%j.out
export MASTER_ADDR=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=\$((20000 + SLURM_JOB_ID % 20000))
srun "$colo" dist cluster.toml
SBATCH
timeout 240 sbatch --wait dist.sbatch >/dev/null
check "colo dist under srun ran two ranks to the end" \
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r.get('workers') == 2 else 1)" \
  "$work/dist/result.json"
check "each rank wrote its steps" test -s "$work/dist/steps-rank0.jsonl" -a -s "$work/dist/steps-rank1.jsonl"

# A requeued colo dist batch job resumes from its checkpoint (--resume-if-any):
# Slurm kills the running job and starts it again, with the same command line.
sed -e 's/^epochs = .*/epochs = 6/' -e 's/^widths = .*/widths = [32]/' -e "s#^output = .*#output = \"$work/requeued\"#" \
  -e 's/^\[cluster\]$/[cluster]\ncheckpoint_steps = 100/' "$here/../../examples/cluster.toml" >requeued.toml
cat >requeued.sbatch <<SBATCH
#!/bin/sh
#SBATCH --ntasks=2
#SBATCH --requeue
#SBATCH --output=$work/requeued-%j.out
echo "attempt \${SLURM_RESTART_COUNT:-0}" >>$work/requeued-attempts.txt
export MASTER_ADDR=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=\$((20000 + SLURM_JOB_ID % 20000 + 10 * \${SLURM_RESTART_COUNT:-0}))
srun "$colo" dist requeued.toml --resume-if-any
SBATCH
requeued_id=$(sbatch --parsable requeued.sbatch)
committed() { [ -s "$work/requeued/checkpoint/latest.json" ]; }
if wait_until 60 committed && [ ! -e "$work/requeued/result.json" ]; then
  scontrol requeue "$requeued_id"
  # Slurm holds a requeued job back 2 minutes (reason BeginTime). Release it
  # once it is pending again and the first attempt's step daemons are gone:
  # slurmd refuses a start whose credential predates its revoking of the
  # first attempt's ("Job credential revoked").
  requeued_pending() {
    squeue -h -j "$requeued_id" -o %T 2>/dev/null | grep -qx PENDING && ! pgrep -f "slurmstepd: \[$requeued_id\." >/dev/null
  }
  wait_until 60 requeued_pending
  sleep 1
  scontrol update JobId="$requeued_id" StartTime=now
fi
requeued_done() { [ "$(squeue -h -j "$requeued_id" 2>/dev/null | wc -l)" -eq 0 ] && [ -s "$work/requeued/result.json" ]; }
check "the requeued colo dist job ended" wait_until 120 requeued_done
check "it ran twice: Slurm killed the first attempt mid-run" \
  test "$(cat "$work/requeued-attempts.txt" 2>/dev/null | tr '\n' ' ')" = "attempt 0 attempt 1 " || {
  echo "  attempts: $(cat "$work/requeued-attempts.txt" 2>/dev/null | tr '\n' ' ')"
  scontrol show job "$requeued_id" | grep -E "JobState|Restarts|Reason" | sed 's/^/  /'
  tail -n 5 "$work"/requeued-*.out 2>/dev/null | sed 's/^/  /'
}
check "the second attempt resumed from the first one's checkpoint" \
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['resumed'] and r['steps'] == 6 * 468 else 1)" \
  "$work/requeued/result.json"
check "every step is recorded once" /usr/bin/python3 -c "
import json, sys
steps = [json.loads(l)['step'] for l in open(sys.argv[1])]
sys.exit(0 if steps == list(range(1, 6 * 468 + 1)) else 1)" "$work/requeued/steps-rank1.jsonl"

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
