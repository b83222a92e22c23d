#!/usr/bin/env bash
# What `make demo` runs once `colo` is built: the quickstart, a fused sweep,
# then colo's main job — a batch of mixed training jobs packed onto the GPUs
# by `colo run` — and `colo report`'s PNGs of it. On a machine without a GPU
# the batch runs on two simulated GPUs (COLO_SIMULATED_GPUS=2), and says so.
# Usage: scripts/demo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
export PATH="$PWD/$build_dir:$PATH"
start=$SECONDS

phase() { printf '\n== [%3ds] %s\n' $((SECONDS - start)) "$*"; }

# The jobs' PyTorch scripts need a python3 that imports torch: the one on
# PATH (a venv, say), else Debian's.
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import torch' >/dev/null 2>&1; then
    COLO_PYTHON=$(command -v "$candidate")
    break
  fi
done
if [ -z "${COLO_PYTHON:-}" ]; then
  echo "demo: no python3 with torch (scripts/install-deps.sh installs Debian's python3-torch)" >&2
  exit 1
fi
export COLO_PYTHON

phase "1/4 colo train examples/quickstart.toml: an MLP on Fashion-MNIST, 2 epochs"
colo train examples/quickstart.toml

phase "2/4 colo sweep examples/sweep_quickstart.toml: 8 configurations as fused arrays"
colo sweep examples/sweep_quickstart.toml

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  where="on this machine's GPUs ($(nvidia-smi -L | wc -l)), under MPS"
else
  export COLO_SIMULATED_GPUS=2
  where="on 2 SIMULATED GPUs: no GPU here, so the jobs train on the CPU while colo
   places them by their memory estimates and SM shares as it would on GPUs"
fi
phase "3/4 colo run examples/demo/jobs.toml: 5 mixed jobs $where"
rm -rf runs/demo
mkdir -p runs/demo
colo run examples/demo/jobs.toml --store runs/demo/jobs.db --out runs/demo/report --poll 0.25
echo "job logs: runs/demo/jobs.db.logs/"

phase "4/4 colo report runs/demo/report: Gantt chart and GPU timeline"
colo report runs/demo/report

phase "demo done"
echo "Open runs/demo/report/gantt_magm_mps.png and runs/demo/report/timeline_gpus.png"
