#!/usr/bin/env bash
# Screenshots of colod's dashboard (overview and one job's page) in headless
# Chromium, with colod scheduling a small batch on two simulated GPUs:
# jobs of 8-30 GiB (some wait for memory), one that fails, and a `colo train`
# job on the CPU whose metrics the job page charts, and a `colo sweep` whose
# page ranks its models.
#
#   bench/dashboard/screenshot.sh BUILD OUT_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
work=$(mktemp -d)
export XDG_STATE_HOME=$work COLO_SIMULATED_GPUS=2 COLO_PROGRESS=0
"$BUILD/colod" --poll 0.2 >"$work/colod.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -f "$work/colo/colod.json" ] && break; sleep 0.1; done
colo() { "$BUILD/colo" "$@"; }
colo submit --name quickstart-mlp --mem 1GiB --sm-share 0.2 -- \
  sh -c "$BUILD/colo train $PWD/examples/quickstart.toml --device cpu --out $work/runs/\$COLO_JOB_ID" >/dev/null
for spec in "resnet50-a 30GiB 0.5 25" "resnet50-b 30GiB 0.5 30" "vit-small 28GiB 0.6 20" "lenet-1 8GiB 0.2 12" \
            "lenet-2 8GiB 0.2 16" "lenet-3 8GiB 0.2 9" "gpt-small 24GiB 0.4 22"; do
  read -r name mem sm secs <<<"$spec"
  colo submit --name "$name" --mem "$mem" --sm-share "$sm" -- sh -c "echo $name starts; sleep $secs; echo $name done" >/dev/null
done
colo submit --name sweep-quickstart --mem 2GiB --sm-share 0.3 -- \
  sh -c "$BUILD/colo sweep $PWD/examples/sweep_quickstart.toml --device cpu --output $work/sweep" >/dev/null
colo submit --name broken --mem 2GiB --sm-share 0.1 -- sh -c 'echo "Traceback: bad input" >&2; exit 3' >/dev/null
sleep 40
token=$(cat "$work/colo/token")
port=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['port'])" "$work/colo/colod.json")
shot() {
  chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$work/chromium-$2" \
    --hide-scrollbars --window-size=1400,1500 --virtual-time-budget=5000 --screenshot="$OUT/$2.png" \
    "http://127.0.0.1:$port/?token=$token$1" 2>/dev/null
}
shot "" overview
shot "#/job/1" job_page
shot "#/job/9" sweep_page
colo queue
ls -la "$OUT"
