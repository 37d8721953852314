#!/usr/bin/env bash
# Device call for issue 35 after the kink steps: the class side by side (CPU thread, GPU, auto route,
# MAiNGO) alone on the host, then SCIP beside pbbflow and MAiNGO on Bukin N.6 and HS071.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl35/*.whl || exit 1
# HEAD's tree (the working tree here may hold a colleague's unfinished edits)
mkdir -p /tmp/new/pbbflow && tar -xzf .dev/head.tgz -C /tmp/new/pbbflow && cp -r .spatial /tmp/new/pbbflow/
cd /tmp/new/pbbflow
export PYTHONPATH=/tmp/site:/tmp/new
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
nproc >> "$OUT/gpu.txt"
echo 68e335b > "$OUT/commit.txt"
( time python3 -m pbbflow.cli.main minimize peaks-ann --gpus 1 --json ) > "$OUT/first_compile.txt" 2>&1
echo "compiled at $SECONDS s" >&2
timeout 380 taskset -c 0-7 python3 benchmarks/spatial_vs_maingo.py --data .spatial --gpu --auto \
   --repeats 3 --time-limit 20 --out "$OUT/vs_gpu_alone.json" 2> "$OUT/vs_gpu.err"
echo "class done at $SECONDS s" >&2
timeout $((570 - SECONDS)) taskset -c 0-7 python3 benchmarks/spatial_vs_maingo.py --scip --repeats 1 --time-limit 20 \
   benchmarks/problems/bukin-6.json .spatial/C17-hs071-hock-schittkowski-71.json --out "$OUT/vs_scip_two.json" 2> "$OUT/vs_scip.err"
echo "scip done at $SECONDS s" >&2
# issue 36: the network files on the GPU (256 subdomains), 20 s each, in the time left
timeout $((585 - SECONDS)) python3 benchmarks/spatial_budgets.py --gpu --budgets 256 --time-limit 20 \
   --folder benchmarks/networks --out "$OUT/networks_gpu.json" > /dev/null 2> "$OUT/networks_gpu.err"
echo "all done at $SECONDS s" >&2
tail -n 3 "$OUT"/*.err
