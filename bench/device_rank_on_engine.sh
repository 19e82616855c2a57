#!/usr/bin/env bash
# One prepared run on a lent many-core machine: bench/rank_on_engine.py, the busy-time
# estimate and the simulator beside the multi-process engine on random designs of linear-road
# and online-bidding at 8 machines (issue 19, item 1's misses). Predicts that host with a
# calibration of the same kind of machine refitted to today's simulator
# (bench/results_16core/calibration_refit.json, from `advisor calibrate --refit`), so the lease
# is spent on the engine, not on calibrating. Needs pymetis as a wheel in .whl/.
# Usage: OUT=dir bash bench/device_rank_on_engine.sh
# Options (environment): DESIGNS (14), BATCHES (1500), WORKLOADS (linear-road,online-bidding),
# CALIBRATION (the refitted file).
set -u
source "$(dirname "$0")/device_env.sh"
$PY bench/rank_on_engine.py --workloads "${WORKLOADS:-linear-road,online-bidding}" \
  --calibration "${CALIBRATION:-bench/results_16core/calibration_refit.json}" \
  --designs "${DESIGNS:-14}" --batches "${BATCHES:-1500}" --save "$OUT/rank_on_engine.json" 2>&1 \
  | grep --line-buffered -v Warning | tee "$OUT/rank_on_engine.txt"
date -u | tee -a "$OUT/host.txt"
