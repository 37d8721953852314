#!/usr/bin/env bash
# Device call for issue 36: the network files on the GPU (256 subdomains, 20 s each) with the GPU search's
# network bound (8802387), after the kernels compiled into numba's cache.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
rm -rf /tmp/new && mkdir -p /tmp/new/pbbflow && tar -xzf .dev/head.tgz -C /tmp/new/pbbflow
cd /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
echo f6db6da > "$OUT/commit.txt"
( time python3 -m pbbflow.cli.main minimize benchmarks/networks/camel-2-32-32-1-sigmoid.json --gpus 1 --json ) > "$OUT/first_compile.txt" 2>&1
echo "compiled at $SECONDS s" >&2
timeout $((440 - SECONDS)) python3 benchmarks/spatial_budgets.py --gpu --budgets 256 --time-limit 20 --folder benchmarks/networks \
  --out "$OUT/networks_gpu.json" > /dev/null 2> "$OUT/networks_gpu.err"
echo "all done at $SECONDS s" >&2
tail -n 3 "$OUT"/*.err
python3 -c "
import json; d=json.load(open('$OUT/networks_gpu.json')); print(d['summary']); print({r['problem']: (r['status'], r['nodes'], r['seconds']) for r in d['runs']})"
