#!/usr/bin/env bash
# Throughput of five ways to train N small models on one GPU:
#   sequential  one ordinary training process after another (its aggregate
#               throughput is one process's steady-state throughput; process
#               start-up, which sequential pays N times, is not charged)
#   concurrent  N ordinary processes at once (time-slicing)
#   mps         N ordinary processes as clients of one private MPS daemon
#   fused       one colo process training the N models as one fused array
#   pytorch     the same fusion hand-written in PyTorch eager (pytorch_fused.py)
#
#   bench/fusion/run.sh BUILD OUT [MODEL...] [-- N...]
#
# Appends one JSON line per measurement to OUT/fusion/raw.jsonl; process
# windows are aligned with --start-at so concurrent clients overlap.
set -uo pipefail
BUILD=${1:?build dir}; OUT=${2:?out dir}; shift 2
models=(); counts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do models+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
counts=("$@")
[ ${#models[@]} -eq 0 ] && models=(lenet mlp resnet18)
[ ${#counts[@]} -eq 0 ] && counts=(1 2 4 8 16 32 64)
SECONDS_WINDOW=${SECONDS_WINDOW:-2}
# STRATEGIES: which of sequential fused fused_cl fused_bf16 pytorch concurrent mps to run
# (fused_bf16: the fused array under bfloat16 autocast; not in the default set).
STRATEGIES=" ${STRATEGIES:-sequential fused fused_cl pytorch concurrent mps} "
# PROCESS_MODE: what each process of sequential, concurrent and mps trains:
# "single" (default) an ordinary model; "fused1" a one-model fused array
# (CUDA graph; NHWC for resnet18), as each process of `colo compare`'s
# process levels runs it (`colo sweep --only I --max-array 1`).
export PROCESS_MODE=${PROCESS_MODE:-single}
process_args() {  # model
  if [ "$PROCESS_MODE" = fused1 ]; then
    echo "--mode fused --models 1 --warmup-steps $( [ "$1" = resnet18 ] && echo 8 || echo 30 )$( [ "$1" = resnet18 ] && echo " --channels-last" )"
  else
    echo "--mode single"
  fi
}
on() { [[ "$STRATEGIES" == *" $1 "* ]]; }
BIN="$BUILD/bench/fusion_throughput"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT/fusion"
RAW="$OUT/fusion/raw.jsonl"
LOG="$OUT/fusion/log.txt"

record() {  # strategy model n json-or-empty [note]
  local line="${4:-}"
  [ -z "$line" ] && line='{}'
  python3 - "$1" "$2" "$3" "$line" "${5:-}" >>"$RAW" <<'PY'
import json, os, sys
strategy, model, n, line, note = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
try:
    r = json.loads(line)
except Exception:
    r = {}
r.update({"strategy": strategy, "model": model, "models": n})
if strategy in ("sequential", "concurrent", "mps"):
    r["process_mode"] = os.environ["PROCESS_MODE"]
if note:
    r["note"] = note
print(json.dumps(r))
PY
}

# Sums the per-process lines of a multi-process run into one record.
combine() {  # strategy model n start_at files...
  local strategy=$1 model=$2 n=$3 start_at=$4; shift 4
  python3 - "$strategy" "$model" "$n" "$start_at" "$@" >>"$RAW" <<'PY'
import json, os, sys
strategy, model, n, start_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
rows = []
for path in sys.argv[5:]:
    try:
        rows.extend(json.loads(l) for l in open(path) if l.startswith("{"))
    except OSError:
        pass
r = {"strategy": strategy, "model": model, "models": n, "processes_ok": len(rows),
     "process_mode": os.environ["PROCESS_MODE"]}
if strategy == "mps" and os.environ.get("MPS_PERCENTAGE"):
    r["mps_percentage"] = int(os.environ["MPS_PERCENTAGE"])
if len(rows) == n:
    r["samples_per_s"] = sum(x["samples_per_s"] for x in rows)
    r["max_late_start_s"] = max(x["window_start_unix"] - start_at for x in rows)
    r["peak_alloc_bytes"] = sum(x.get("peak_alloc_bytes", 0) for x in rows)
    for key in ("sm_active", "gpu_util", "energy_j", "window_s"):
        vals = [x[key] for x in rows if key in x]
        if vals:
            r[key] = vals[0]
else:
    r["note"] = f"only {len(rows)} of {n} processes reported (out of memory or failed; see log)"
print(json.dumps(r))
PY
}

many() {  # strategy model n
  local strategy=$1 model=$2 n=$3 dir="$OUT/fusion/procs"
  rm -rf "$dir"; mkdir -p "$dir"
  local start_at
  start_at=$(python3 -c "import time; print(time.time() + 6 + 0.6 * $n)")
  local cmd="timeout 240 $BIN --model $model $(process_args "$model") --seconds $SECONDS_WINDOW --start-at $start_at"
  if [ "$strategy" = mps ]; then
    # MPS_PERCENTAGE: each client's active-thread share (unset: no limit).
    "$BUILD/colo" mps run --count "$n" ${MPS_PERCENTAGE:+--percentage "$MPS_PERCENTAGE"} -- sh -c \
      "exec $cmd \$( [ \"\$COLO_MPS_CLIENT_INDEX\" = 0 ] && echo --sample ) >$dir/\$COLO_MPS_CLIENT_INDEX.json 2>>$LOG" \
      >>"$LOG" 2>&1
  else
    for i in $(seq 0 $((n - 1))); do
      local extra=""; [ "$i" = 0 ] && extra="--sample"
      $cmd $extra >"$dir/$i.json" 2>>"$LOG" &
    done
    wait
  fi
  combine "$strategy" "$model" "$n" "$start_at" "$dir"/*.json
}

for model in "${models[@]}"; do
  echo "== $model ==" | tee -a "$LOG"
  if on sequential; then
    # shellcheck disable=SC2046
    single=$(timeout 240 "$BIN" --model "$model" $(process_args "$model") --seconds "$SECONDS_WINDOW" --sample 2>>"$LOG" | tail -1)
    record sequential "$model" 1 "$single" "steady state of one process; N sequential processes have this aggregate"
  fi
  for n in "${counts[@]}"; do
    warm=30; [ "$model" = resnet18 ] && warm=8
    fused=(timeout 240 "$BIN" --model "$model" --mode fused --models "$n" --seconds "$SECONDS_WINDOW" --warmup-steps $warm --sample)
    on fused && record fused "$model" "$n" "$("${fused[@]}" 2>>"$LOG" | tail -1)"
    on fused_cl && record fused_cl "$model" "$n" "$("${fused[@]}" --channels-last 2>>"$LOG" | tail -1)"
    on fused_bf16 && record fused_bf16 "$model" "$n" "$("${fused[@]}" --bf16 2>>"$LOG" | tail -1)"
    on pytorch && record pytorch "$model" "$n" "$(timeout 240 python3 "$HERE/pytorch_fused.py" --model "$model" --models "$n" --seconds "$SECONDS_WINDOW" 2>>"$LOG" | tail -1)"
    # A ResNet-18 process holds ~1.8 GB with its CUDA context: 64 of them do not fit 80 GB.
    if [ "$model" = resnet18 ] && [ "$n" -gt 32 ]; then
      for s in concurrent mps; do on $s && record $s "$model" "$n" "" "not run: $n processes x ~1.8 GB exceed the GPU's memory"; done
    else
      on concurrent && many concurrent "$model" "$n"
      on mps && many mps "$model" "$n"
    fi
    python3 - "$RAW" "$model" "$n" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r["model"] == sys.argv[2] and r["models"] in (int(sys.argv[3]),)]
print(f'{sys.argv[2]:9s} N={sys.argv[3]:>3s} ' + "  ".join(
    f'{r["strategy"]}={r.get("samples_per_s", 0) / 1e3:.0f}k' for r in rows))
PY
  done
done
