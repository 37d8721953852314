#!/usr/bin/env bash
# Device call (2026-12-07, fourteenth session, short): the network set on the GPU at main after the network
# objectives' change (their points verified and local solves through the layers), and branin-2-64-64's profile.
set -u
R=/tmp/results_e; rm -rf $R; mkdir -p $R
pack() { tar czf "$OUT/results.tgz" -C $R . ; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whlb/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
mkdir -p /tmp/root && ln -sfn "$PWD" /tmp/root/pbbflow
export PYTHONPATH=/tmp/site:/tmp/root PYTHONUNBUFFERED=1
mkdir -p ../shared && cp -r .shared/data ../shared/
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > $R/gpu.txt; nproc >> $R/gpu.txt
cp .dev/commit.txt .dev/run_e.sh $R/
timeout 150 taskset -c 0-3 python3 benchmarks/spatial_vs_maingo.py --set networks --gpu --skip pbbflow maingo \
  --repeats 3 --time-limit 10 --out $R/networks_gpu.json > /dev/null 2> $R/networks_gpu.err
echo "networks done at $SECONDS s" | tee -a $R/walls.txt
pack
timeout $((200 - SECONDS)) taskset -c 0-3 python3 .dev/profile_networks.py "branin-2-64-64-1-relu" > $R/profile.txt 2> $R/profile.err
echo "profile done at $SECONDS s" | tee -a $R/walls.txt
tail -n 2 $R/*.err | cut -c1-250
python3 - <<PY
import json
d = json.load(open("$R/networks_gpu.json"))
rows = [(r["problem"], r["pbbflow_gpu"]["status"], r["pbbflow_gpu"]["seconds_median"]) for r in d["problems"]]
print(round(sum(s for _, st, s in rows if st == "optimal"), 3), sum(st == "optimal" for _, st, _ in rows))
for p, st, s in rows: print("  ", p[:36].ljust(36), st, round(s, 4))
PY
grep "^===" $R/profile.txt
