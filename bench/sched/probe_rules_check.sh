#!/usr/bin/env bash
# The probe's start-up rules on a real GPU (issue 49): three jobs under
# `colo run` (magm, MPS, shares measured alone, colo's default):
#   steady  sm_share 0.5 declared; trains from its start: the neighbour paused;
#   late    no share; 14 s on the CPU after CUDA is up (its memory quiet), then
#           trains: expected `job 2 not settled yet` (almost nothing alone),
#           then settled from its first progress report;
#   warm    no share; 25 s of light GPU work with no progress report, then
#           trains: expected settled before it trains, then `job 3 settled
#           again, now that it trains`.
# Usage: bench/sched/probe_rules_check.sh BUILD OUT; prints the settle lines
# and one verdict line; OUT/probe_rules.log is colo run's whole log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:?usage: probe_rules_check.sh BUILD OUT}" && pwd)
OUT=${2:?usage: probe_rules_check.sh BUILD OUT}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/colo-probe-rules.XXXXXX)
export PYTHONPATH="$BUILD/python:$here/../../python${PYTHONPATH:+:$PYTHONPATH}"
job="python3 $here/probe_rules_job.py"
cat >"$work/jobs.toml" <<TOML
[[job]]
name = "steady"
mem = "4GiB"
sm_share = 0.5
command = "$job --train-s 60"
[[job]]
name = "late"
mem = "4GiB"
command = "$job --cpu-start-s 14 --train-s 20"
[[job]]
name = "warm"
mem = "4GiB"
command = "$job --warm-s 25 --train-s 20"
TOML
timeout 150 "$BUILD/colo" run "$work/jobs.toml" --store "$work/jobs.db" --policy magm --mode mps --poll 0.5 \
  >"$OUT/probe_rules.log" 2>&1
echo "probe_rules: colo run exit $?"
grep -E "settled|not settled|paused for" "$OUT/probe_rules.log"
late_again=$(grep -c "job 2 not settled yet" "$OUT/probe_rules.log")
warm_again=$(grep -c "job 3 settled again, now that it trains" "$OUT/probe_rules.log")
echo "probe_rules: late measured again ${late_again}x, warm measured once more ${warm_again}x" \
     "($( [ "$late_again" -ge 1 ] && [ "$warm_again" -ge 1 ] && echo both rules fired || echo NOT both))"
rm -rf "$work"
