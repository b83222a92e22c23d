#!/usr/bin/env bash
# What does NVML report per process, alone, time-sliced and under MPS?
# Runs two loads of known shape (load.py) in five phases and records
# nvidia-smi pmon (per-process sm%, from nvmlDeviceGetProcessUtilization) and
# dmon with the GPM SM activity metric for the whole GPU. Writes $OUT/*.txt.
# usage: OUT=dir bash bench/sched/process_util/probe.sh   (GPU machine)
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/process-util}; mkdir -p "$out"
phase_s=${PHASE_S:-10}

phase() {  # name, loads...
  local name=$1; shift
  echo "== $name" | tee -a "$out/loads.txt"
  nvidia-smi pmon -s u -d 1 -c "$phase_s" > "$out/pmon_$name.txt" 2>&1 &
  local pmon=$!
  nvidia-smi dmon --gpm-metrics 2 -d 1 -c "$phase_s" > "$out/dmon_$name.txt" 2>&1 &
  local dmon=$!
  local pids=()
  for load in "$@"; do python3 "$here/load.py" "$load" "$((phase_s + 2))" >> "$out/loads.txt" 2>&1 & pids+=($!); done
  wait "${pids[@]}" "$pmon" "$dmon"
}

phase small_alone small
phase big_alone big
phase both_timesliced small big

export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
sleep 1
phase small_alone_mps small
phase both_mps small big
for f in "$out"/*.txt; do echo "### $(basename "$f")"; cat "$f"; done
