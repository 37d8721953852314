#!/usr/bin/env bash
# Side-by-side timing on this machine: pbbflow's CPU IVM explorer vs the paper authors' multicore
# C++ code (github.com/jangmys/pbb, reconstructed and built OUTSIDE this repository, under
# /tmp/pbb-authors; none of the authors' code lives in pbbflow).
# Both: ta017 (20 jobs x 10 machines), UB = 1484 (optimum), LB1 (one-machine bound), MinMin branching, 1 thread.
#
#   bash benchmarks/cpu_vs_authors.sh [ROUNDS]      # default 5 rounds: ours, theirs, theirs(-O3 -march=native)
#
# Results (raw outputs + summary.tsv) go to /tmp/pbb-authors/rounds/.
# Results of 2026-12-06: benchmarks/results/cpu_vs_authors_ta017_2core_2026-12-06.json
set -euo pipefail

ROUNDS=${1:-5}
AUTH=${PBB_AUTHORS:-/tmp/pbb-authors}  # their sources under $AUTH/src and $AUTH/src-O3native (not part of pbbflow)
REPO=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$AUTH/src" ] || [ ! -d "$AUTH/src-O3native" ]; then
    echo "cpu_vs_authors.sh: the authors' sources are not at $AUTH/src and $AUTH/src-O3native (set PBB_AUTHORS)" >&2
    exit 2
fi

# ---- rebuild the authors' code (their CMake flags: -O2; plus a variant with -O3 -march=native)
for v in "src build" "src-O3native build-O3native"; do
    set -- $v
    rm -rf "$AUTH/$2" && mkdir -p "$AUTH/$2"
    (cd "$AUTH/$2" && cmake "../$1" > cmake.log && make -j2 > make.log 2>&1)
done
# their code reads best-known UBs from ../../evaluation/flowshop/data/instances.data (relative to cwd)
ln -sfn src/evaluation "$AUTH/evaluation"
mkdir -p "$AUTH/run/a" "$AUTH/rounds"
# run configuration in the authors' .ini format (keys read by their common/src/arguments.cpp):
# ub=0 -> UB from instances.data (1484); boundingMode=0 -> LB1 only; adaptiveBranchingMode=3 -> MinMin;
# findAll=false -> prune LB >= UB; threads=1 -> their single-threaded IVM-BB path; sortedDFS=0 (their default)
cat > "$AUTH/run/ta17_lb1_minmin_1thread.ini" <<'EOF'
[problem]
problem = flowshop ;
instance = ta17 ;
[initial]
ub = 0
sol = 0
[bb]
singleNode = true
sortedDFS = 0
sortingCriterion = -1
boundingMode = 0
adaptiveBranchingMode = 3 ;
JohnsonMode = 0
earlyStopJohnson = false
findAll = false ;
[verbose]
printSolutions = true  ;
[time]
checkpoint = 1800000 ;
balance = 1 ;
[multicore]
threads = 1
worksteal = o
EOF

THEIRS_ARGS="-f ../ta17_lb1_minmin_1thread.ini -z p=fsp,i=ta17,o"
OURS_CMD="python benchmarks/cpu_explorer.py --instances ta017 --threads 1"

cd "$REPO"  # ours runs with the python on PATH (pbbflow installed)
NUMBA_NUM_THREADS=1 $OURS_CMD > /dev/null 2>&1   # warm numba's cache

OUT=$AUTH/rounds
: > "$OUT/summary.tsv"
for r in $(seq 1 "$ROUNDS"); do
    # ours
    la=$(cat /proc/loadavg)
    ( cd "$REPO" && NUMBA_NUM_THREADS=1 /usr/bin/time -f "%e" -o "$OUT/ours_$r.time" $OURS_CMD > "$OUT/ours_$r.json" 2>/dev/null )
    printf "%s\tours\t%s\t%s\n" "$r" "$la" "$(cat "$OUT/ours_$r.time")" >> "$OUT/summary.tsv"
    # theirs (their flags)
    la=$(cat /proc/loadavg)
    ( cd "$AUTH/run/a" && /usr/bin/time -f "%e" -o "$OUT/theirs_$r.time" "$AUTH/build/multicore/multicore" $THEIRS_ARGS > "$OUT/theirs_$r.out" 2>&1 )
    printf "%s\ttheirs\t%s\t%s\n" "$r" "$la" "$(cat "$OUT/theirs_$r.time")" >> "$OUT/summary.tsv"
    # theirs, rebuilt with -O3 -march=native (supplementary)
    la=$(cat /proc/loadavg)
    ( cd "$AUTH/run/a" && /usr/bin/time -f "%e" -o "$OUT/theirsO3_$r.time" "$AUTH/build-O3native/multicore/multicore" $THEIRS_ARGS > "$OUT/theirsO3_$r.out" 2>&1 )
    printf "%s\ttheirsO3\t%s\t%s\n" "$r" "$la" "$(cat "$OUT/theirsO3_$r.time")" >> "$OUT/summary.tsv"
done
cat "$OUT/summary.tsv"
