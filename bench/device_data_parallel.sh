#!/usr/bin/env bash
# One prepared run on a lent many-core machine for the data-parallel lanes (issue 18, item 4):
# the spec's table-level pick against its data-parallel pick on the multi-process engine, on
# 2 and 4 machines, where every partition process has a core of its own (on the 2-core VM
# three processes share two). Then a quick calibration of that host and what the pick does
# with it. No Spark there (no Java): part 1 of bench/data_parallel.py is skipped. Needs
# pymetis as a wheel in .whl/. Usage: OUT=dir bash bench/device_data_parallel.sh
# Options (environment): MACHINES="2 4", WORKLOADS=a,b,c, CALIBRATION=file (skips calibrating).
set -u
source "$(dirname "$0")/device_env.sh"
if [ -n "${CALIBRATION:-}" ]; then
  cp "$CALIBRATION" "$OUT/calibration.json"
else
  $PY -m advisor calibrate --quick --out "$OUT/calibration.json" 2>&1 | tail -5 | tee "$OUT/calibrate.txt"
fi
cal=(); [ -s "$OUT/calibration.json" ] && cal=(--calibration "$OUT/calibration.json")
for m in ${MACHINES:-2 4}; do
  $PY bench/data_parallel.py --engine-only --workloads "${WORKLOADS:-fraud-scoring,boundaries-1sp,move-micro}" \
    --engine-machines $m --repeats 5 --engine-batches 3000 --sim-batches 1000 "${cal[@]}" 2>&1 \
    | tee "$OUT/data_parallel_m$m.txt"
done
date -u | tee -a "$OUT/host.txt"
