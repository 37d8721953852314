#!/usr/bin/env bash
# Device call (2026-12-07, fifteenth session). 1. Issue 36: the network set side by side on one host: MAiNGO and
# SCIP in 12 one-core shards on cores 4-15 (20 s limit, once each) while pbbflow's GPU and auto route run on
# cores 0-3 (medians of 3, 8 s limit). 2. Issue 35: the class's small problems (Bukin N.6 among them) with both
# anchors, after the root point's polish came before the grid. 3. Issue 38: gpu_falsify after the overhead fix.
set -u
R=/tmp/results_f; rm -rf $R; mkdir -p $R
pack() { tar czf "$OUT/results.tgz" -C $R . ; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whlb/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
mkdir -p /tmp/root && ln -sfn "$PWD" /tmp/root/pbbflow
export PYTHONPATH=/tmp/site:/tmp/root PYTHONUNBUFFERED=1
mkdir -p ../shared && cp -r .shared/data ../shared/
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > $R/gpu.txt; nproc >> $R/gpu.txt
cp .dev/commit.txt .dev/run_f.sh $R/
for i in $(seq 0 11); do
  timeout 230 taskset -c $((4 + i)) python3 benchmarks/spatial_vs_maingo.py --set networks --scip --skip pbbflow \
    --shard $i/12 --repeats 1 --time-limit 20 --out $R/net_anchors_$i.json > /dev/null 2> $R/net_anchors_$i.err &
done
timeout 220 taskset -c 0-3 python3 benchmarks/spatial_vs_maingo.py --set networks --gpu --auto --skip pbbflow maingo \
  --repeats 3 --time-limit 8 --out $R/net_gpu.json > /dev/null 2> $R/net_gpu.err
echo "network gpu done at $SECONDS s" | tee -a $R/walls.txt
wait
echo "network anchors done at $SECONDS s" | tee -a $R/walls.txt
python3 benchmarks/spatial_vs_maingo.py --merge $R/net_gpu.json $R/net_anchors_*.json --out $R/net_vs_anchors.json
pack
S=../shared/data/spatial; P=benchmarks/problems
SMALL="$P/bukin-6.json $P/rastrigin-5.json $P/griewank-5.json $P/ackley-2.json $S/B26-rastrigin-d-2.json $S/C3-g11-cec2006-g11.json $P/C-g05-cec2006.json $S/C9-st-e01-globallib.json $P/hs046.json $S/B1-branin-branin-hoo.json $S/B6-booth.json $P/trid-6.json"
i=0
for p in $SMALL; do
  timeout 90 taskset -c $((4 + i)) python3 benchmarks/spatial_vs_maingo.py --scip --repeats 3 --time-limit 10 \
    --skip pbbflow --out $R/small_anchors_$i.json $p > /dev/null 2> $R/small_anchors_$i.err &
  i=$((i + 1))
done
timeout 90 taskset -c 0-3 python3 benchmarks/spatial_vs_maingo.py --gpu --auto --skip pbbflow maingo --repeats 5 \
  --time-limit 20 --out $R/small_gpu.json $SMALL > /dev/null 2> $R/small_gpu.err
echo "small gpu done at $SECONDS s" | tee -a $R/walls.txt
wait
echo "small anchors done at $SECONDS s" | tee -a $R/walls.txt
python3 benchmarks/spatial_vs_maingo.py --merge $R/small_gpu.json $R/small_anchors_*.json --out $R/small_vs_anchors.json
pack
timeout $((430 - SECONDS)) taskset -c 0-3 python3 benchmarks/gpu_falsify.py --instances 5 --widths 0.05 0.1 0.3 \
  --samples 4096 65536 --time-limit 8 --out $R/gpu_falsify.json > /dev/null 2> $R/gpu_falsify.err
echo "falsify done at $SECONDS s" | tee -a $R/walls.txt
tail -n 2 $R/*.err | cut -c1-250
python3 - <<PY
import json
for name in ("net_vs_anchors", "small_vs_anchors"):
    try:
        d = json.load(open("$R/%s.json" % name))
    except Exception as e:
        print(name, e); continue
    print("==", name)
    for s in d["speedups"]:
        print(s["problem"][:30].ljust(30), s.get("auto_s"), s.get("gpu_s"), s["better_anchor"], s["anchor_s"], s.get("anchor_open"), s.get("speedup"), s.get("auto_speedup"))
try:
    d = json.load(open("$R/gpu_falsify.json")); print(d.get("gpu_first_launch_s"), json.dumps(d.get("summary"))[:1500])
except Exception as e:
    print(e)
PY
