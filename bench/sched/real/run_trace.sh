#!/usr/bin/env bash
# GPU-machine replay of the real, work-bound trace (make_jobs.py): each run
# is `colo run jobs.toml` inside `colo monitor`, whose NVML energy counter
# and GPM SM activity cover the whole run. Writes, per run, $OUT/<tag>.tgz
# (summary, per-job records, timeline, job logs) and prints its last lines.
#
#   bench/sched/real/run_trace.sh BUILD OUT TAG POLICY MODE [--two-gpu]
#
# TAG names the run (e.g. exclusive, magm, twogpu-magm). Run several times
# with different policies, then summarise.py. COLO_RUN_ARGS adds options to
# colo run (e.g. "--reserve-after 30" for the two-GPU trace).
# shellcheck disable=SC2086
set -uo pipefail
BUILD=$1 OUT=$2 TAG=$3 POLICY=$4 MODE=$5
shift 5
COLO=$PWD/$BUILD/colo
work=/tmp/colo-real-$TAG
rm -rf "$work" && mkdir -p "$work/report"
python3 bench/sched/real/make_jobs.py --colo "$COLO" --out "$work/jobs.toml" --runs "$work/runs" "$@"
start=$(date +%s)
timeout "${TRACE_TIMEOUT:-560}" "$COLO" monitor --interval 0.5 --summary-json "$work/monitor.json" \
  --out "$work/report/timeline_$POLICY.csv" -- \
  "$COLO" run "$work/jobs.toml" --policy "$POLICY" --mode "$MODE" --poll 0.5 --store "$work/store/jobs.db" \
  --summary-json "$work/run.json" --out "$work/report" ${COLO_RUN_ARGS:-} >"$work/run.txt" 2>&1
echo "run $TAG ($POLICY/$MODE): exit $?, $(( $(date +%s) - start )) s"
pgrep -fa nvidia-cuda-mps || echo "no MPS process left"
tail -4 "$work/run.txt"
cp "$work/store/jobs.db.logs"/*.log "$work/report/" 2>/dev/null
mkdir -p "$work/report/logs" && mv "$work/report"/job-*.log "$work/report/logs/" 2>/dev/null
cp "$work/run.txt" "$work/run.json" "$work/monitor.json" "$work/jobs.toml" "$work/report/" 2>/dev/null
tar -C "$work/report" -czf "$OUT/$TAG.tgz" .
