#!/bin/bash
# An old commit's tree (build/old: `git archive COMMIT | tar -x -C build/old`) and this tree side by side on
# one GPU machine (the device tool's run, with carry [".whl", "build"]; C17 and B12 copied into build/ from
# ../shared/data/spatial): the GPU explorer's rate on ta021-ta025, `pbbflow minimize` on the GPU (twice each:
# the first compiles where the tree's numba cache is cold), start-up cold and warm.  Outputs go to
# $OUT/devbench.tgz (with the coordinator benchmark of each tree); `python benchmarks/old_new_summary.py DIR` prints them as one JSON.
set -u
coordinator_runs=0
FINAL=$OUT; OUT=/tmp/devbench; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
unset PYTHONDONTWRITEBYTECODE
NEW=$PWD; OLD=$PWD/build/old
mkdir -p /tmp/root-new /tmp/root-old && ln -sfn "$NEW" /tmp/root-new/pbbflow && ln -sfn "$OLD" /tmp/root-old/pbbflow
python3 -m compileall -q /tmp/site
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv > $OUT/gpu.csv
run() {  # tree label command...
  local tree=$1 label=$2; shift 2
  local dir=$NEW; [ "$tree" = old ] && dir=$OLD
  local t0=$(date +%s%N)
  (cd "$dir" && PYTHONPATH=/tmp/site:/tmp/root-$tree timeout 200 "$@") > "$OUT/$tree-$label.json" 2> "$OUT/$tree-$label.err"
  echo "$tree $label rc=$? wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >> $OUT/walls.txt
}
for tree in old new; do
  run $tree gpu_explorer python3 benchmarks/gpu_explorer.py --instances ta021 ta022 ta023 ta024 ta025
done
for tree in new old; do
  for p in peaks-ann $NEW/build/C17-hs071-hock-schittkowski-71.json $NEW/build/B12-eggholder.json; do
    for i in 1 2; do run $tree "minimize-$(basename $p .json)-$i" python3 -m pbbflow.cli.main minimize "$p" --json; done
  done
done
for tree in old new; do
  run $tree coordinator-$((++coordinator_runs)) python3 benchmarks/coordinator.py
done
for tree in old new; do
  run $tree startup python3 benchmarks/startup.py --instance ta021 --warm-runs 2 -- --gpus 1
done

tar czf $FINAL/devbench.tgz -C /tmp devbench
