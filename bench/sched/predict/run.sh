#!/usr/bin/env bash
# A learning-rate search of `colo train` jobs whose commands all differ (one
# spec per learning rate and seed): does the scheduler predict the SM share
# of jobs 2..N from the first one measured, so that only one job settles?
# Runs `colo run` (magm under MPS) and prints, per job, when it started and
# whether its share was measured or predicted.
#
#   bench/sched/predict/run.sh BUILD OUT [JOBS=8] [STEPS=600]
#   PREDICT_FLAGS=--no-share-prediction: the baseline, every job settling
#   (run in a second call: the same tags would overwrite this run's files).
#   PREDICT_ALONE=1: first one job of the model alone on the same store, so
#   that every job of the batch gets its slowdown against it.
set -uo pipefail
build=$1 out=$2 jobs=${3:-8} steps=${4:-600}
root=$PWD colo=$PWD/$build/colo
work=/tmp/colo-predict
rm -rf "$work" && mkdir -p "$work/specs" "$out"
: >"$work/jobs.toml"
for i in $(seq 0 $((jobs - 1))); do
  lr=$(python3 -c "print(round(0.2 / 2 ** $i, 6))")
  sed -e "s/^seed = .*/seed = $i/" -e "s/^lr = .*/lr = $lr/" -e "s/^epochs = .*/epochs = 1\nmax_steps = $steps/" \
    "$root/examples/lenet.toml" >"$work/specs/lenet_lr$i.toml"
  printf '[[job]]\nname = "lenet-lr%s"\ncommand = "%s train %s --device cuda --out %s/runs/%s"\n\n' \
    "$i" "$colo" "$work/specs/lenet_lr$i.toml" "$work" "$i" >>"$work/jobs.toml"
done
if [ "${PREDICT_ALONE:-0}" = 1 ]; then
  # The first spec once alone on the same store: its samples/s alone becomes
  # the model's alone figure, and every job of the batch gets a slowdown.
  printf '[[job]]\nname = "lenet-alone"\ncommand = "%s train %s --device cuda --out %s/runs/alone"\n' \
    "$colo" "$work/specs/lenet_lr0.toml" "$work" >"$work/alone.toml"
  "$colo" run "$work/alone.toml" --policy magm --mode mps --poll 0.5 --store "$work/store/jobs.db" \
    >"$work/alone.txt" 2>&1
  echo "predict: alone run exit $?; $(grep -o 'samples/s.*' "$work/alone.txt" | head -1)"
fi
start=$(date +%s)
# shellcheck disable=SC2086
"$colo" run "$work/jobs.toml" --policy magm --mode mps --poll 0.5 --store "$work/store/jobs.db" ${PREDICT_FLAGS:-} \
  --summary-json "$work/run.json" --out "$work/report" >"$work/run.txt" 2>&1
echo "predict: colo run exit $?, $(( $(date +%s) - start )) s"
settled=$(grep -c "settled: SM share" "$work/run.txt")
tag=${PREDICT_FLAGS:+baseline}
python3 - "$work" "$settled" <<'PY' | tee "$out/predict${tag:+_$tag}.txt"
import glob, json, sys
work, settled = sys.argv[1], int(sys.argv[2])
jobs = [json.loads(l) for f in glob.glob(work + "/report/jobs_*.jsonl") for l in open(f)]
jobs.sort(key=lambda j: j["start_s"])
for j in jobs:
    rate = f"{j['samples_per_s']:8.0f} samples/s" if "samples_per_s" in j else ""
    slow = f"  slowdown {j['slowdown']:.2f}x" if "slowdown" in j else ""
    print(f"{j['name']:>12} start {j['start_s']:6.1f} s  end {j['end_s']:6.1f} s  {j['state']}  {rate}{slow}")
first_end = min(j["end_s"] for j in jobs)
started_before = sum(1 for j in jobs if j["start_s"] < first_end)
print(f"{len(jobs)} jobs, distinct commands; {settled} settled (share measured); "
      f"{started_before} had started before the first one ended")
slowdowns = [j["slowdown"] for j in jobs if "slowdown" in j]
if slowdowns:
    print(f"slowdown against alone: mean {sum(slowdowns) / len(slowdowns):.2f}x, max {max(slowdowns):.2f}x "
          f"({len(slowdowns)} jobs with an alone figure)")
PY
for f in "$work/run.txt" "$work/run.json" "$work"/report/jobs_*.jsonl; do
  [ -f "$f" ] && cp "$f" "$out/$(basename "${f%.*}")${tag:+_$tag}.${f##*.}"
done
