#!/usr/bin/env bash
# Issue 53's whole measurement on the two GPUs of one host, in stages that
# each fit one device call (the device tool ends a call's processes, those in
# the background too, when the call returns; the machine and OUT stay while
# the calls follow each other within its idle time):
#   prep      build colo and allreduce_busbw; all-reduce bus bandwidth, colo
#             against PyTorch's NCCL; 200-step runs of even all-reduce, async
#             PS over CUDA IPC with and without overlap, and the ZeroMQ path
#             (float32; bfloat16; bfloat16 with overlap; bfloat16 over 4
#             servers), each step's exchange by phase in the step records and
#             each server's in its log; sync and async PS again with
#             [param_server] mps = "off" (the servers by time slices, as before
#             colo ran them under MPS); the neighbour's strength (uneven
#             all-reduce for 200 steps beside an 8192 and a 16384 matrix-product
#             neighbour: the rounds use the smaller one that slows worker 1's
#             compute at least 1.8x, else the stronger). About 5 minutes on 2 H200s.
#   rounds K  round K of every run to 90% test accuracy (seed K), into
#             OUT/main/ps as NAME (K = 1) or NAME.rK. About 4 minutes.
#   summary   bench/dist/ps/summarize.py over every round in OUT/main/ps, then
#             simulate_check.py (timing only, seconds) on round 1.
# Usage: bench/dist/ps/full_run.sh OUT prep | rounds K | summary
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$1
STAGE=${2:-prep}
mkdir -p "$OUT"
export BUILD_TARGETS="colo allreduce_busbw" CMAKE_EXTRA=-DCOLO_BUILD_TESTS=OFF PS_SIMULATE=0
RUNS="even:allreduce even:ps-sync even:ps-async even:ps-async-ov even:ps-async-zmq even:ps-async-zmq-s4
      uneven:allreduce uneven:ps-async uneven:ps-async-ov uneven:ps-async-sl uneven:switch uneven:switch-ss"

case $STAGE in
  prep)
    OUT=$OUT/ablation PS_ROUNDS=1 PS_BUSBW=1 PS_MAX_STEPS=200 \
      PS_RUNS="even:allreduce even:ps-sync even:ps-async even:ps-async-ov even:ps-async-zmq-fp32 even:ps-async-zmq-bf16 even:ps-async-zmq even:ps-async-zmq-s4" \
      bash bench/gpu/run.sh ps
    OUT=$OUT/ablation-mps-off PS_ROUNDS=1 PS_MAX_STEPS=200 PS_MPS=off PS_RUNS="even:ps-sync even:ps-async" \
      bash bench/gpu/run.sh ps
    for size in 8192 16384; do
      OUT=$OUT/neighbour-$size PS_ROUNDS=1 PS_MAX_STEPS=200 NEIGHBOUR_SIZE=$size PS_RUNS="uneven:allreduce" \
        bash bench/gpu/run.sh ps
    done
    python3 - "$OUT" >"$OUT/neighbour_size" <<'PY'
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
    echo "neighbour size for the rounds: $(cat "$OUT/neighbour_size")"
    ;;
  rounds)
    round=${3:?rounds needs K}
    size=$(cat "$OUT/neighbour_size" 2>/dev/null || echo 16384)
    # run.sh writes OUT/ps and tars it at the end: each round goes to its own
    # scratch OUT, and its run directories join OUT/main/ps.
    OUT=$OUT/round-$round PS_FIRST_ROUND=$round PS_ROUNDS=$round NEIGHBOUR_SIZE=$size PS_RUNS="$RUNS" \
      bash bench/gpu/run.sh ps
    mkdir -p "$OUT/main/ps" && tar xzf "$OUT/round-$round/ps.tgz" -C "$OUT/main" && rm -rf "$OUT/round-$round/ps.tgz"
    ;;
  summary)
    tar xzf "$OUT/ablation/dist.tgz" -O dist/busbw.jsonl >"$OUT/main/ps/busbw.jsonl"
    python3 bench/dist/ps/summarize.py "$OUT/main/ps" | tee "$OUT/main/table.txt"
    OMP_NUM_THREADS=$(nproc) python3 bench/dist/ps/simulate_check.py "${BUILD:-build-gpu}/colo" "$OUT/main/ps" \
      | tee -a "$OUT/main/table.txt"
    ;;
  *) echo "usage: $0 OUT prep | rounds K | summary" >&2; exit 2 ;;
esac
