#!/usr/bin/env bash
# The sweep claim: 32 LeNet configurations on Fashion-MNIST for 3 epochs as
# one `colo sweep` (fused arrays) against 4 ordinary `colo train` runs one
# after another (the sweep's best configuration and three others), and the
# best model's accuracy in the sweep against the same configuration alone.
#
#   bench/fusion/sweep_check.sh BUILD OUT   -> OUT/fusion/sweep_check.json
set -uo pipefail
BUILD=${1:?build dir}; OUT=${2:?out dir}
SWEEP=${SWEEP:-examples/sweep_lenet.toml}
DIR="$OUT/fusion/sweep"
rm -rf "$DIR"; mkdir -p "$DIR"
start=$(date +%s.%N)
"$BUILD/colo" sweep "$SWEEP" --output "$DIR/sweep" >"$DIR/sweep.log" 2>&1 || { tail -20 "$DIR/sweep.log"; exit 1; }
sweep_wall=$(python3 -c "import time; print(time.time() - $start)")
tail -40 "$DIR/sweep.log" | head -8

# Training specs of the best configuration and three others, as colo train takes them.
python3 - "$DIR" "$SWEEP" <<'PY'
import json, sys
d = sys.argv[1]
results = json.load(open(f"{d}/sweep/results.json"))["models"]
picks = [results[0]["model"]] + [m["model"] for m in results[1:4]]
base = open(sys.argv[2]).read().split("[sweep]")[0]
for i, k in enumerate(picks):
    c = json.load(open(f"{d}/sweep/model-{k}/config.json"))
    o = c["optimizer"]
    text = base.replace('output = "runs/sweep_lenet"', f'output = "{d}/alone-{i}"')
    text = text.replace("seed = 0\n", f"seed = {c['seed']}\nshuffle_seed = {c['shuffle_seed']}\n", 1)
    text = text.replace("lr = 0.05\nmomentum = 0.9\n",
                        f"lr = {o['lr']}\nmomentum = {o['momentum']}\nweight_decay = {o['weight_decay']}\n")
    open(f"{d}/alone-{i}.toml", "w").write(text)
json.dump(picks, open(f"{d}/picks.json", "w"))
PY
seq_total=0
for i in 0 1 2 3; do
  s=$(date +%s.%N)
  "$BUILD/colo" train "$DIR/alone-$i.toml" >"$DIR/alone-$i.log" 2>&1 || { tail -5 "$DIR/alone-$i.log"; exit 1; }
  seq_total=$(python3 -c "import time; print($seq_total + time.time() - $s)")
done
python3 - "$DIR" "$sweep_wall" "$seq_total" "$OUT/fusion/sweep_check.json" <<'PY'
import json, sys
d, sweep_s, seq_s, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
results = json.load(open(f"{d}/sweep/results.json"))
best = results["models"][0]
alone = [json.loads(l) for l in open(f"{d}/alone-0/metrics.jsonl")][-1]
r = {"sweep_models": len(results["models"]), "sweep_wall_s": sweep_s, "sweep_total_s": results["total_s"],
     "array_sizes": results["array_sizes"], "four_sequential_s": seq_s,
     "sweep32_time_over_4_sequential": sweep_s / seq_s,
     "best_model": best["model"], "best_values": best["values"],
     "best_acc_sweep": best["test_accuracy"], "best_acc_alone": alone["test_accuracy"],
     "sweep32_best_acc_gap_pp": 100 * abs(best["test_accuracy"] - alone["test_accuracy"]),
     "command": "bench/fusion/sweep_check.sh BUILD OUT"}
json.dump(r, open(out, "w"), indent=2)
print(f"sweep of 32: {sweep_s:.1f} s; 4 sequential colo train: {seq_s:.1f} s; ratio {r['sweep32_time_over_4_sequential']:.2f}; "
      f"best {100*best['test_accuracy']:.2f}% in sweep vs {100*alone['test_accuracy']:.2f}% alone")
PY
