#!/usr/bin/env bash
# colo's own CUDA kernels on the GPU (grouped convolution, ReLU + max
# pooling): the correctness tests, the kernel-level timing against cuDNN
# (grouped_conv_bench), an Nsight Compute breakdown of one fused LeNet step,
# and whole fused LeNet training with and without them (fusion_throughput).
#
#   bench/fusion/grouped_conv_check.sh BUILD OUT
#
# Writes OUT/grouped_conv_tests.log, OUT/grouped_conv_bench.jsonl,
# OUT/ncu_step_breakdown.txt and OUT/own_grouped_conv.jsonl; prints short tables.
set -uo pipefail
build=$1 out=$2
"$build/tests/fuse/colo_fuse_tests" --gtest_filter='GroupedConv*:ConvPlan*:ReluMaxPool*' >"$out/grouped_conv_tests.log" 2>&1
echo "grouped conv tests: $(grep -E '^\[  (PASSED|FAILED) ' "$out/grouped_conv_tests.log" | tr '\n' ' ')"
grep -E "Failure|exception|error" "$out/grouped_conv_tests.log" | head -10

"$build/bench/grouped_conv_bench" --models 8 32 64 >"$out/grouped_conv_bench.txt" 2>&1
grep '^{' "$out/grouped_conv_bench.txt" >"$out/grouped_conv_bench.jsonl"
sed -n '/^N /,$p' "$out/grouped_conv_bench.txt"
python3 - "$out/grouped_conv_bench.jsonl" <<'PY'
import json, sys
print(f"{'N':>4} {'path':>6} {'forward':>9} {'input_grad':>11} {'weight_grad':>12} {'bias_grad':>10}  (us, each alone)")
for line in open(sys.argv[1]):
    r = json.loads(line)
    for path, ops in r.get("per_operation_us", {}).items():
        print(f"{r['models']:>4} {path:>6} {ops['forward']:>9.1f} {ops['input_grad']:>11.1f} {ops['weight_grad']:>12.1f} {ops.get('bias_grad', 0):>10.1f}")
PY

# Where a fused LeNet step's time goes (N = 32, own kernels, eager so that
# every kernel is its own launch): four steps' kernels under Nsight Compute.
if command -v ncu >/dev/null; then
  ncu --launch-skip 3000 --launch-count 600 --metrics gpu__time_duration.sum --csv \
    "$build/bench/fusion_throughput" --model lenet --mode fused --models 32 --seconds 0.5 --warmup-steps 40 \
    --no-graph >"$out/ncu_step.csv" 2>"$out/ncu_step.err"
  python3 bench/fusion/kernel_breakdown.py "$out/ncu_step.csv" | tee "$out/ncu_step_breakdown.txt" | head -25
fi

: >"$out/own_grouped_conv.jsonl"
for n in 8 32 64; do
  for flag in --aten-kernels ""; do
    # shellcheck disable=SC2086
    "$build/bench/fusion_throughput" --model lenet --mode fused --models "$n" --seconds 2 $flag \
      2>>"$out/own_grouped_conv.err" | tail -1 >>"$out/own_grouped_conv.jsonl"
  done
done
python3 - "$out/own_grouped_conv.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"{'lenet N':>8} {'ATen samples/s':>16} {'colo kernels':>14} {'ratio':>6}")
by = {(r["models"], r["own_kernels"]): r for r in rows}
for n in sorted({r["models"] for r in rows}):
    a, b = by.get((n, False)), by.get((n, True))
    if a and b:
        print(f"{n:>8} {a['samples_per_s']:>16,.0f} {b['samples_per_s']:>14,.0f} {b['samples_per_s'] / a['samples_per_s']:>6.2f}")
PY
