#!/usr/bin/env bash
# Device call (2026-12-07, fourteenth session). 1. Issue 35's class side by side on one host: MAiNGO and SCIP in
# 12 shards on cores 4-15 (one core each) while pbbflow's GPU and auto route run on cores 0-3. 2. Issue 38's GPU
# falsification (gpu_falsify.py). 3. Issue 36's profile of minimize_gpu on five network problems.
set -u
R=/tmp/results_c; rm -rf $R; mkdir -p $R
pack() { tar czf "$OUT/results.tgz" -C $R . ; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whlb/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
mkdir -p /tmp/root && ln -sfn "$PWD" /tmp/root/pbbflow
export PYTHONPATH=/tmp/site:/tmp/root PYTHONUNBUFFERED=1
mkdir -p ../shared && cp -r .shared/data ../shared/
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > $R/gpu.txt; nproc >> $R/gpu.txt
cp .dev/commit.txt .dev/run_c.sh .dev/profile_networks.py $R/
for i in $(seq 0 11); do
  timeout 330 taskset -c $((4 + i)) python3 benchmarks/spatial_vs_maingo.py --scip --skip pbbflow --shard $i/12 \
    --repeats 3 --time-limit 20 --out $R/anchors_$i.json > /dev/null 2> $R/anchors_$i.err &
done
timeout 330 taskset -c 0-3 python3 benchmarks/spatial_vs_maingo.py --gpu --auto --skip pbbflow maingo \
  --repeats 3 --time-limit 20 --out $R/class_gpu.json > /dev/null 2> $R/class_gpu.err
echo "gpu done at $SECONDS s" | tee -a $R/walls.txt
wait
echo "anchors done at $SECONDS s" | tee -a $R/walls.txt
python3 benchmarks/spatial_vs_maingo.py --merge $R/class_gpu.json $R/anchors_*.json --out $R/class_vs_anchors.json
pack
timeout $((470 - SECONDS)) taskset -c 0-3 python3 benchmarks/gpu_falsify.py --instances 5 --widths 0.05 0.1 0.3 \
  --samples 4096 65536 1048576 --time-limit 8 --out $R/gpu_falsify.json > /dev/null 2> $R/gpu_falsify.err
echo "falsify done at $SECONDS s" | tee -a $R/walls.txt
pack
timeout $((540 - SECONDS)) taskset -c 0-3 python3 .dev/profile_networks.py "branin-2-64-64-1-relu" \
  "ann05-branin-2-16-16-1-relu" "styblinski-5-16-16-1-tanh (max)" "ann02-branin-2-16-1-tanh" > $R/profile.txt 2> $R/profile.err
echo "profile done at $SECONDS s" | tee -a $R/walls.txt
tail -n 2 $R/*.err | cut -c1-250
python3 -c "
import json
d = json.load(open('$R/class_vs_anchors.json'))
for s in d['speedups']:
    print(s['problem'][:26].ljust(26), s.get('auto_s'), s.get('gpu_s'), s['better_anchor'], s['anchor_s'], s.get('auto_over_maingo'), s.get('auto_speedup'))
d = json.load(open('$R/gpu_falsify.json')); print(d.get('gpu_first_launch_s'), json.dumps(d.get('summary')))
" 2>&1 | tail -40
grep "^===" $R/profile.txt
