#!/usr/bin/env bash
# The user trace (issue 49) on a GPU machine: the loop a user runs without
# colo, then `colo run` of each job-file variant, then the summary.
#
#   bench/sched/user_trace/run.sh BUILD OUT [trace] [loop] [model] [opaque] [declared] [sim] [summary]
#
# BUILD holds the colo binary and its Python package (BUILD/colo,
# BUILD/python/colo); OUT keeps everything between calls. No step named:
# all of them but trace in that order. Each step is resumable, so a device's
# time limit can cut it and a second call goes on:
#   trace     only writes OUT/trace (every step does first, when it is missing)
#   loop      bash OUT/trace/loop.sh inside `colo monitor` (SM activity and
#             memory every 0.5 s); jobs already done are skipped; with
#             LOOP_PART=K/N and CUDA_VISIBLE_DEVICES, this GPU's share of the
#             jobs (loop.sh), its files tagged partKofN_
#   model, opaque, declared (each also as model_rise, ...: with --no-probe-alone,
#             shares read from the rise of the GPU's activity beside others)
#   model_again  model.toml's jobs as a second run: `colo run --learn-from
#             AGAIN_LEARN_FROM` (an earlier run's model/jobs.db), so every
#             share and peak that run measured is known; `colo train` jobs
#             write to runs/model_again/, so their commands are new to it
#             `colo run OUT/trace/VARIANT.toml --store OUT/VARIANT/jobs.db
#             --policy magm --mode mps` inside `colo monitor`; a run cut off
#             is continued by `colo run --store` (its time adds up; jobs
#             that were running start again, which counts against colo)
#   sim       `colo simulate` of the loop's measurements (magm/MPS, shares
#             undeclared), for summary.json's sim_error_pct
#   summary   summarise.py: OUT/summary.json and OUT/README.md; SOLO_FROM (an
#             earlier run's summary.json) gives the share gap its SM activity
#             alone for jobs this run's loop did not run
# declared.toml is written after the loop, from its measured peaks, or from
# TRACE_PEAKS (an earlier run's loop/peaks.json) without waiting for it.
#
# Environment: TRACE_JOBS (first N jobs), TRACE_SCALE (step multiplier),
# TRACE_CALIBRATION (calibrate.py's or calibration_from_run.py's JSON), TRACE_TARGET_S,
# TRACE_MIN_SOLO_S (make_jobs.py --min-solo-s), COLO_RUN_ARGS
# (more `colo run` options), STEP_TIMEOUT (seconds for one step; default
# none: a step cut off by it is continued by the next call).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=$(cd "${1:?usage: run.sh BUILD OUT [steps...]}" && pwd)
mkdir -p "${2:?usage: run.sh BUILD OUT [steps...]}"
OUT=$(cd "$2" && pwd)
shift 2
[ $# -gt 0 ] || set -- loop model opaque declared sim summary
COLO=$BUILD/colo
# colo.progress needs no compiled part: the source package serves where BUILD has none.
export PYTHONPATH="$BUILD/python:$root/python${PYTHONPATH:+:$PYTHONPATH}"
log() { echo "[run.sh $(date +%H:%M:%S)] $*"; }
# Every command that makes a result, as run, for summary.json.
record() { printf '%s\n' "$*" >>"$OUT/commands.txt"; }
limit() { if [ -n "${STEP_TIMEOUT:-}" ]; then timeout --signal=TERM --kill-after=30 "$STEP_TIMEOUT" "$@"; else "$@"; fi; }

# Scripts and colo train read Fashion-MNIST from Debian's path (bench/gpu/run.sh does the same).
if [ ! -e /usr/share/datasets/fashion-mnist ] && [ -d "$root/.data/fashion-mnist" ]; then
  mkdir -p /usr/share/datasets && ln -s "$root/.data/fashion-mnist" /usr/share/datasets/fashion-mnist
fi
[ -x "$COLO" ] || { echo "run.sh: no colo binary at $COLO" >&2; exit 2; }
python3 -c 'import colo.progress' 2>/dev/null || log "warning: colo's Python package is not importable: jobs report no progress"

if [ ! -f "$OUT/trace/loop.sh" ]; then
  cmd=(python3 "$here/make_jobs.py" --out-dir "$OUT/trace" --colo "$COLO" --runs "$OUT/runs"
       ${TRACE_JOBS:+--jobs "$TRACE_JOBS"} ${TRACE_SCALE:+--scale "$TRACE_SCALE"}
       ${TRACE_CALIBRATION:+--calibration "$TRACE_CALIBRATION"} ${TRACE_TARGET_S:+--target-s "$TRACE_TARGET_S"} ${TRACE_MIN_SOLO_S:+--min-solo-s "$TRACE_MIN_SOLO_S"})
  record "${cmd[*]}"
  "${cmd[@]}" || exit 1
else
  log "reusing the trace in $OUT/trace ($(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["what"])' "$OUT/trace/jobs.json"))"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' >>"$OUT/gpu.txt" 2>&1

run_loop() {
  mkdir -p "$OUT/loop"
  local now tag=""
  now=$(date +%s)  # one timeline per call: a loop continued in a second call keeps the first's
  # LOOP_PART=K/N (loop.sh): this GPU's share of the jobs; its files say which part.
  [ -n "${LOOP_PART:-}" ] && [ "$LOOP_PART" != 1/1 ] && tag="part${LOOP_PART%/*}of${LOOP_PART#*/}_"
  local cmd=("$COLO" monitor --interval 0.5 --out "$OUT/loop/timeline_$tag$now.csv"
             --summary-json "$OUT/loop/monitor_$tag$now.json" -- bash "$OUT/trace/loop.sh" "$OUT/loop")
  record "${LOOP_PART:+LOOP_PART=$LOOP_PART }${CUDA_VISIBLE_DEVICES:+CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES }${cmd[*]}"
  log "loop${LOOP_PART:+ part $LOOP_PART}: the trace's jobs one after another"
  limit "${cmd[@]}" 2>&1 | tee "$OUT/loop/loop_$tag$now.txt" | grep --line-buffered '^\[loop\]'
  # Peaks measured alone, for declared.toml: written whenever the loop has any.
  python3 "$here/summarise.py" "$OUT" --peaks-out "$OUT/loop/peaks.json"
}

write_declared() {
  [ -f "$OUT/trace/declared.from-peaks" ] && return
  # TRACE_PEAKS: peaks a user measured before (an earlier run's loop/peaks.json), so
  # that declared need not wait for this run's loop.
  local peaks=${TRACE_PEAKS:-$OUT/loop/peaks.json}
  local cmd=(python3 "$here/make_jobs.py" --out-dir "$OUT/trace/declared" --colo "$COLO" --runs "$OUT/runs"
             ${TRACE_JOBS:+--jobs "$TRACE_JOBS"} ${TRACE_SCALE:+--scale "$TRACE_SCALE"}
             ${TRACE_CALIBRATION:+--calibration "$TRACE_CALIBRATION"} ${TRACE_TARGET_S:+--target-s "$TRACE_TARGET_S"} ${TRACE_MIN_SOLO_S:+--min-solo-s "$TRACE_MIN_SOLO_S"}
             --peaks "$peaks")
  record "${cmd[*]}"
  "${cmd[@]}" && cp "$OUT/trace/declared/declared.toml" "$OUT/trace/declared.toml" \
    && [ -f "$peaks" ] && touch "$OUT/trace/declared.from-peaks"
}

run_variant() {  # VARIANT: model, opaque or declared, each also as VARIANT_rise (colo run --no-probe-alone); model_again
  local v=$1 dir=$OUT/$1 base=${1%_rise} rise=() learn=()
  [ "$base" != "$v" ] && rise=(--no-probe-alone)
  mkdir -p "$dir"
  if [ -f "$dir/done" ]; then log "$v: done before"; return; fi
  [ "$base" = declared ] && write_declared
  if [ "$base" = model_again ]; then
    if [ ! -f "${AGAIN_LEARN_FROM:-}" ]; then log "$v: AGAIN_LEARN_FROM names no job store"; return; fi
    sed 's#/runs/model/#/runs/model_again/#g' "$OUT/trace/model.toml" >"$OUT/trace/model_again.toml"
    # A copy: colo opens a store it learns from as its own (WAL), which would change the committed file.
    [ -f "$dir/learn_from.db" ] || cp "$AGAIN_LEARN_FROM" "$dir/learn_from.db"
    learn=(--learn-from "$dir/learn_from.db")
  fi
  local seg
  seg=$(find "$dir" -maxdepth 1 -name 'segment_*.json' | wc -l)
  # A first call submits the job file; a later one continues the store.
  local jobs_file=("$OUT/trace/$base.toml")
  [ "$seg" -gt 0 ] && jobs_file=()
  # COLO_RUN_ARGS is split into words on purpose.
  # shellcheck disable=SC2206
  local cmd=("$COLO" monitor --interval 0.5 --summary-json "$dir/monitor_$seg.json" --out "$dir/timeline_$seg.csv" --
             "$COLO" run "${jobs_file[@]}" --store "$dir/jobs.db" --policy magm --mode mps --poll 0.5
             --summary-json "$dir/run_$seg.json" --out "$dir/report" "${rise[@]}" "${learn[@]}" ${COLO_RUN_ARGS:-})
  record "${CUDA_VISIBLE_DEVICES:+CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES }${cmd[*]}"
  python3 "$here/store.py" watch "$dir/jobs.db" --label "$v" --first-start "$dir/first_start_$seg.json" &
  local watcher=$! e0 e1 t0 t1 rc
  e0=$(python3 "$here/energy.py" 2>/dev/null || echo null)
  t0=$(date +%s.%N)
  limit "${cmd[@]}" >"$dir/run_$seg.txt" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  e1=$(python3 "$here/energy.py" 2>/dev/null || echo null)
  kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  printf '{"invoked_unix_s": %s, "ended_unix_s": %s, "exit": %d, "energy_start_j": %s, "energy_end_j": %s}\n' \
    "$t0" "$t1" "$rc" "$e0" "$e1" >"$dir/segment_$seg.json"
  log "$v: colo run exit $rc after $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s; $(tail -n 1 "$dir/run_$seg.txt")"
  pgrep -f nvidia-cuda-mps >/dev/null && log "warning: an MPS process is still running"
  # 124/137: cut off by STEP_TIMEOUT; the next call goes on from the store.
  if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then touch "$dir/done"; fi
}

run_sim() {
  mkdir -p "$OUT/sim/opaque"
  python3 "$here/summarise.py" "$OUT" --sim-trace "$OUT/sim/trace.csv" || return
  # The model variant: every job's memory known (its estimate); the opaque
  # one: none known, started provisionally as colo run does.
  local cmd=("$COLO" simulate "$OUT/sim/trace.csv" --gpus 1 --policy magm --mode mps --undeclared-sm-share --out "$OUT/sim")
  record "${cmd[*]}"
  "${cmd[@]}" >"$OUT/sim/simulate.txt" 2>&1
  log "sim: exit $?; $(tail -n 2 "$OUT/sim/simulate.txt" | tr '\n' ' ')"
  cmd=("$COLO" simulate "$OUT/sim/trace_opaque.csv" --gpus 1 --policy magm --mode mps --undeclared-sm-share
       --provisional-memory --out "$OUT/sim/opaque")
  record "${cmd[*]}"
  "${cmd[@]}" >"$OUT/sim/opaque/simulate.txt" 2>&1
  log "sim (opaque): exit $?; $(tail -n 2 "$OUT/sim/opaque/simulate.txt" | tr '\n' ' ')"
}

for step in "$@"; do
  case $step in
    trace) ;;  # the trace alone (written above when missing)
    loop) run_loop ;;
    model | opaque | declared | model_rise | opaque_rise | declared_rise | model_again) run_variant "$step" ;;
    sim) run_sim ;;
    summary)
      python3 "$here/summarise.py" "$OUT" ${SOLO_FROM:+--solo-from "$SOLO_FROM"} | tee "$OUT/summary.txt" ;;
    *) echo "run.sh: unknown step $step (trace loop model opaque declared sim summary)" >&2; exit 2 ;;
  esac
done
