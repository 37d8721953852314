#!/usr/bin/env bash
# Device call 4 (issue 35/36): what a new problem costs in kernel compiling/loading, each in a fresh process.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl35/*.whl || exit 1
mkdir -p /tmp/new && ln -sfn "$PWD" /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
timeout 240 python3 benchmarks/spatial_new_problem.py --node-limit 2000 --time-limit 10 peaks-ann .spatial/B6-booth.json \
  benchmarks/problems/C-g05-cec2006.json .spatial/C17-hs071-hock-schittkowski-71.json benchmarks/networks/*.json \
  > "$OUT/new_problem_gpu.json" 2> "$OUT/new_problem_gpu.err"
echo "gpu done at $SECONDS s" >&2
timeout $(( 320 - SECONDS )) python3 benchmarks/spatial_new_problem.py --backend cpu --node-limit 2000 --time-limit 10 peaks-ann \
  .spatial/B6-booth.json benchmarks/problems/C-g05-cec2006.json benchmarks/networks/camel-2-32-32-1-sigmoid.json \
  > "$OUT/new_problem_cpu.json" 2> "$OUT/new_problem_cpu.err"
echo "all done at $SECONDS s" >&2
tail -n 2 "$OUT"/*.err
