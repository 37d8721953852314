#!/usr/bin/env bash
# The 50-job class on one GPU machine (the device tool's run, with carry [".whl", "build"]): JSON under $OUT,
# all of it also in $OUT/all.tgz.  Modes:
#   rate   an old commit's tree (build/old: `git archive COMMIT | tar -x -C build/old`) beside this one:
#          benchmarks/gpu_explorer.py on ta056 from 3680 (30 s), this tree also with the instance left in
#          global memory (kernels.STAGED_BYTES = 0), then ta021-ta030 at their optima on each tree
#   sweep  this tree on ta056 from 3680, 25 s a run: 8,192-65,536 IVMs, and register caps 56, 80, 96
#   proof  `pbbflow solve ta056 --ub 3680 --gpus 1 --run` in one call (--time-limit $LIMIT, default 525),
#          then `pbbflow info --json`, `pbbflow plot` and benchmarks/eta_check.py's ETA at 10, 25, 50 %
# Usage: bash benchmarks/gpu_50_jobs.sh rate|sweep|proof
set -u
MODE=${1:?rate, sweep or proof}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/new /tmp/old && ln -sfn "$PWD" /tmp/new/pbbflow && ln -sfn "$PWD/build/old" /tmp/old/pbbflow
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.csv"
bench() {  # tree label staged_bytes(default: the code's) gpu_explorer-args...; REGS=N: a register cap
  local tree=$1 label=$2 staged=$3; shift 3
  NUMBA_CACHE_DIR=/tmp/nc-$label PYTHONPATH=/tmp/site:/tmp/$tree REGS=${REGS:-} STAGED=$staged \
    python3 - "$@" > "$OUT/$label.json" 2> "$OUT/$label.err" <<'PY'
import os, runpy, sys
from pbbflow.gpu.flowshop import kernels
if os.environ["REGS"]:
    kernels.EXPLORE_OPTIONS = {"max_registers": int(os.environ["REGS"])}
if os.environ["STAGED"] != "default":
    kernels.STAGED_BYTES = int(os.environ["STAGED"])
sys.argv = ["gpu_explorer.py"] + sys.argv[1:]
runpy.run_path(os.path.join(os.path.dirname(kernels.__file__), "..", "..", "benchmarks", "gpu_explorer.py"), run_name="__main__")
PY
  echo "$label rc=$?" >> "$OUT/log.txt"
}
pbbflow() { PYTHONPATH=/tmp/site:/tmp/new python3 -c "import sys; from pbbflow.cli import main; sys.exit(main())" "$@"; }
case $MODE in
rate)
  bench old old_ta056 default --instances ta056 --ub-offset 1 --max-seconds 30
  bench new new_ta056 default --instances ta056 --ub-offset 1 --max-seconds 30
  bench new new_ta056_global 0 --instances ta056 --ub-offset 1 --max-seconds 30
  bench old old_20 default
  bench new new_20 default ;;
sweep)
  bench new ivms default --instances ta056 --ub-offset 1 --max-seconds 25 --ivms 8192 16384 32768 65536
  for regs in 80 96 56; do REGS=$regs bench new regs$regs default --instances ta056 --ub-offset 1 --max-seconds 25; done ;;
proof)
  rm -rf /tmp/ta056.zarr
  start=$(date +%s.%N)
  pbbflow solve ta056 --ub 3680 --gpus 1 --run /tmp/ta056.zarr --time-limit "${LIMIT:-525}" > "$OUT/solve.txt" 2>&1
  echo "solve rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")" >> "$OUT/solve.txt"
  pbbflow info /tmp/ta056.zarr --json > "$OUT/info.json" 2> "$OUT/info.err"
  pbbflow plot /tmp/ta056.zarr --out "$OUT/plot" > /dev/null 2>&1
  total=$(python3 -c "import json; print(json.load(open('$OUT/info.json'))['nodes'])")
  PYTHONPATH=/tmp/site:/tmp/new python3 benchmarks/eta_check.py history "$OUT/info.json" --total "$total" \
    --shares 0.1 0.25 0.5 > "$OUT/eta.json" 2>&1
  tail -25 "$OUT/solve.txt" ;;
esac
tar -czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz .
