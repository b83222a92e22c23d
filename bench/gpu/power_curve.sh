#!/usr/bin/env bash
# Power against SM activity on this GPU, for the simulated devices' power
# model: samples the GPU every 0.1 s while it sits idle and while training
# jobs of different intensity run (one at a time, then several under MPS-free
# time-slicing), all into one CSV; bench/gpu/fit_power_curve.py fits it.
# Usage: bench/gpu/power_curve.sh BUILD OUT   (bench/gpu/run.sh power)
set -uo pipefail
BUILD=$1
OUT=$2
COLO="$BUILD/colo"
WORK=$(mktemp -d)
CSV="$OUT/power_curve.csv"
rm -f "$CSV"

spec() {  # spec NAME MODEL_TABLE DATA_TABLE BATCH
  cat >"$WORK/$1.toml" <<TOML
seed = 0
device = "cuda"
output = "$WORK/run-$1"
epochs = 100
batch_size = $4
checkpoint_every = 0
[model]
$2
[data]
$3
[optimizer]
name = "sgd"
lr = 0.01
TOML
}
mnist=$'name = "fashion-mnist"\non_device = true\nprefetch = 0'
cifar=$'name = "synthetic"\nshape = [3, 32, 32]\ntrain_size = 20000\ntest_size = 256\non_device = true\nprefetch = 0'
spec mlp64 $'name = "mlp"\nwidths = [256]' "$mnist" 64
spec mlp4096 $'name = "mlp"\nwidths = [1024, 1024]' "$mnist" 4096
spec lenet256 $'name = "lenet"' "$mnist" 256
spec resnet32 $'name = "resnet"\ndepth = 18' "$cifar" 32
spec resnet256 $'name = "resnet"\ndepth = 18' "$cifar" 256

append() {  # keeps one header
  if [ -f "$CSV" ]; then tail -n +2 "$1" | sed "s/^/$2,/" >>"$CSV"; else sed "1s/^/workload,/; 2,\$s/^/$2,/" "$1" >"$CSV"; fi
}
"$COLO" monitor --interval 0.1 --duration 4 --out "$WORK/idle.csv" >/dev/null 2>&1
append "$WORK/idle.csv" idle
for w in mlp64 mlp4096 lenet256 resnet32 resnet256; do
  "$COLO" monitor --interval 0.1 --out "$WORK/$w.csv" -- timeout 12 "$COLO" train "$WORK/$w.toml" >/dev/null 2>&1
  append "$WORK/$w.csv" "$w"
done
# Several at once (time-slicing): activity near 1.
"$COLO" monitor --interval 0.1 --out "$WORK/mix.csv" -- sh -c \
  "for w in resnet256 resnet32 lenet256 mlp4096; do timeout 12 $COLO train $WORK/\$w.toml & done; wait" >/dev/null 2>&1
append "$WORK/mix.csv" mix
rm -rf "$WORK"
python3 bench/gpu/fit_power_curve.py "$CSV"
