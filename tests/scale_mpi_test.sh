#!/bin/bash
# Sharded sweeps under mpirun, a Slurm job array's environment and a rank killed mid-run:
# every case is measured exactly once across ranks, merge gives the unsharded plan's case set,
# and --resume loses nothing. Usage: scale_mpi_test.sh OPMETER MPIEXEC
set -u
opm=$(realpath "$1")
mpiexec=$2
work=$(mktemp -d /tmp/opmeter_scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"
# 27 tiny GEMMs of 40 samples each: a sweep of a few seconds, long enough to kill a rank in.
cat > sweep.yaml <<'YAML'
ops: [gemm]
impls: [reference]
threads: 1
stopping: {samples: 40, warmup: 1}
shapes: [{name: sweep, min_power: 2, max_power: 4}]
YAML
cases() { jq -r .case "$@" | sort -u; }  # case strings of journals
plan() { "$opm" run sweep.yaml --dry-run "$@" 2>/dev/null | grep /; }
plan | sort -u > plan.txt
[ "$(wc -l < plan.txt)" -eq 28 ] || fail "the unsharded plan has $(wc -l < plan.txt) cases, expected 28"

# 1. Three ranks under mpirun: each non-ceiling case on exactly one rank; merge = the plan.
"$mpiexec" -np 3 --oversubscribe --allow-run-as-root "$opm" run sweep.yaml --out tree --no-report --format json \
  > mpi.log 2>&1 || { cat mpi.log; fail "mpirun of 3 ranks failed"; }
[ "$(ls -d tree/rank00?-of-3-* | wc -l)" -eq 3 ] || fail "expected 3 rank directories: $(ls tree)"
jq -r .case tree/*/results.jsonl | grep -v '^peak/' | sort | uniq -d > twice.txt
[ -s twice.txt ] && fail "measured on two ranks: $(cat twice.txt)"
[ "$(jq -r .case tree/*/results.jsonl | grep -c '^peak/')" -eq 3 ] || fail "the ceiling did not run once on every rank"
"$opm" merge tree -o merged > merge.log 2>&1 || { cat merge.log; fail "merge failed"; }
cases merged/results.jsonl > merged.txt
diff plan.txt merged.txt > /dev/null || fail "merged case set differs from the plan: $(diff plan.txt merged.txt)"
[ "$(jq -r '.details.machine' merged/results.jsonl | sort -u | wc -l)" -eq 3 ] || fail "merged results lost their machine"
grep -q '^## Fleet' merged/fleet.md || fail "no fleet view of the ceiling measured on 3 machines"
jq -e '.schema == "opmeter-fleet/1" and ([.cases[].entries | length] | min) == 3' merged/fleet.json > /dev/null \
  || fail "merged/fleet.json lacks the ceiling on 3 machines"
grep -q '<h2 id="fleet">Fleet</h2>' merged/report.html || fail "merge's HTML report has no fleet section"
"$opm" report tree -o tree.html > report.log 2>&1 || { cat report.log; fail "report of the tree failed"; }
grep -q '^## Fleet' tree.md || fail "the tree's report has no fleet section"
grep -q '<h2 id="fleet">Fleet</h2>' tree.html || fail "the tree's HTML report has no fleet section"

# 2. A Slurm job array's environment (ids 1..3) shards as --shard does.
for i in 0 1 2; do
  plan --shard $i/3 > flag.$i
  SLURM_ARRAY_TASK_ID=$((i + 1)) SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1 plan > array.$i
  OMPI_COMM_WORLD_RANK=$i OMPI_COMM_WORLD_SIZE=3 plan > ompi.$i
  cmp -s flag.$i array.$i || fail "the array task $((i + 1)) plans other cases than --shard $i/3"
  cmp -s flag.$i ompi.$i || fail "OpenMPI rank $i plans other cases than --shard $i/3"
done
cat flag.? | sort -u | cmp -s - plan.txt || fail "the three shards' plans do not make the whole plan"

# 3. One rank killed mid-run: the others finish; --resume continues it and nothing is lost or repeated.
for i in 0 1 2; do "$opm" run sweep.yaml --shard $i/3 --out killed --no-report --format json > run.$i.log 2>&1 & pids[$i]=$!; done
journal() { ls killed/rank001-of-3-*/results.jsonl 2>/dev/null; }
for _ in $(seq 300); do [ -n "$(journal)" ] && [ "$(wc -l < "$(journal)")" -ge 3 ] && break; sleep 0.02; done
kill -9 "${pids[1]}"
wait "${pids[0]}" && wait "${pids[2]}" || fail "a rank beside the killed one failed"
wait "${pids[1]}" 2>/dev/null
before=$(wc -l < "$(journal)")
[ "$before" -lt "$(wc -l < flag.1)" ] || fail "rank 1 finished before it was killed: the test proves nothing"
head -n "$before" "$(journal)" | jq -r .case > kept.txt
# Merged now, the killed rank's missing cases would be silently absent: refused, naming the resume.
"$opm" merge killed -o killed-early > early.log 2>&1
[ $? -eq 2 ] && grep -q 'rank001-of-3-.* lacks .* planned cases' early.log &&
  grep -q -- '--resume killed --shard 1/3' early.log || fail "merge of a rank that stopped part-way: $(cat early.log)"
[ -e killed-early/results.jsonl ] && fail "the refused merge wrote results"
"$opm" run --resume killed --shard 1/3 --no-report --format json > resume.log 2>&1 || { cat resume.log; fail "resume failed"; }
[ "$(ls -d killed/rank001-of-3-* | wc -l)" -eq 1 ] || fail "the resumed rank wrote a second directory"
head -n "$(wc -l < kept.txt)" "$(journal)" | jq -r .case | cmp -s - kept.txt || fail "resume lost the killed rank's results"
jq -r .case killed/*/results.jsonl | grep -v '^peak/' | sort | uniq -d | grep -q . && fail "resume measured a case twice"
"$opm" merge killed -o killed-merged > /dev/null 2>&1 || fail "merge of the resumed tree failed"
cases killed-merged/results.jsonl | cmp -s - plan.txt || fail "the resumed run's merge is not the plan"

# 4. Runs of another config are refused unless --force.
mkdir -p mixed && cp -r tree/rank000-of-3-* mixed/
sed 's/min_power: 2/min_power: 3/' sweep.yaml > other.yaml
"$opm" run other.yaml --shard 1/3 --out mixed --no-report --format json > /dev/null 2>&1 || fail "the other config's run failed"
"$opm" merge mixed -o m1 > refuse.log 2>&1
[ $? -eq 2 ] && grep -q -- '--force' refuse.log || fail "merge of different configs was not refused: $(cat refuse.log)"
"$opm" merge mixed -o m2 --force > /dev/null 2>&1 || fail "merge --force failed"
echo "ok"
