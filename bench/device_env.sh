# Sourced by the bench/device_*.sh scripts on a lent machine (no network there): installs the
# wheels carried in .whl/ (pymetis), puts them and the checkout on PYTHONPATH, and checks OUT.
# Sets PY (the interpreter: $PYTHON, default python3).
OUT=${OUT:?set OUT to a folder for the results}
PY=${PYTHON:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
{ echo "host: $(nproc) cores, $(uname -m), $($PY --version)"; date -u; uptime; } | tee "$OUT/host.txt"

# Fit a calibration on this machine into $OUT/calibration.json (the full one; QUICK=1: --quick),
# its summary into $OUT/calibrate.txt.
calibrate_here() {
  local q=(); [ -n "${QUICK:-}" ] && q=(--quick)
  $PY -m advisor calibrate "${q[@]}" --out "$OUT/calibration.json" 2>&1 | grep --line-buffered -v Warning \
    | tail -16 | tee "$OUT/calibrate.txt"
  date -u | tee -a "$OUT/host.txt"
}
