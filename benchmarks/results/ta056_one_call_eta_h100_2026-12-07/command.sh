#!/usr/bin/env bash
# Device call (2026-12-07, sixteenth session), issue 37: ta056 from 3680 in one call of `pbbflow solve --gpus 1`
# (after a 3 s warm-up solve that compiles on a fresh machine), with the ETA's sampled enumerations; then
# info --json, plot and the ETA against the finished proof at 10, 25 and 50 %.
set -u
R=/tmp/results_g; rm -rf $R; mkdir -p $R
pack() { tar czf "$OUT/results.tgz" -C $R . ; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
mkdir -p /tmp/root && ln -sfn "$PWD" /tmp/root/pbbflow
export PYTHONPATH=/tmp/site:/tmp/root PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/nc
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > $R/gpu.txt; nproc >> $R/gpu.txt
cp .dev/commit.txt .dev/run_g.sh $R/
pbbflow() { python3 -c "import sys; from pbbflow.cli import main; sys.exit(main())" "$@"; }
rm -rf /tmp/warm.zarr /tmp/ta056.zarr
start=$(date +%s.%N)
pbbflow solve ta056 --ub 3680 --gpus 1 --run /tmp/warm.zarr --time-limit 3 > $R/warm.txt 2>&1
echo "warm-up rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")" >> $R/warm.txt
LIMIT=$((${BUDGET:-575} - SECONDS))
start=$(date +%s.%N)
pbbflow solve ta056 --ub 3680 --gpus 1 --run /tmp/ta056.zarr --time-limit $LIMIT > $R/solve.txt 2>&1
echo "solve rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))") limit=$LIMIT" >> $R/solve.txt
pbbflow info /tmp/ta056.zarr --json > $R/info.json 2> $R/info.err
pbbflow plot /tmp/ta056.zarr --out $R/plot > /dev/null 2>&1
total=$(python3 -c "import json; print(json.load(open('$R/info.json'))['nodes'])")
python3 benchmarks/eta_check.py history $R/info.json --total "$total" --shares 0.1 0.25 0.5 > $R/eta.json 2>&1
cp -r /tmp/ta056.zarr $R/ 2>/dev/null; du -sh $R/ta056.zarr >> $R/gpu.txt
grep -v Warning $R/warm.txt | tail -4; grep -v Warning $R/solve.txt | tail -12; head -60 $R/eta.json
