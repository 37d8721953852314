#!/usr/bin/env bash
# Device call (2026-12-07, thirteenth session, issue 35): the auto route with closes_within's second
# slice (2428c95), over the class of 34, beside the GPU from the start. Packed into $OUT/results.tgz.
set -u
R=/tmp/results; rm -rf $R; mkdir -p $R
pack() { tar czf "$OUT/results.tgz" -C $R . ; }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
mkdir -p /tmp/root && ln -sfn "$PWD" /tmp/root/pbbflow
export PYTHONPATH=/tmp/site:/tmp/root PYTHONUNBUFFERED=1
mkdir -p ../shared && cp -r .shared/data ../shared/
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $R/gpu.txt; nproc >> $R/gpu.txt
cp .dev/commit.txt .dev/run.sh $R/
timeout 280 taskset -c 0-7 python3 benchmarks/spatial_vs_maingo.py --gpu --auto --skip pbbflow maingo --repeats 3 \
  --time-limit 20 --out $R/class_auto.json > /dev/null 2> $R/class_auto.err
echo "class done at $SECONDS s" | tee -a $R/walls.txt
tail -n 3 $R/class_auto.err
