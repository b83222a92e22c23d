#!/usr/bin/env bash
# GPU machine, one call (issue 50): do convolution workspaces measured exactly
# (the kernels' requested bytes, from the allocator's trace) move the rows
# colo estimates low? Measures the committed H200 profile's contiguous shapes
# again into a copy of it (float32 for FP32_S seconds, then bf16 for BF16_S;
# a run cut short keeps the shapes it finished), then re-estimates the H200
# rows of RECHECK_ONLY with that copy, against the committed truth.
# Before that, with GRID=1, the grid shapes the tables lack go into colo's
# built-in tables and the committed profile (extend_tables_recheck.sh), and
# with PROBES=1 it runs the estimator's GPU-only tests and sdpa_choice.py on
# SDPA_ROWS. Everything lands in $OUT; one tarball, exact.tgz, holds the rest.
#
#   [GRID=1] [PROBES=1] [FP32_S=200] [BF16_S=100] [RECHECK_ONLY=resnet18,...] \
#     bash bench/estimate/exact_tables_check.sh
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
build=${BUILD:-build-gpu}
results=bench/results/estimate/real_training
if [ "${GRID:-0}" = 1 ]; then
  GRID=1 MEASURE_S=${GRID_S:-120} RECHECK=0 bash bench/estimate/extend_tables_recheck.sh
else
  BUILD_TARGETS=colo_core_module CMAKE_EXTRA=-DCOLO_BUILD_TESTS=OFF bash bench/gpu/run.sh none >>"$OUT/build.log" 2>&1
  cp python/colo/*.py "$build/python/colo/"
fi
mkdir -p "$OUT/exact/profiles"
if [ "${PROBES:-0}" = 1 ]; then
  PYTHONPATH="$build/python" timeout 120 python3 -m pytest -q -p no:cacheprovider tests/python/test_estimate.py \
    -k "grouped_query or on_a_gpu" >"$OUT/exact/pytest.log" 2>&1
  tail -2 "$OUT/exact/pytest.log"
  PYTHONPATH="$build/python" timeout 120 python3 bench/estimate/sdpa_choice.py \
    ${SDPA_ROWS:-lora:hf_t5:16:adamw bf16:hf_t5:16:adamw fp32:hf_t5:16:adamw bf16:hf_gpt_neox:16:adamw} \
    >"$OUT/exact/sdpa.jsonl" 2>"$OUT/exact/sdpa.err"
  python3 -c "
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r['row'], r.get('chosen'), r.get('calls'), (r.get('mask') or {}).get('shape'), (r.get('mask') or {}).get('grad'),
          r.get('dropout_p'), str(r.get('refused', {}).get('efficient'))[:160])" "$OUT/exact/sdpa.jsonl"
fi
exact=$OUT/exact/h200_exact.json
cp "$results/h200_profile.json" "$exact"
for table in float32 bf16; do
  seconds=${FP32_S:-200}; [ "$table" = bf16 ] && seconds=${BF16_S:-100}
  [ "${seconds:-0}" -gt 0 ] || continue
  PYTHONPATH="$build/python" COLO_PROFILE_DIR="$OUT/exact/profiles" timeout "$seconds" python3 -u \
    bench/estimate/extend_profile.py "$results/h200_profile.json" scratch --remeasure "$table" --max-batch 256 \
    --tables-out "$OUT/exact/$table.json" >"$OUT/exact/$table.log" 2>&1
  tail -1 "$OUT/exact/$table.log"
  [ -s "$OUT/exact/$table.json" ] && python3 bench/estimate/add_to_builtin_tables.py "$OUT/exact/$table.json" \
    --profile "$exact" --profile-only
done
export RECHECK_ONLY=${RECHECK_ONLY:-resnet18,regnet_y_1_6gf,efficientnet_b0,mobilenet_v2,convnext_tiny}
for name in committed exact; do
  profile=$results/h200_profile.json; [ "$name" = exact ] && profile=$exact
  bash bench/estimate/recheck_card.sh "$build" h200 "$OUT/exact/$name" "$profile" | sed "s/^/$name /"
done
rm -rf "$OUT/exact/profiles"
tar czf "$OUT/exact.tgz" -C "$OUT" exact && rm -rf "$OUT/exact"  # a call returns 8 files at most
