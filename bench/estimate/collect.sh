#!/usr/bin/env bash
# Measures the peak GPU memory of random colo training jobs on this GPU.
#   bench/estimate/collect.sh BUILD OUT [ROWS] [WORKERS] [TIME_LIMIT_S] [START]
# Writes OUT/estimate/context.jsonl (the CUDA context of a fresh process per
# model family) and OUT/estimate/memory_rows.csv (one row per job). Workers
# share the GPU; each measures its own process's allocator, so they do not
# disturb each other's peaks (a job that finds the GPU full is reported and
# skipped).
set -uo pipefail
BUILD=${1:?build dir}; OUT=${2:?out dir}
ROWS=${3:-2400}; WORKERS=${4:-4}; LIMIT=${5:-420}; START=${6:-0}
# Work in a scratch folder; only the merged rows, contexts and logs go to OUT.
dir=${SCRATCH:-/tmp/colo-estimate}
rm -rf "$dir"; mkdir -p "$dir" "$OUT/estimate"
bin="$BUILD/bench/collect_memory"
for model in mlp lenet resnet transformer; do
  "$bin" --context-only "$model" >>"$dir/context.jsonl" 2>>"$dir/collect.log"
done
per=$(( (ROWS + WORKERS - 1) / WORKERS ))
threads=$(( $(nproc) / WORKERS ))
pids=()
for ((w = 0; w < WORKERS; w++)); do
  "$bin" --out "$dir/rows-$w.csv" --start $((START + w * per)) --rows "$per" --seed 1 \
    --threads "$threads" --time-limit "$LIMIT" 2>>"$dir/collect-$w.log" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
head -1 "$dir/rows-0.csv" >"$dir/memory_rows.csv"
for ((w = 0; w < WORKERS; w++)); do tail -n +2 "$dir/rows-$w.csv" >>"$dir/memory_rows.csv"; done
cp "$dir/memory_rows.csv" "$dir/context.jsonl" "$OUT/estimate/"
cat "$dir"/collect*.log >"$OUT/estimate/collect.log"
echo "estimate: $(( $(wc -l <"$dir/memory_rows.csv") - 1 )) rows, $(cat "$dir"/collect-*.log | grep -c '^row ') failed; contexts: $(grep -o '"context_bytes": [0-9-]*' "$dir/context.jsonl" | awk '{printf "%d MiB ", $2/1048576}')"
