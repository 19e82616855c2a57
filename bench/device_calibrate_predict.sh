#!/usr/bin/env bash
# On a lent many-core machine, after bench/device_engine_picks.sh: calibrate the simulator
# there (advisor calibrate --quick, then the full one as time allows) and predict
# bench/engine_picks.py's pairs with each calibration, so the measured ratios can be set
# beside predictions for the host that measured them. Usage: OUT=dir bash bench/device_calibrate_predict.sh
set -u
source "$(dirname "$0")/device_env.sh"
for kind in quick full; do
  q=(); [ $kind = quick ] && q=(--quick)
  $PY -m advisor calibrate "${q[@]}" --out "$OUT/calibration_$kind.json" 2>&1 | grep --line-buffered -v Warning \
    | tail -4 | tee "$OUT/calibrate_$kind.txt"
  $PY bench/engine_picks.py --no-engine --calibration "$OUT/calibration_$kind.json" \
    --save "$OUT/predicted_$kind.json" 2>&1 | grep --line-buffered -v Warning | tee "$OUT/predicted_$kind.txt"
done
date -u | tee -a "$OUT/host.txt"
