#!/usr/bin/env bash
# The whole user trace on one host of several GPUs at once, within a
# deadline, so that the loop and colo's runs come from one machine and one
# stretch of time where no single GPU could run them all in turn:
#
#   bench/sched/user_trace/on_gpus.sh BUILD OUT DEADLINE_S   # runs to the end (or the deadline)
#   bench/sched/user_trace/on_gpus.sh status OUT             # one line per step
#   bench/sched/user_trace/on_gpus.sh poll OUT SECONDS       # status every 30 s until the end or SECONDS
#
# GPU k of the host runs one step of run.sh with CUDA_VISIBLE_DEVICES set to
# that GPU's UUID (colo and energy.py keep to it):
#   - the loop, split over the first LOOP_GPUS GPUs (default: all but two,
#     one on a host of 2 or 3)
#     with LOOP_PART=K/N: each job still runs alone on a GPU, and loop_s is
#     the jobs' run times added up, as one loop would take them;
#   - the variants (USERTRACE_VARIANTS, default "model opaque declared"),
#     one per remaining GPU; a variant with no GPU left waits for the whole
#     loop to end (declared needs its peaks, unless TRACE_PEAKS names an
#     earlier run's: run.sh) and takes a GPU it freed. Declared placed on a
#     GPU of its own at the start needs TRACE_PEAKS.
# LOOP_GPUS=0 runs no loop (every GPU runs a variant): only with SOLO_FROM,
# an earlier run's summary.json whose SM activity alone the share gap uses;
# the summary then has no loop_s and no speed-up.
# Every step is cut at DEADLINE_S after the start (STEP_TIMEOUT of run.sh):
# a variant cut there has no wall time, only the jobs it completed. Then
# run.sh sim and summary. Each step's output: OUT/on_gpus_STEP.log.
#
# It only reads what it was started with: copy the tree's scripts and the
# build elsewhere first when the tree may change under a long run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

status() {  # OUT
  local OUT=$1 started

  if ! started=$(cat "$OUT/on_gpus.start" 2>/dev/null); then
    echo "on_gpus: not started yet (writing the trace)"
    return 0
  fi
  echo "on_gpus: $(( $(date +%s) - started )) s since the start; $( (wc -l <"$OUT/loop/jobs.jsonl") 2>/dev/null || echo 0)" \
       "of $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$OUT/trace/jobs.json" 2>/dev/null)" \
       "loop jobs done"
  for db in "$OUT"/*/jobs.db; do
    [ -e "$db" ] || continue
    v=$(basename "$(dirname "$db")")
    echo "  $v: $(python3 "$here/store.py" rows "$db" 2>/dev/null | python3 -c '
import collections, json, sys
rows = json.load(sys.stdin)
print(dict(collections.Counter(r["state"] for r in rows)))' 2>/dev/null)$([ -f "$OUT/$v/done" ] && echo ", done")"
  done
  [ -f "$OUT/on_gpus.end" ] && echo "  ended: $(cat "$OUT/on_gpus.end")"
  return 0
}

case "${1:-}" in
  status) status "${2:?usage: on_gpus.sh status OUT}"; exit 0 ;;
  poll)
    until_s=$(( $(date +%s) + ${3:?usage: on_gpus.sh poll OUT SECONDS} ))
    while :; do
      status "$2"
      [ -f "$2/on_gpus.end" ] && exit 0
      (( $(date +%s) + 30 < until_s )) || exit 0
      sleep 30
    done ;;
esac

BUILD=$(cd "${1:?usage: on_gpus.sh BUILD OUT DEADLINE_S}" && pwd)
mkdir -p "${2:?usage: on_gpus.sh BUILD OUT DEADLINE_S}"
OUT=$(cd "$2" && pwd)
deadline_s=${3:?usage: on_gpus.sh BUILD OUT DEADLINE_S}
mapfile -t gpus < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
read -r -a variants <<<"${USERTRACE_VARIANTS:-model opaque declared}"
loop_gpus=${LOOP_GPUS:-$(( ${#gpus[@]} > 3 ? ${#gpus[@]} - 2 : 1 ))}
for v in "${variants[@]:0:$(( ${#gpus[@]} - loop_gpus ))}"; do
  if [ "$v" = declared ] && [ -z "${TRACE_PEAKS:-}" ]; then
    echo "on_gpus.sh: declared starts with the loop here and needs TRACE_PEAKS (peaks measured before)," \
         "or put it after the variants that have GPUs" >&2
    exit 2
  fi
done
if (( loop_gpus == 0 )) && [ -z "${SOLO_FROM:-}" ]; then
  echo "on_gpus.sh: LOOP_GPUS=0 needs SOLO_FROM (an earlier run's summary.json) for the share gap" >&2
  exit 2
fi
if (( loop_gpus > 0 && (${#gpus[@]} < 2 || loop_gpus >= ${#gpus[@]}) )); then
  echo "on_gpus.sh: ${#gpus[@]} GPU(s), LOOP_GPUS=$loop_gpus: needs at least one GPU for the loop and one for colo" >&2
  exit 2
fi
log() { echo "[on_gpus $(date +%H:%M:%S)] $*"; }
"$here/run.sh" "$BUILD" "$OUT" trace || exit 1
start_s=$(date +%s)
echo "$start_s" >"$OUT/on_gpus.start"
rm -f "$OUT/on_gpus.end"

declare -A gpu_of step_of
start_step() {  # GPU_INDEX STEP [VAR=VALUE...]
  local g=$1 step=$2 left
  shift 2
  left=$(( start_s + deadline_s - $(date +%s) ))
  (( left > 10 )) || { log "$step: not started, $left s before the deadline"; return 1; }
  env CUDA_VISIBLE_DEVICES="${gpus[$g]}" STEP_TIMEOUT="$left" "$@" \
    "$here/run.sh" "$BUILD" "$OUT" "$step" >"$OUT/on_gpus_$step${LOOP_TAG:-}.log" 2>&1 &
  gpu_of[$!]=$g
  step_of[$!]=$step
  log "$step${LOOP_TAG:-} on GPU $g (${gpus[$g]}), cut after $left s"
}

for (( k = 1; k <= loop_gpus; ++k )); do
  LOOP_TAG=_part$k start_step $(( k - 1 )) loop LOOP_PART="$k/$loop_gpus"
done
free=() pending=()
g=$loop_gpus
for v in "${variants[@]}"; do
  if (( g < ${#gpus[@]} )); then start_step "$g" "$v"; g=$(( g + 1 )); else pending+=("$v"); fi
done
loops_left=$loop_gpus

while (( ${#gpu_of[@]} > 0 )); do
  wait -n -p ended
  [ -n "${ended:-}" ] || break
  g=${gpu_of[$ended]}
  step=${step_of[$ended]}
  unset "gpu_of[$ended]" "step_of[$ended]"
  log "$step on GPU $g ended"
  [ "$step" = loop ] && loops_left=$(( loops_left - 1 ))
  free+=("$g")
  # The declared variant needs every loop part's peaks: pending variants wait for the whole loop.
  while (( loops_left == 0 && ${#pending[@]} > 0 && ${#free[@]} > 0 )); do
    start_step "${free[0]}" "${pending[0]}" || true
    free=("${free[@]:1}")
    pending=("${pending[@]:1}")
  done
done
log "every step ended after $(( $(date +%s) - start_s )) s"
"$here/run.sh" "$BUILD" "$OUT" sim summary >"$OUT/on_gpus_summary.log" 2>&1
date +%s >"$OUT/on_gpus.end"
cat "$OUT/summary.txt" 2>/dev/null
