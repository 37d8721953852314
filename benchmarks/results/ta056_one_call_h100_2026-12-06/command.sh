#!/usr/bin/env bash
# Device call for issue 37: ta056 from 3680 in one call of `pbbflow solve --gpus 1` (after a 3 s warm-up
# solve that compiles on a cold machine), then info --json, plot and the ETA at 10, 25, 50 %.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
rm -rf /tmp/new && mkdir -p /tmp/new/pbbflow && tar -xzf .dev/head.tgz -C /tmp/new/pbbflow
cd /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new NUMBA_CACHE_DIR=/tmp/nc
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > "$OUT/gpu.txt"
pbbflow() { python3 -c "import sys; from pbbflow.cli import main; sys.exit(main())" "$@"; }
rm -rf /tmp/warm.zarr /tmp/ta056.zarr
start=$(date +%s.%N)
pbbflow solve ta056 --ub 3680 --gpus 1 --run /tmp/warm.zarr --time-limit 3 > "$OUT/warm.txt" 2>&1
echo "warm-up rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")" >> "$OUT/warm.txt"
LIMIT=$((560 - SECONDS))
start=$(date +%s.%N)
pbbflow solve ta056 --ub 3680 --gpus 1 --run /tmp/ta056.zarr --time-limit $LIMIT > "$OUT/solve.txt" 2>&1
echo "solve rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))") limit=$LIMIT" >> "$OUT/solve.txt"
pbbflow info /tmp/ta056.zarr --json > "$OUT/info.json" 2> "$OUT/info.err"
pbbflow plot /tmp/ta056.zarr --out "$OUT/plot" > /dev/null 2>&1
total=$(python3 -c "import json; print(json.load(open('$OUT/info.json'))['nodes'])")
python3 benchmarks/eta_check.py history "$OUT/info.json" --total "$total" --shares 0.1 0.25 0.5 > "$OUT/eta.json" 2>&1
grep -v Warning "$OUT/warm.txt" | tail -4; grep -v Warning "$OUT/solve.txt" | tail -12; cat "$OUT/eta.json" | head -30
