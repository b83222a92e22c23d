#!/usr/bin/env bash
# GPU machine: colo's replayed allocations (COLO_ESTIMATE_TRACE) and the real
# allocator's trace (alloc_trace.py) of the same rows, for finding where
# colo's modelled step departs from PyTorch's. A row is MODEL:BATCH:OPT of
# real_models.py or SETUP:MODEL:BATCH:OPT of real_training.py. colo's
# estimates run PAIR_PARALLEL at a time (default 4, 4 threads each) while the
# real traces run one after another on the GPU.
#
#   bench/estimate/trace_pair.sh BUILD OUT ROW [...]
set -uo pipefail
build=$1 out=$2
shift 2
mkdir -p "$out"
estimate_one() {
  local row=$1
  COLO_ESTIMATE_TRACE="$out/colo_${row//:/_}.trace" PYTHONPATH="$build/python" python3 - "$row" <<'PY'
import sys
sys.path.insert(0, "bench/estimate")
import colo, real_models
parts = sys.argv[1].split(":")
if len(parts) == 3:
    name, batch, opt = parts[0], int(parts[1]), parts[2]
    _, build, example, _ = real_models.MODELS[name]
    print(sys.argv[1], colo.estimate(build(), example(), batch_size=batch, optimizer=opt))
else:
    import real_training
    setup, name, batch, opt = parts[0], parts[1], int(parts[2]), parts[3]
    row = next(r for r in real_training.all_rows()
               if (r["setup"], r["model"], r["batch"], r["optimizer"]) == (setup, name, batch, opt))
    print(sys.argv[1], real_training.estimate_row(row, 4))
PY
}
export -f estimate_one
export build out
printf '%s\n' "$@" | xargs -P "${PAIR_PARALLEL:-4}" -I{} bash -c 'estimate_one "$1" > "$out/colo_$(echo "$1" | tr : _).txt" 2>&1' _ {} &
estimates=$!
# One fresh process a row: a process that trained one row first reserves differently for the next
# (cuBLAS's workspaces and the cached segments stay), where the validation's truth is a fresh process.
for row in "$@"; do
  PYTHONPATH="$build/python" python3 bench/estimate/alloc_trace.py "$row" --out "$out"
done
wait "$estimates"
cat "$out"/colo_*.txt | grep -v Warning
