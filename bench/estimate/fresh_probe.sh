#!/usr/bin/env bash
# GPU machine: why a fresh training process reserves more than colo's replay
# (issue 50's frozen-backbone rows). For each ROW (SETUP:MODEL:BATCH:OPT of
# real_training.py):
#   - fresh/warm: one process traces the row twice (alloc_trace.py --repeat 2):
#     the first trace is the process's first training, the second runs after
#     empty_cache in the same process;
#   - crowd: the row's reserved peak alone, then in 6 fresh processes at once
#     (as the validation's truth runs them).
# OUT/ROW.json and OUT/ROW.r2.json are the traces; OUT/crowd.jsonl the peaks.
#
#   bench/estimate/fresh_probe.sh OUT ROW [...]
set -uo pipefail
out=$1
shift
mkdir -p "$out"
here=$(dirname "$0")
peak_of() {  # one fresh process: the row's 4 steps, its reserved and allocated peak
  python3 - "$1" <<'PY'
import json, sys
sys.path.insert(0, "bench/estimate")
import torch, alloc_trace
setup, name, batch, opt = sys.argv[1].split(":")
alloc_trace.setup_loop(setup, name, int(batch), opt)()
torch.cuda.synchronize()
print(json.dumps({"row": sys.argv[1], "max_reserved": torch.cuda.max_memory_reserved(),
                  "max_allocated": torch.cuda.max_memory_allocated()}))
PY
}
for row in "$@"; do
  python3 "$here/alloc_trace.py" "$row" --repeat 2 --stacks "${PROBE_STACKS:-python}" --out "$out" 2>&1 \
    | grep -v Warning
  { peak_of "$row" | sed 's/}$/, "crowd": 1}/'; } >>"$out/crowd.jsonl"
  for i in 1 2 3 4 5 6; do peak_of "$row" | sed 's/}$/, "crowd": 6}/' >>"$out/crowd.jsonl" & done
  wait
done
cat "$out/crowd.jsonl"
