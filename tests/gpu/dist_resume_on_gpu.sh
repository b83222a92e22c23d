#!/usr/bin/env bash
# colo dist checkpoints on CUDA (NCCL, server shards on the GPU), on one GPU:
#   1. an allreduce run resumed from its checkpoint repeats the uninterrupted
#      run's losses after it (within 1e-4: cuBLAS may order sums differently);
#   2. a switch run (1 worker, 1 server on the GPU) killed with SIGKILL after
#      a checkpoint past its switch (fetched from the server) resumes from it,
#      does not switch again, and records every step once;
#   3. a synchronous parameter-server run resumed from its servers' state
#      repeats the uninterrupted run's losses (within 1e-4).
# Prints "ok:"/"FAIL:" lines and "N passed, M failed"; exits 1 on a failure.
#
#   tests/gpu/dist_resume_on_gpu.sh COLO OUT
set -uo pipefail
colo=$1 out=$2/dist_resume
device=${DIST_RESUME_DEVICE:-cuda}  # cpu: the same checks here, on Gloo
rm -rf "$out" && mkdir -p "$out"
failures=0 checks=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  checks=$((checks + 1))
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); return 1; fi
}
spec() {  # spec NAME STRATEGY STEPS: a Fashion-MNIST MLP cluster file on cuda
  cat >"$out/$1.toml" <<TOML
seed = 4
device = "$device"
output = "$out/$1"
epochs = 100
max_steps = $3
batch_size = 64
[model]
name = "mlp"
widths = [256, 128]
[data]
name = "fashion-mnist"
prefetch = 0
train_limit = 8192
[optimizer]
name = "sgd"
lr = 0.05
momentum = 0.9
[cluster]
workers = 1
servers = 1
strategy = "$2"
checkpoint_steps = 25
eval_every = 100
[switch]
rule = "sync-switch"
fraction = 0.1
TOML
}

same_losses() {  # same_losses FIRST SECOND FROM TO: rank 0's losses of steps FROM..TO agree within 1e-4
  /usr/bin/env python3 - "$@" <<'PY'
import json, sys
first, second, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def losses(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if lo <= r["step"] <= hi}
a, b = losses(first), losses(second)
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in range(lo, hi + 1))
print(f"  steps {lo}-{hi}: largest relative loss difference {worst:.2e}")
sys.exit(0 if worst < 1e-4 else 1)
PY
}
every_step_once() {  # every_step_once FILE N
  /usr/bin/env python3 -c "
import json, sys
steps = [json.loads(l)['step'] for l in open(sys.argv[1])]
sys.exit(0 if steps == list(range(1, int(sys.argv[2]) + 1)) else 1)" "$@"
}
result() {  # result RUN EXPR: a Python expression over result.json's object r
  /usr/bin/env python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$out/$1/result.json"
}

# 1. allreduce: 110 steps, the last checkpoint at 100.
spec ar allreduce 110
"$colo" dist "$out/ar.toml" >"$out/ar-1.log" 2>&1
cp "$out/ar/steps-rank0.jsonl" "$out/ar-first.jsonl"
"$colo" dist "$out/ar.toml" --resume >"$out/ar-2.log" 2>&1
check "allreduce on $device resumes at step 100" grep -q "resuming at step 100" "$out/ar-2.log"
check "its steps 101-110 repeat the first run's losses" same_losses "$out/ar-first.jsonl" "$out/ar/steps-rank0.jsonl" 101 110
check "every allreduce step is recorded once" every_step_once "$out/ar/steps-rank0.jsonl" 110

# 2. switch: 600 steps, switches at 60; killed once a checkpoint after the
#    switch (taken from the server on the GPU) is committed.
spec sw switch 600
"$colo" dist "$out/sw.toml" >"$out/sw-1.log" 2>&1 &
launcher=$!
committed() { /usr/bin/env python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" \
                "$out/sw/checkpoint/latest.json" 2>/dev/null || echo 0; }
for _ in $(seq 1200); do
  [ "$(committed)" -ge 75 ] && break
  sleep 0.05
done
pids=$(/usr/bin/env python3 -c "import json; print(' '.join(str(p['pid']) for p in json.load(open('$out/sw/processes.json'))))")
kill -9 $launcher $pids 2>/dev/null
wait $launcher 2>/dev/null
killed_at=$(committed)
check "the switch run was killed after a checkpoint past its switch (step $killed_at)" \
  test ! -e "$out/sw/result.json" -a "$killed_at" -ge 75
"$colo" dist "$out/sw.toml" --resume >"$out/sw-2.log" 2>&1
check "it resumes at step $killed_at on $device" grep -q "resuming at step $killed_at " "$out/sw-2.log"
check "it does not switch again, and ends at 600" result sw "r['switched_at_step'] == 60 and r['steps'] == 600 and r['resumed']"
check "every switch step is recorded once" every_step_once "$out/sw/steps-rank0.jsonl" 600
check "the resumed switch run trained (test accuracy > 0.7)" result sw "r['test_accuracy'] > 0.7"

# 3. synchronous parameter server: 110 steps, the last checkpoint (the server's state) at 100.
spec ps param_server 110
sed -i 's/^\[switch\]$/[param_server]\nmode = "sync"\n[switch]/' "$out/ps.toml"
"$colo" dist "$out/ps.toml" >"$out/ps-1.log" 2>&1
cp "$out/ps/steps-rank0.jsonl" "$out/ps-first.jsonl"
"$colo" dist "$out/ps.toml" --resume >"$out/ps-2.log" 2>&1
check "a sync parameter-server run resumes at step 100" grep -q "resuming at step 100" "$out/ps-2.log"
check "its steps 101-110 repeat the first run's losses" same_losses "$out/ps-first.jsonl" "$out/ps/steps-rank0.jsonl" 101 110

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
