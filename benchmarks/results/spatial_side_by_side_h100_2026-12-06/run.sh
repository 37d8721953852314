#!/usr/bin/env bash
# Device call 2 for issue 35: the GPU, the auto route and MAiNGO side by side alone on the host (no SCIP beside them).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl35/*.whl || exit 1
mkdir -p /tmp/new && ln -sfn "$PWD" /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new
lscpu > "$OUT/lscpu.txt"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
( time python3 -m pbbflow.cli.main minimize peaks-ann --gpus 1 --json ) > "$OUT/first_compile.txt" 2>&1
echo "compiled at $SECONDS s" >&2
timeout $(( 500 - SECONDS )) taskset -c 0-7 python3 benchmarks/spatial_vs_maingo.py --data .spatial --gpu --auto \
   --repeats 3 --time-limit 20 --out "$OUT/vs_gpu_alone.json" 2> "$OUT/vs_gpu_alone.err"
echo "all done at $SECONDS s" >&2
tail -n 3 "$OUT"/*.err
