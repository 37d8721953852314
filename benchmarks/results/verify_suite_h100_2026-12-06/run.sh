#!/usr/bin/env bash
# Device call for issue 38: one property through the CLI with --gpus 1, then one ACAS-shaped suite
# on one GPU worker and on 16 CPU workers of the same host, in turn.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl35/*.whl || exit 1
mkdir -p /tmp/new/pbbflow && tar -xzf .dev/head.tgz -C /tmp/new/pbbflow
cd /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
echo d9bd75d > "$OUT/commit.txt"
timeout 200 python3 benchmarks/verify_suite.py --networks 2 --instances 4 --widths 0.1 0.3 0.5 --time-limit 20 \
   --gpus 1 --out "$OUT/suite_gpu.json" > /dev/null 2> "$OUT/suite_gpu.err"
echo "gpu suite done at $SECONDS s" >&2
timeout $((400 - SECONDS)) python3 benchmarks/verify_suite.py --networks 2 --instances 4 --widths 0.1 0.3 0.5 \
   --time-limit 20 --gpus 0 --out "$OUT/suite_cpu16.json" > /dev/null 2> "$OUT/suite_cpu16.err"
echo "all done at $SECONDS s" >&2
tail -n 5 "$OUT"/*.err "$OUT/cli_gpu.txt"
