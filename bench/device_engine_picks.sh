#!/usr/bin/env bash
# One prepared run on a lent many-core machine: bench/engine_picks.py's design pairs on the
# multi-process engine, where every partition process has a core of its own (on the 2-core VM
# four to eight share two). Host predictions use the 16-core calibration measured earlier on
# such a machine (bench/results_16core/calibration.json): calibrating again would take the
# lease's time. Needs pymetis as a wheel in .whl/. Usage: OUT=dir bash bench/device_engine_picks.sh
# Options (environment): PAIRS (3), BATCHES (2000), ONLY="case ..." (all), PREDICT=0 (the
# engine only: predict here afterwards, `engine_picks.py --no-engine`, and save the lease's time).
set -u
source "$(dirname "$0")/device_env.sh"
only=(); [ -n "${ONLY:-}" ] && only=(--only $ONLY)
[ "${PREDICT:-1}" = 0 ] && only+=(--no-predict)
$PY bench/engine_picks.py "${only[@]}" --pairs "${PAIRS:-3}" --batches "${BATCHES:-2000}" \
  --calibration bench/results_16core/calibration.json --save "$OUT/engine_picks.json" 2>&1 \
  | grep --line-buffered -v Warning | tee "$OUT/engine_picks.txt"
date -u | tee -a "$OUT/host.txt"
