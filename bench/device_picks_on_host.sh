#!/usr/bin/env bash
# One prepared run on a lent many-core machine: fit a calibration there (advisor calibrate,
# the full one unless QUICK=1), then run bench/engine_picks.py's design pairs on the
# multi-process engine and predict each pair for that same host with it (on the host's cores,
# and as the engine's closed loop), so measured and predicted ratios come from one machine.
# Needs pymetis as a wheel in .whl/. Usage: OUT=dir bash bench/device_picks_on_host.sh
# Options (environment): QUICK (unset), PAIRS (2), BATCHES (2000), ONLY="case ..." (all).
set -u
source "$(dirname "$0")/device_env.sh"
calibrate_here
only=(); [ -n "${ONLY:-}" ] && only=(--only $ONLY)
$PY bench/engine_picks.py "${only[@]}" --pairs "${PAIRS:-2}" --batches "${BATCHES:-2000}" \
  --calibration "$OUT/calibration.json" --save "$OUT/engine_picks.json" 2>&1 \
  | grep --line-buffered -v Warning | tee "$OUT/engine_picks.txt"
date -u | tee -a "$OUT/host.txt"
