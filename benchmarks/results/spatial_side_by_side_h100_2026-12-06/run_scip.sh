#!/usr/bin/env bash
# Device call 3 for issue 35: SCIP beside pbbflow's CPU thread and MAiNGO, alone on the host (the GPU runs were call 2).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl35/*.whl || exit 1
mkdir -p /tmp/new && ln -sfn "$PWD" /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new
lscpu > "$OUT/lscpu.txt"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
timeout 420 taskset -c 0-7 python3 benchmarks/spatial_vs_maingo.py --data .spatial --scip \
   --repeats 1 --time-limit 20 --out "$OUT/vs_scip_alone.json" 2> "$OUT/vs_scip_alone.err"
echo "all done at $SECONDS s" >&2
tail -n 3 "$OUT"/*.err
