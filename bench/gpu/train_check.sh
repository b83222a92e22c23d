#!/usr/bin/env bash
# `colo train` on the GPU: ResNet-18 on synthetic CIFAR-shaped data and the
# quickstart MLP. Writes metrics and console output under OUT and prints one
# line per run: samples/s of the last epoch, peak allocated and reserved memory.
set -uo pipefail
BUILD=$1
OUT=$2
work=$(mktemp -d)
for spec in resnet18_synthetic quickstart; do
  if ! "$BUILD/colo" train "examples/$spec.toml" --device cuda --out "$work/$spec" \
      >"$OUT/train_$spec.txt" 2>&1; then
    echo "train $spec: FAILED"; tail -5 "$OUT/train_$spec.txt"; continue
  fi
  cp "$work/$spec/metrics.jsonl" "$OUT/train_${spec}_metrics.jsonl"
  python3 - "$spec" "$work/$spec/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2])]
last = rows[-1]
print(f"train {sys.argv[1]}: {len(rows)} epochs, {last['samples_per_s']:.0f} samples/s, "
      f"test_acc {last['test_accuracy']:.4f}, peak_mem {last.get('peak_mem_bytes', 0)/2**20:.0f} MiB, "
      f"reserved {last.get('peak_reserved_bytes', 0)/2**20:.0f} MiB")
PY
done
rm -rf "$work"
