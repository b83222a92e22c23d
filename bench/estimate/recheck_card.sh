#!/usr/bin/env bash
# One card's re-estimate of real_training's rows against that card's committed
# truth (issue 50), on this machine's CPUs:
#
#   [RECHECK_ONLY=...] [RECHECK_ESTIMATORS=8] bench/estimate/recheck_card.sh BUILD CARD OUT [PROFILE.json]
#
# CARD: h100 or h200 (rows_CARD.jsonl); PROFILE.json: the stored profile the
# estimates use for CARD (else colo's built-in one). RECHECK_ONLY: set-ups,
# architectures or libraries (every row when empty). Writes OUT/rows.jsonl,
# OUT/summary.json and OUT/stderr.log; prints "CARD: " and the summary's
# first 300 characters.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: recheck_card.sh BUILD CARD OUT [PROFILE.json]" >&2; exit 2; }
build=$1 card=$2 out=$3 profile=${4:-}
results=bench/results/estimate/real_training
[ -f "$results/rows_$card.jsonl" ] || { echo "recheck_card.sh: no truth $results/rows_$card.jsonl" >&2; exit 2; }
mkdir -p "$out/profiles"
[ -n "$profile" ] && cp "$profile" "$out/profiles/$card.json"
COLO_PROFILE_DIR="$out/profiles" PYTHONPATH="$build/python" python3 bench/estimate/real_training.py \
  recheck --truth "$results/rows_$card.jsonl" --out "$out" --gpu "$card" \
  ${RECHECK_ONLY:+--only "$RECHECK_ONLY"} --estimators "${RECHECK_ESTIMATORS:-8}" \
  2>"$out/stderr.log" | tail -1 | cut -c1-300 | sed "s/^/$card: /"
rm -rf "$out/profiles"
