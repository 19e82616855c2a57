#!/usr/bin/env bash
# One prepared run on a lent many-core machine (stop 62): fit a calibration there, run the
# newest design pairs of bench/engine_picks.py on the multi-process engine, predicted for that
# host with it, then check how the calibration prices wide stream tuples (bench/wide_tuples.py).
# Needs pymetis as a wheel in .whl/. Usage: OUT=dir bash bench/device_pairs_and_bytes.sh
# Options (environment): PAIRS (3), BATCHES (3000), ONLY (the three stop-62 cases), QUICK (unset:
# the full calibration; set: --quick, and short runs, to try the script out here first).
set -u
source "$(dirname "$0")/device_env.sh"
calibrate_here
$PY bench/engine_picks.py --only ${ONLY:-generated-3100-x2 generated-3102-x2 generated-3102-x4} \
  --pairs "${PAIRS:-3}" --batches "${BATCHES:-3000}" --calibration "$OUT/calibration.json" \
  --save "$OUT/engine_picks.json" 2>&1 | grep --line-buffered -v Warning | tee "$OUT/engine_picks.txt"
date -u | tee -a "$OUT/host.txt"
$PY bench/wide_tuples.py --batches ${WIDE_BATCHES:-200} --runs 1 \
  --calibration advisor/data/calibration.json "$OUT/calibration.json" 2>&1 \
  | grep --line-buffered -v Warning | tee "$OUT/wide_tuples.txt"
date -u | tee -a "$OUT/host.txt"
