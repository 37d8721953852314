#!/usr/bin/env bash
# Device call (2026-12-07, twelfth session): validate whole boxes WITHOUT the tape on the GPU (09f07e1+).
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
PBBFLOW_TEST_GPU=1 timeout $((270 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/gpu/spatial/test_network_bounds.py \
  tests/gpu/spatial/test_bnb.py -k "network or whole" > "$OUT/gpu_tests.txt" 2>&1
echo "tests done at $SECONDS s" | tee -a "$OUT/walls.txt"
timeout $((400 - SECONDS)) python3 benchmarks/spatial_gpu_whole_boxes.py --phase-budgets 2097152 --time-limit 10 --out "$OUT/whole_boxes.json" > /dev/null 2> "$OUT/whole_boxes.err"
echo "whole boxes done at $SECONDS s" | tee -a "$OUT/walls.txt"
tail -n 5 "$OUT/gpu_tests.txt"; tail -n 40 "$OUT/whole_boxes.err"
