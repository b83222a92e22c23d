#!/usr/bin/env bash
# Data-parallel training on the GPUs of one host (bench/gpu/run.sh dist):
#   1. all-reduce bus bandwidth of a 256 MiB buffer: colo's communicator
#      against NCCL through PyTorch itself, at 2 (and 4) GPUs;
#   2. all-reduce scaling of ResNet-18 on synthetic CIFAR-shaped data,
#      128 samples per GPU per step, at 1, 2 (and 4) GPUs;
#   3. time to accuracy on Fashion-MNIST (ResNet-18, 2 GPUs) for allreduce,
#      synchronous and asynchronous parameter server, and switch.
# Usage: bench/dist/run.sh BUILD OUT [SECTIONS: busbw scaling tta]
set -uo pipefail
BUILD=$1
OUT=$2/dist
shift 2
sections=("${@:-busbw scaling tta}")
want() { [[ " ${sections[*]} " == *" $1 "* ]]; }
mkdir -p "$OUT/configs"
COLO="$BUILD/colo"
SCRATCH=$(mktemp -d)
GPUS=$(nvidia-smi -L | wc -l)
worlds=(2)
[ "$GPUS" -ge 4 ] && worlds=(2 4)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if want busbw; then
  for W in "${worlds[@]}"; do
    port=$(free_port)
    for ((r = 0; r < W; r++)); do
      COLO_DIST_RANK=$r COLO_DIST_WORLD=$W COLO_DIST_RENDEZVOUS=tcp://127.0.0.1:$port \
        "$BUILD/bench/allreduce_busbw" --mib 256 >"$SCRATCH/busbw-$r.txt" 2>"$OUT/busbw-colo-$W-rank$r.log" &
    done
    wait
    cat "$SCRATCH/busbw-0.txt" >>"$OUT/busbw.jsonl"
    torchrun --standalone --nproc_per_node="$W" bench/dist/nccl_busbw.py --mib 256 \
      2>"$OUT/busbw-torch-$W.log" | grep '^{' >>"$OUT/busbw.jsonl"
  done
  echo "busbw (GB/s):"; cat "$OUT/busbw.jsonl"
fi

# resnet_file NAME WORKERS STRATEGY DATA STEPS EPOCHS EXTRA: a ResNet-18 cluster file.
# shellcheck source=bench/dist/resnet_cluster.sh
source "$(dirname "$0")/resnet_cluster.sh"
resnet_file() {
  resnet_cluster_file "$OUT/configs/$1.toml" "$SCRATCH/$1" "$2" "$3" "$4" "$5" "$6" nccl "$7"
}

keep() {  # copies what a run left that is worth keeping (not the parameters)
  mkdir -p "$OUT/$1"
  cp "$SCRATCH/$1"/*.json "$SCRATCH/$1"/*.jsonl "$OUT/$1/" 2>/dev/null
}

# SCALING_VARIANTS: extra [allreduce] settings to compare, e.g.
# "default overlap=false channels=4" (default: just the defaults).
variant_table() {
  case $1 in
    default) echo "" ;;
    overlap=false) echo $'[allreduce]\noverlap = false' ;;
    channels=*) echo $'[allreduce]\nnccl_channels = '"${1#channels=}" ;;
  esac
}
if want scaling; then
  counts=(1 2)
  [ "$GPUS" -ge 4 ] && counts=(1 2 4)
  for variant in ${SCALING_VARIANTS:-default}; do
  suffix=""
  [ "$variant" != default ] && suffix="-${variant//=/}"
  for W in "${counts[@]}"; do
    steps=${SCALING_STEPS:-200}
    data="name = \"synthetic\"
shape = [3, 32, 32]
classes = 10
train_size = $((W * 128 * steps))
test_size = 1024
on_device = true
prefetch = 0"
    name="scaling$suffix-$W"
    f=$(resnet_file "$name" "$W" allreduce "$data" "$steps" 1 "$(variant_table "$variant")")
    "$COLO" dist "$f" >"$OUT/$name.log" 2>&1 || { echo "$name failed"; tail -5 "$OUT/$name.log"; }
    keep "$name"
  done
  done
fi

if want tta; then
  data='name = "fashion-mnist"
on_device = true
prefetch = 0'
  for strategy in allreduce ps-sync ps-async switch; do
    case $strategy in
      allreduce) s=allreduce; extra="" ;;
      ps-sync) s=param_server; extra=$'[param_server]\nmode = "sync"' ;;
      ps-async) s=param_server; extra=$'[param_server]\nmode = "async"' ;;
      switch) s=switch; extra=$'[switch]\nmin_steps = 100\nwindow = 50' ;;
    esac
    f=$(resnet_file "tta-$strategy" 2 "$s" "$data" 0 3 "eval_every = 50
target_accuracy = ${TTA_TARGET:-0.90}
$extra")
    "$COLO" dist "$f" >"$OUT/tta-$strategy.log" 2>&1 || { echo "tta $strategy failed"; tail -5 "$OUT/tta-$strategy.log"; }
    keep "tta-$strategy"
  done
fi
rm -rf "$SCRATCH"
python3 bench/dist/summarize.py "$OUT" | tee "$OUT/table.txt"
# Few files come back from the device machine: one archive plus the summary.
cp "$OUT/summary.json" "$OUT/table.txt" "$(dirname "$OUT")/" 2>/dev/null
tar czf "$(dirname "$OUT")/dist.tgz" -C "$(dirname "$OUT")" dist && rm -rf "$OUT"
