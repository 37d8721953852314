#!/usr/bin/env bash
# Device call (2026-12-07, thirteenth session): issue 38's instance-6 error (its reason), the GPU network
# bounds' determinism, the verify suite twice; issue 36's network set on the GPU beside MAiNGO; issue 35's
# class side by side (CPU thread, GPU, auto route, MAiNGO). Everything is packed into $OUT/results.tgz.
set -u
R=/tmp/results; mkdir -p $R
pack() { tar czf "$OUT/results.tgz" -C $R . ; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
mkdir -p /tmp/root && ln -sfn "$PWD" /tmp/root/pbbflow
export PYTHONPATH=/tmp/site:/tmp/root PYTHONUNBUFFERED=1
mkdir -p ../shared && cp -r .shared/data ../shared/
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > $R/gpu.txt; nproc >> $R/gpu.txt
cp .dev/commit.txt .dev/run.sh $R/
# (the network set's anchors ran in the call before, alone on this machine: 12 shards on cores 4-15)
rm -rf /tmp/vs
( cd benchmarks && python3 -c "
from pathlib import Path; import verify_suite
verify_suite.write_suite(Path('/tmp/vs'), 2, 4, [0.1, 0.3, 0.5], 20.0, 0)" )
for k in 1 2; do
  ( time taskset -c 0-3 python3 -m pbbflow.cli.main verify /tmp/vs/onnx/acas_shaped_0.onnx \
      /tmp/vs/vnnlib/prop_3_w0.1_largest3.vnnlib --gpus 1 --time-limit 20; echo "exit $?" ) > $R/instance6_$k.txt 2>&1
done
echo "instance 6 done at $SECONDS s" | tee -a $R/walls.txt
timeout 60 taskset -c 0-3 python3 benchmarks/gpu_network_bounds.py --repeats 3 --out $R/gpu_network_bounds.json > /dev/null 2> $R/gpu_network_bounds.err
echo "kernel done at $SECONDS s" | tee -a $R/walls.txt
for k in 1 2; do
  timeout 90 taskset -c 0-3 python3 benchmarks/verify_suite.py --networks 2 --instances 4 --widths 0.1 0.3 0.5 \
    --time-limit 20 --gpus 1 --out $R/suite_gpu_$k.json > /dev/null 2> $R/suite_gpu_$k.err
  echo "suite $k done at $SECONDS s" | tee -a $R/walls.txt
done
timeout 220 taskset -c 0-3 python3 benchmarks/spatial_vs_maingo.py --set networks --gpu --skip pbbflow maingo \
  --repeats 3 --time-limit 30 --out $R/networks_gpu.json > /dev/null 2> $R/networks_gpu.err
echo "networks on the GPU done at $SECONDS s" | tee -a $R/walls.txt
pack
timeout $((575 - SECONDS)) taskset -c 0-7 python3 benchmarks/spatial_vs_maingo.py --gpu --auto --repeats 3 \
  --time-limit 20 --out $R/class_vs_gpu.json > /dev/null 2> $R/class_vs_gpu.err
echo "class done at $SECONDS s" | tee -a $R/walls.txt
tail -n 4 $R/instance6_*.txt $R/suite_gpu_*.err $R/networks_gpu.err $R/class_vs_gpu.err | cut -c1-300
python3 -c "
import json
for k in (1, 2):
    d = json.load(open('$R/suite_gpu_%d.json' % k)); print(d['wall_s'], d['counts'], [(r['index'], r.get('reason')) for r in d['instances'] if r['answer'] == 'error'])
" 2>&1 | tail -4
