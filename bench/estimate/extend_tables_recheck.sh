#!/usr/bin/env bash
# GPU machine, one call (issue 50): measures convolution workspaces the
# committed tables lack on this GPU, adds them to colo's built-in tables and
# to the committed H200 profile, rebuilds colo._core, and re-estimates (run.sh recheckboth) the
# real_training rows against both cards' committed truth. Everything lands
# in $OUT as two tarballs, tables.tgz and rechecks.tgz; copy back src/colo/estimate/profiles/*.json, h200_profile.json and
# the rows (bench/estimate/adopt_recheck.py).
#
#   GRID=1 CHANNELS_LAST=1 [DEPTHWISE=1] [KERNEL=7] [MAX_BATCH=64] [MEASURE_S=200] \
#     [RECHECK_ONLY=convnext_tiny,...] bench/estimate/extend_tables_recheck.sh
#
# REMEASURE=float32|bf16: that table's shapes measured again (SHAPES=FILE: those
# listed only), replacing their entries (extend_profile.py --remeasure).
# GRID=1: the shapes of measure_conv_workspace's ImageNet grid that the tables
# lack (built here); CHANNELS_LAST=1: channels-last twins (DEPTHWISE=1, KERNEL
# narrow them: about 3 s a shape in float32 at 9 batches on an H200).
# RECHECK_ONLY empty: every row (about 5 min with 8 estimators). Two calls when
# one is too short: MEASURE=1 RECHECK=0, copy the tables back and commit them,
# then MEASURE=0 RECHECK=1 (the tables as committed).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
build=${BUILD:-build-gpu}
# A device call returns 8 files at most (session 21 lost a recheck to that): at the end, everything
# in $OUT but the tarballs goes into tables.tgz (the tables, the profile, the logs).
pack() { (cd "$OUT" && find . -type f ! -name '*.tgz' -print0 | tar czf tables.tgz --null -T - --remove-files); }
trap pack EXIT
results=bench/results/estimate/real_training
targets=colo_core_module
[ "${GRID:-0}" = 1 ] && targets="colo_core_module measure_conv_workspace"
built() { BUILD_TARGETS="$targets" CMAKE_EXTRA=-DCOLO_BUILD_TESTS=OFF bash bench/gpu/run.sh none >>"$OUT/build.log" 2>&1; }
built
cp python/colo/*.py "$build/python/colo/"
measure_tables() {  # the shapes asked for, into the built-in tables and the H200 profile; rebuilt
  local args=()
  if [ -n "${REMEASURE:-}" ]; then  # REMEASURE=float32|bf16 [SHAPES=FILE]: measured again, by trace
    args+=(--remeasure "$REMEASURE")
    [ -n "${SHAPES:-}" ] && args+=(--shapes-file "$SHAPES")
  elif [ "${GRID:-0}" = 1 ]; then
    "$build/bench/measure_conv_workspace" --out - --list-grid >"$OUT/grid_keys.txt"
    args+=(--shapes-file "$OUT/grid_keys.txt")
  fi
  [ "${CHANNELS_LAST:-0}" = 1 ] && args+=(--channels-last)
  [ "${DEPTHWISE:-0}" = 1 ] && args+=(--depthwise-only)
  [ -n "${KERNEL:-}" ] && args+=(--kernel "$KERNEL")
  mkdir -p "$OUT/profiles"
  COLO_PROFILE_DIR="$OUT/profiles" PYTHONPATH="$build/python" timeout "${MEASURE_S:-200}" python3 -u \
    bench/estimate/extend_profile.py "$results/h200_profile.json" h200new "${args[@]}" \
    --max-batch "${MAX_BATCH:-256}" --tables-out "$OUT/new_tables.json" >"$OUT/extend.log" 2>&1
  tail -3 "$OUT/extend.log"
  [ -s "$OUT/new_tables.json" ] || { echo "no tables measured"; exit 3; }
  python3 bench/estimate/add_to_builtin_tables.py "$OUT/new_tables.json" --profile "$results/h200_profile.json" \
    --note "bench/estimate/extend_tables_recheck.sh (${args[*]}) on an H200 ($(date -u +%F))"
  cp src/colo/estimate/profiles/h100_conv_workspace.json src/colo/estimate/profiles/h200_conv_workspace_bf16.json \
    "$results/h200_profile.json" "$OUT/"
  built
}
[ "${MEASURE:-1}" = 1 ] && measure_tables
[ "${RECHECK:-1}" = 1 ] || exit 0
BUILD_TARGETS="$targets" CMAKE_EXTRA=-DCOLO_BUILD_TESTS=OFF bash bench/gpu/run.sh recheckboth >"$OUT/recheck.log" 2>&1
grep -E "^h(100|200): " "$OUT/recheck.log"
rm -rf "$OUT/recheck_h100" "$OUT/recheck_h200" "$OUT/profiles"  # in rechecks.tgz
