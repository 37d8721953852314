#!/usr/bin/env bash
# Device call for issues 36/38: the CROWN kernel over batches of boxes, then verify's input-splitting
# search with boxes bounded on one CPU thread and on the GPU, side by side.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl35/*.whl || exit 1
mkdir -p /tmp/new/pbbflow && tar -xzf .dev/head.tgz -C /tmp/new/pbbflow
cd /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
echo f5d7d8c > "$OUT/commit.txt"
timeout 120 python3 benchmarks/gpu_network_bounds.py --repeats 2 --out "$OUT/gpu_network_bounds.json" > /dev/null 2> "$OUT/gpu_network_bounds.err"
echo "kernel done at $SECONDS s" >&2
timeout $((420 - SECONDS)) python3 benchmarks/verify_gpu.py --instances 4 --widths 0.5 1.0 --time-limit 15 \
   --out "$OUT/verify_gpu.json" > /dev/null 2> "$OUT/verify_gpu.err"
echo "all done at $SECONDS s" >&2
tail -n 4 "$OUT"/*.err
