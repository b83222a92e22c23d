#!/usr/bin/env bash
# Parameter server against all-reduce on the 2 GPUs of one host (bench/gpu/run.sh ps,
# nvidia-h200-x2): time to 90% test accuracy on Fashion-MNIST, ResNet-18, 2 workers
# x 128 per step, SGD lr 0.05 momentum 0.9, 3 epochs, as bench/results/dist's tta runs.
#   even:STRATEGY    both workers alone on their GPUs
#   uneven:STRATEGY  worker 1's GPU shared with a neighbour job (neighbour.py,
#                    time-sliced, no MPS; NEIGHBOUR_WORK=matmul, compute-bound, by
#                    default): worker 1 at about half speed, measured in each run
# PS_ROUNDS (default 3): every run that many times, round after round; round 1's
# directory is NAME, later ones NAME.rK; summarize.py gives medians and spreads.
# STRATEGY:
#   allreduce, ps-sync, ps-ssp, ps-async;
#   ps-async-ov (async PS, each reply taken a step late: param_server.overlap);
#   ps-async-sl (async PS, a stale gradient's lr divided by its staleness: param_server.staleness_lr);
#   ps-async-zmq (async PS with every range through ZeroMQ and host memory instead of shared
#     device memory, as bfloat16 with overlap); ps-async-zmq-sl (the same with staleness_lr);
#   ps-async-zmq-int8 (ps-async-zmq-sl as 8-bit codes); ps-async-zmq-int8-noov (the same without
#     overlap); ps-async-zmq-bf16 (bfloat16, no overlap);
#   ps-async-zmq-fp32 (float32, no overlap); ps-async-zmq-s4 (bfloat16, no overlap, 4 servers:
#     two shards a GPU, each its own process and connections);
#   switch (colo's plateau rule); switch-ss (Sync-Switch's rule: 1/8 of the steps synchronous,
#     or a straggler for 20 steps); switch-ss-zmq-int8 (Sync-Switch's rule into ps-async-zmq-int8).
# PS_FIRST_ROUND=K starts at round K (a later call going on with the rounds of
# an earlier one, into another OUT). Round K trains with seed K (CLUSTER_SEED); evaluations every PS_EVAL_EVERY (25)
# steps. NEIGHBOUR_SIZE (8192): the neighbour's matrix size. PS_BUSBW=1 first
# measures all-reduce bus bandwidth, colo against PyTorch's NCCL, in the same call
# (bench/dist/run.sh busbw; needs the allreduce_busbw target). PS_SIMULATE=0 skips
# simulate_check.py (it trains on the CPU: run it elsewhere on the copied output).
# PS_BACKEND=gloo and PS_MAX_STEPS=N run the workers' group on Gloo with N steps each:
# on a one-GPU machine both workers then share cuda:0 (a check of the transports, not
# the comparison the issue asks for).
# PS_MPS=auto|on|off sets [param_server] mps in every run with servers (unset:
# colo's default, auto: colo dist runs the ranks under a private MPS daemon, so a
# server's update runs beside its GPU's worker; off: time slices). The neighbour
# is never an MPS client: it takes time slices from the daemon's server.
# Usage: bench/dist/ps/run.sh BUILD OUT [RUN ...]
set -uo pipefail
BUILD=$1
OUT=$2/ps
shift 2
runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(even:allreduce even:ps-sync even:ps-async even:ps-async-zmq even:switch even:switch-ss
                               uneven:allreduce uneven:ps-async uneven:ps-sync uneven:switch uneven:switch-ss)
mkdir -p "$OUT/configs"
SCRATCH=$(mktemp -d)

# shellcheck source=bench/dist/resnet_cluster.sh
source "$(dirname "$0")/../resnet_cluster.sh"
data='name = "fashion-mnist"
on_device = true
prefetch = 0'
# EXTRA with [param_server] mps = $PS_MPS, where set and the strategy has servers.
with_mps() {  # STRATEGY EXTRA
  if [ -z "${PS_MPS:-}" ] || [ "$1" = allreduce ]; then printf '%s' "$2"
  elif [[ $2 == *"[param_server]"* ]]; then printf '%s' "${2/\[param_server\]/[param_server]$'\n'mps = \"$PS_MPS\"}"
  else printf '%s\n[param_server]\nmps = "%s"' "$2" "$PS_MPS"; fi
}
cluster_file() {  # NAME STRATEGY EXTRA
  resnet_cluster_file "$OUT/configs/$1.toml" "$SCRATCH/$1" 2 "$2" "$data" "${PS_MAX_STEPS:-0}" 3 "${PS_BACKEND:-nccl}" \
    "eval_every = ${PS_EVAL_EVERY:-25}
target_accuracy = ${TTA_TARGET:-0.90}
$(with_mps "$2" "$3")"
}

if [ "${PS_BUSBW:-0}" = 1 ]; then
  bench/dist/run.sh "$BUILD" "$(dirname "$OUT")" busbw
  # bench/dist/run.sh packs its folder into dist.tgz when it ends.
  tar xzf "$(dirname "$OUT")/dist.tgz" -O dist/busbw.jsonl >"$OUT/busbw.jsonl"
fi

for round in $(seq "${PS_FIRST_ROUND:-1}" "${PS_ROUNDS:-3}"); do
export CLUSTER_SEED=$round
for run in "${runs[@]}"; do
  setup=${run%%:*}
  strategy=${run#*:}
  case $strategy in
    allreduce) s=allreduce; extra="" ;;
    ps-sync) s=param_server; extra=$'[param_server]\nmode = "sync"' ;;
    ps-async) s=param_server; extra=$'[param_server]\nmode = "async"' ;;
    ps-ssp) s=param_server; extra=$'[param_server]\nmode = "ssp"\nstaleness = 4' ;;
    ps-async-ov) s=param_server; extra=$'[param_server]\nmode = "async"\noverlap = true' ;;
    ps-async-sl) s=param_server; extra=$'[param_server]\nmode = "async"\nstaleness_lr = true' ;;
    ps-async-zmq) s=param_server
      extra=$'[param_server]\nmode = "async"\ntransport = "zmq"\ncompression = "bf16"\noverlap = true' ;;
    ps-async-zmq-sl) s=param_server
      extra=$'[param_server]\nmode = "async"\ntransport = "zmq"\ncompression = "bf16"\noverlap = true\nstaleness_lr = true' ;;
    ps-async-zmq-int8) s=param_server
      extra=$'[param_server]\nmode = "async"\ntransport = "zmq"\ncompression = "int8"\noverlap = true\nstaleness_lr = true' ;;
    ps-async-zmq-int8-noov) s=param_server
      extra=$'[param_server]\nmode = "async"\ntransport = "zmq"\ncompression = "int8"\nstaleness_lr = true' ;;
    ps-async-zmq-bf16) s=param_server; extra=$'[param_server]\nmode = "async"\ntransport = "zmq"\ncompression = "bf16"' ;;
    ps-async-zmq-fp32) s=param_server; extra=$'[param_server]\nmode = "async"\ntransport = "zmq"' ;;
    ps-async-zmq-s4) s=param_server; servers=4
      extra=$'[param_server]\nmode = "async"\ntransport = "zmq"\ncompression = "bf16"' ;;
    switch) s=switch; extra=$'[switch]\nmin_steps = 100\nwindow = 50' ;;
    switch-ss) s=switch; extra=$'[switch]\nrule = "sync-switch"\nfraction = 0.125' ;;
    switch-ss-zmq-int8) s=switch
      extra=$'[switch]\nrule = "sync-switch"\nfraction = 0.125\n[param_server]\nmode = "async"\ntransport = "zmq"\ncompression = "int8"\noverlap = true\nstaleness_lr = true' ;;
    *) echo "unknown strategy $strategy"; continue ;;
  esac
  export CLUSTER_SERVERS=${servers:-2}
  servers=""
  name="$setup-$strategy"
  [ "$round" -gt 1 ] && name="$name.r$round"
  f=$(cluster_file "$name" "$s" "$extra")
  neighbour=""
  if [ "$setup" = uneven ]; then
    CUDA_VISIBLE_DEVICES=1 python3 bench/dist/ps/neighbour.py --work "${NEIGHBOUR_WORK:-matmul}" \
      --size "${NEIGHBOUR_SIZE:-8192}" \
      >"$OUT/$name-neighbour.log" 2>&1 &
    neighbour=$!
    for _ in $(seq 1 120); do grep -q ready "$OUT/$name-neighbour.log" 2>/dev/null && break; sleep 0.5; done
  fi
  start=$(date +%s.%N)
  "$BUILD/colo" dist "$f" >"$OUT/$name.log" 2>&1 || { echo "$name failed"; tail -8 "$OUT/$name.log"; }
  echo "$name: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s wall"
  [ -n "$neighbour" ] && kill "$neighbour" && wait "$neighbour" 2>/dev/null
  mkdir -p "$OUT/$name"
  cp "$SCRATCH/$name"/*.json "$SCRATCH/$name"/*.jsonl "$SCRATCH/$name"/rank*.log "$OUT/$name/" 2>/dev/null
done
done
rm -rf "$SCRATCH"
python3 bench/dist/ps/summarize.py "$OUT" | tee "$OUT/table.txt"
if [ "${PS_SIMULATE:-1}" = 1 ]; then
  OMP_NUM_THREADS=$(nproc) python3 bench/dist/ps/simulate_check.py "$BUILD/colo" "$OUT" | tee -a "$OUT/table.txt"
fi
cp "$OUT/summary.json" "$(dirname "$OUT")/ps-summary.json"; cp "$OUT/table.txt" "$(dirname "$OUT")/ps-table.txt"
tar czf "$(dirname "$OUT")/ps.tgz" -C "$(dirname "$OUT")" ps && rm -rf "$OUT"
