#!/usr/bin/env bash
# Arrays side by side on a GPU: 32 MLP configurations on Fashion-MNIST (two
# architectures, arrays of 8), 1 epoch, once one array after another and once
# all four arrays from one data pass on their own CUDA streams.
#   bench/fusion/side_by_side_check.sh BUILD OUT
set -uo pipefail
BUILD=${1:?build dir}; OUT=${2:?out dir}
mkdir -p "$OUT/fusion"
for mode in false true; do
  sed -e "s|^output = .*|output = \"$OUT/fusion/sbs-$mode\"|" -e 's/^epochs = .*/epochs = 1/' \
      -e 's/^name = "lenet"/name = "mlp"/' -e '/^halving/d' examples/sweep_lenet.toml |
    sed -e "s/^sampling = \"grid\"/sampling = \"grid\"\nside_by_side = $mode\nmax_array = 8/" \
        -e 's/^seed = \[0, 1\]/widths = [[256, 128], [1024]]/' >"$OUT/fusion/sbs-$mode.toml"
  start=$(date +%s.%N)
  "$BUILD/colo" sweep "$OUT/fusion/sbs-$mode.toml" >"$OUT/fusion/sbs-$mode.log" 2>&1 || { tail -20 "$OUT/fusion/sbs-$mode.log"; exit 1; }
  echo "side_by_side=$mode: $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(grep -c '^array' "$OUT/fusion/sbs-$mode.log") arrays; best $(sed -n '/^rank/{n;p}' "$OUT/fusion/sbs-$mode.log")"
done
