#!/usr/bin/env bash
# GPU machine, one call (issue 50, session 20): measures the channels-last
# twins of the reference table's depthwise convolutions on this GPU (float32
# and bf16), adds them to colo's built-in tables and to the committed H200
# profile, rebuilds colo._core, and re-estimates the real_training rows of
# RECHECK_ONLY (default the architectures the change touches) against both
# cards' committed truth. Everything lands in $OUT.
#
#   bench/estimate/channels_last_recheck.sh
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
build=${BUILD:-build-gpu}
results=bench/results/estimate/real_training
only=${RECHECK_ONLY:-convnext_tiny,hf_llama}
built() { BUILD_TARGETS=colo_core_module CMAKE_EXTRA=-DCOLO_BUILD_TESTS=OFF bash bench/gpu/run.sh none >>"$OUT/build.log" 2>&1; }
built
cp python/colo/*.py "$build/python/colo/"
mkdir -p "$OUT/profiles"
COLO_PROFILE_DIR="$OUT/profiles" PYTHONPATH="$build/python" timeout "${MEASURE_S:-200}" python3 -u \
  bench/estimate/extend_profile.py "$results/h200_profile.json" h200cl --channels-last --depthwise-only \
  ${KERNEL:+--kernel $KERNEL} --max-batch "${MAX_BATCH:-256}" --tables-out "$OUT/cl_tables.json" >"$OUT/extend.log" 2>&1
tail -3 "$OUT/extend.log"
[ -s "$OUT/cl_tables.json" ] || { echo "no tables measured"; exit 3; }
python3 bench/estimate/add_to_builtin_tables.py "$OUT/cl_tables.json" --profile "$results/h200_profile.json" \
  --note "channels-last twins of the depthwise shapes: bench/estimate/extend_profile.py --channels-last --depthwise-only on an H200 ($(date -u +%F))"
cp src/colo/estimate/profiles/h100_conv_workspace.json src/colo/estimate/profiles/h200_conv_workspace_bf16.json \
  "$results/h200_profile.json" "$OUT/"
built
for card in h100 h200; do
  mkdir -p "$OUT/recheck_$card/profiles"
  [ "$card" = h200 ] && cp "$results/h200_profile.json" "$OUT/recheck_$card/profiles/h200.json"
  COLO_PROFILE_DIR="$OUT/recheck_$card/profiles" PYTHONPATH="$build/python" python3 bench/estimate/real_training.py \
    recheck --truth "$results/rows_$card.jsonl" --out "$OUT/recheck_$card" --gpu "$card" --only "$only" \
    --estimators 8 2>"$OUT/recheck_$card/stderr.log" | grep -v "^{" | sed "s/^/$card: /"
done
(cd tests/python && PYTHONPATH="../../$build/python" COLO_EXECUTABLE=/bin/false timeout 120 python3 -m pytest -q \
  -p no:cacheprovider test_estimate.py -k "channels_last or grouped_query" 2>&1 | tail -3)
