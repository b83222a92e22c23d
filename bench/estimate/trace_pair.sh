#!/usr/bin/env bash
# GPU machine: colo's replayed allocations (COLO_ESTIMATE_TRACE) and the real
# allocator's trace (alloc_trace.py) of the same rows of real_models.py, for
# finding where colo's modelled step departs from PyTorch's.
#
#   bench/estimate/trace_pair.sh BUILD OUT MODEL:BATCH:OPT [...]
set -uo pipefail
build=$1 out=$2
shift 2
mkdir -p "$out"
for row in "$@"; do
  IFS=: read -r model batch opt <<<"$row"
  COLO_ESTIMATE_TRACE="$out/colo_${model}_${batch}_${opt}.trace" PYTHONPATH="$build/python" python3 - "$model" "$batch" "$opt" <<'PY'
import sys
sys.path.insert(0, "bench/estimate")
import colo, real_models
name, batch, opt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
_, build, example, _ = real_models.MODELS[name]
print(name, batch, opt, colo.estimate(build(), example(), batch_size=batch, optimizer=opt))
PY
done
python3 bench/estimate/alloc_trace.py "$@" --out "$out"
