#!/bin/bash
# Plain CPU explorer, older trees beside this one on one instance's fixed tree (LB1, MinMin, one thread):
# one process per run, the trees alternating, so a noisy machine spreads over all of them alike.
# Each ROOT holds the tree as ROOT/pbbflow (e.g. `mkdir -p /tmp/old/pbbflow && git archive COMMIT | tar -x -C
# /tmp/old/pbbflow`); this tree's benchmarks/cpu_phases.py --plain-only runs against it. One JSON line per run.
#     bash benchmarks/cpu_old_new.sh 3 ta017 /tmp/old /tmp/new
set -eu
repeats=$1; instance=$2; shift 2
script=$(cd "$(dirname "$0")" && pwd)/cpu_phases.py
for i in $(seq "$repeats"); do
  for root in "$@"; do
    (cd /tmp && PYTHONPATH=$root python "$script" --plain-only --instances "$instance" --repeats 1 2>/dev/null) |
      python -c "import json, sys; d = json.load(sys.stdin); r = d['results'][0]; print(json.dumps({'root': '$root', 'tree': d['tree'], 'round': $i, **{k: r[k] for k in ('instance', 'nodes', 'leaves', 'plain_seconds', 'plain_cpu_seconds')}}))"
  done
done
