#!/usr/bin/env bash
# Issue 53's whole measurement on the two GPUs of one host, in one go (it runs
# longer than one device call: start it in the background and poll DONE):
#   1. build colo and allreduce_busbw; all-reduce bus bandwidth, colo against
#      PyTorch's NCCL;
#   2. 200-step runs of the ZeroMQ path (float32; bfloat16; bfloat16 with
#      overlap; bfloat16 over 4 servers), each step's exchange by phase in
#      the step records and each server's in its log, of async PS over CUDA IPC with and without overlap, and of
#      even all-reduce: where each one's step time goes;
#   3. the neighbour's strength: uneven all-reduce for 200 steps beside an
#      8192 and a 16384 matrix-product neighbour; the rounds use the smaller
#      one that slows worker 1's compute at least 1.8x (else the stronger);
#   4. PS_ROUNDS (3) rounds of every run to 90% test accuracy.
# It takes about 17 minutes on 2 H200s, more than one device call: the device
# tool ends a call's processes, background ones too, when the call returns, so
# split it across calls (PS_ROUNDS, and PS_FIRST_ROUND in bench/dist/ps/run.sh).
# Usage: bench/dist/ps/full_run.sh OUT   (results in OUT/{ablation,neighbour-*,main}; OUT/DONE at the end)
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$1
mkdir -p "$OUT"
export BUILD_TARGETS="colo allreduce_busbw" CMAKE_EXTRA=-DCOLO_BUILD_TESTS=OFF PS_SIMULATE=0

OUT=$OUT/ablation PS_ROUNDS=1 PS_BUSBW=1 PS_MAX_STEPS=200 \
  PS_RUNS="even:allreduce even:ps-async even:ps-async-ov even:ps-async-zmq-fp32 even:ps-async-zmq-bf16 even:ps-async-zmq even:ps-async-zmq-s4" \
  bash bench/gpu/run.sh ps
for size in 8192 16384; do
  OUT=$OUT/neighbour-$size PS_ROUNDS=1 PS_MAX_STEPS=200 NEIGHBOUR_SIZE=$size PS_RUNS="uneven:allreduce" \
    bash bench/gpu/run.sh ps
done
size=$(python3 - "$OUT" <<'PY'
import json, sys
slowdown = {}
for size in (8192, 16384):
    try:
        s = json.load(open(f"{sys.argv[1]}/neighbour-{size}/ps-summary.json"))["uneven_slowdown"]["median"]
    except (OSError, KeyError, TypeError):
        s = None
    slowdown[size] = s
    print(f"neighbour {size}: worker 1 compute {s}x", file=sys.stderr)
print(8192 if (slowdown[8192] or 0) >= 1.8 else 16384)
PY
)
echo "neighbour size for the rounds: $size"
OUT=$OUT/main PS_ROUNDS=${PS_ROUNDS:-3} NEIGHBOUR_SIZE=$size \
  PS_RUNS="even:allreduce even:ps-sync even:ps-async even:ps-async-ov even:ps-async-zmq uneven:allreduce uneven:ps-async uneven:ps-async-ov uneven:switch uneven:switch-ss" \
  bash bench/gpu/run.sh ps
touch "$OUT/DONE"
