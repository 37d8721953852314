#!/usr/bin/env bash
# Device call (issue 36/38, 2026-12-07): network objectives on the GPU with whole boxes against N^d
# subdomains (benchmarks/spatial_gpu_whole_boxes.py), the ACAS-shaped verify suite on one GPU, and the
# GPU tests of the network bounds and the spatial search on the device. Carry: .whl .shared .dev
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
mkdir -p /tmp/root && ln -sfn "$PWD" /tmp/root/pbbflow
export PYTHONPATH=/tmp/site:/tmp/root PYTHONUNBUFFERED=1
mkdir -p ../shared && cp -r .shared/data ../shared/
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > "$OUT/gpu.txt"
cp .dev/commit.txt "$OUT/"
( time python3 -m pbbflow.cli.main minimize benchmarks/networks/camel-2-32-32-1-sigmoid.json --gpus 1 --json ) > "$OUT/first_compile.txt" 2>&1
echo "compiled at $SECONDS s" | tee -a "$OUT/walls.txt"
timeout $((400 - SECONDS)) python3 benchmarks/spatial_gpu_whole_boxes.py --time-limit 20 --out "$OUT/whole_boxes.json" > /dev/null 2> "$OUT/whole_boxes.err"
echo "whole boxes done at $SECONDS s" | tee -a "$OUT/walls.txt"
( time timeout $((500 - SECONDS)) python3 benchmarks/verify_suite.py --networks 2 --instances 4 --widths 0.1 0.3 0.5 --time-limit 20 \
   --gpus 1 --out "$OUT/suite_gpu.json" ) > /dev/null 2> "$OUT/suite_gpu.err"
echo "suite done at $SECONDS s" | tee -a "$OUT/walls.txt"
PBBFLOW_TEST_GPU=1 timeout $((585 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/gpu/spatial/test_network_bounds.py \
  tests/gpu/spatial/test_bnb.py -k "network or whole" > "$OUT/gpu_tests.txt" 2>&1
echo "tests done at $SECONDS s" | tee -a "$OUT/walls.txt"
tail -n 3 "$OUT"/*.err "$OUT/gpu_tests.txt"
python3 -c "
import json; d=json.load(open('$OUT/whole_boxes.json')); print(json.dumps(d['summary_on_whole_box_problems']))" 2>&1 | head -20
