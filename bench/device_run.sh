#!/usr/bin/env bash
# One prepared run on a lent many-core machine (see docs/measurements.md "Engine"): the engine's scaling
# figure (bench/engine.py section 6), a calibration of the simulator there, and the
# fidelity bench's engine runs, each written to $OUT as soon as it is done so that a run
# cut short still returns what it finished. Needs: pymetis as a wheel in .whl/ (no network
# there), the checkout on PYTHONPATH. Usage: OUT=dir bash bench/device_run.sh [--quick]
set -u
source "$(dirname "$0")/device_env.sh"
quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick)
$PY bench/engine.py --only 6 "${quick[@]}" 2>&1 | tee "$OUT/engine6.txt"
$PY -m advisor calibrate "${quick[@]}" --out "$OUT/calibration.json" 2>&1 | tee "$OUT/calibrate.txt"
reps=3; [ ${#quick[@]} -gt 0 ] && reps=1
batches=(); [ ${#quick[@]} -gt 0 ] && batches=(--batches 100)
cal="$OUT/calibration.json"; [ -s "$cal" ] || cal=bench/calibration.json
$PY bench/sim_fidelity.py --calibration "$cal" --repeats $reps "${batches[@]}" \
  --save-engine "$OUT/fidelity_engine.json" 2>&1 | tee "$OUT/fidelity.txt"
date -u | tee -a "$OUT/host.txt"
