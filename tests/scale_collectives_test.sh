#!/bin/bash
# Collectives under mpirun on 2 and 3 ranks: every kind, in place and not, fp32 and fp64, passes
# its check on every rank; every rank runs every case (none is sharded away); and a time-based
# stopping rule (each rank deciding alone would hang) ends together. Usage: OPMETER MPIEXEC
set -u
opm=$(realpath "$1")
mpiexec=$2
# Under the sanitizers: OpenMPI's own allocations in MPI_Init are never freed, and their stacks are
# cut short in its libraries, so LeakSanitizer would blame opmeter; ASan's other checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
work=$(mktemp -d /tmp/opmeter_coll.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"
"$opm" list 2>/dev/null | grep -q 'collective.*mpi' || { echo "no collective/mpi impl in this build: nothing to test"; exit 0; }
cat > coll.yaml <<'YAML'
ops: [collective]
impls: [mpi]
dtypes: [fp32, fp64]
kind: [allreduce, allgather, reduce_scatter, alltoall, broadcast, sendrecv]
bytes: [3072]
inplace: [0, 1]
stopping: {samples: 5, warmup: 2}
YAML
for n in 2 3; do
  timeout 120 "$mpiexec" -np $n --oversubscribe --allow-run-as-root "$opm" run coll.yaml --out r$n --no-report \
    --format json > log.$n 2>&1 || { tail -30 log.$n; fail "$n ranks: the run failed"; }
  [ "$(ls -d r$n/rank* | wc -l)" -eq $n ] || fail "$n ranks: expected $n rank directories"
  for d in r$n/rank*; do
    [ "$(jq -r .case $d/results.jsonl | wc -l)" -eq 24 ] || fail "$d: not every case ran on this rank"
    [ "$(jq -r 'select(.status == "ok") | .case' $d/results.jsonl | wc -l)" -eq 20 ] ||
      fail "$d: expected 20 ok (4 in-place forms skipped): $(jq -r '[.case, .status, .reason] | @tsv' $d/results.jsonl)"
    [ "$(jq -r 'select(.status == "ok" and .metrics.busbw_gbps.value > 0 and .details.ranks == "'$n'") | .case' \
      $d/results.jsonl | wc -l)" -eq 20 ] || fail "$d: a result without busbw or its rank count"
  done
done
# One rank: nothing crosses ranks. The time is reported, a bandwidth is not ("-"), and a note says
# why on the terminal, in results.md and in the journal (in place: the library has nothing to do).
cat > one.yaml <<'YAML'
ops: [collective]
impls: [mpi]
kind: [allreduce]
bytes: [4096]
inplace: [0, 1]
stopping: {samples: 5, warmup: 2}
YAML
timeout 60 "$mpiexec" -np 1 --allow-run-as-root "$opm" run one.yaml --out r1 --no-report --format json,md > log.1 2>&1 ||
  { tail -30 log.1; fail "1 rank: the run failed"; }
[ "$(grep -c "note: one rank: no data crosses ranks" log.1)" -eq 2 ] || { cat log.1; fail "1 rank: no note on the terminal"; }
grep -q "note: one rank: no data crosses ranks, and in place mpi has nothing to do" log.1 || { cat log.1; fail "1 rank: in place"; }
[ "$(jq -r 'select(.status == "ok" and .gbps == 0 and (.flags | index("no-rate")) and .metrics.busbw_gbps == null
    and (.details["no-rate"] | startswith("one rank: no data crosses ranks")) and .summary.median_s > 0) | .case' \
  r1/results.jsonl | wc -l)" -eq 2 ] || fail "1 rank: a result with a rate or without its note: $(cat r1/results.jsonl)"
# The markdown table's GB/s cell (its 9th column) is "-", and the status cell carries the note.
[ "$(awk -F'|' '/^\| collective \| mpi/ && $9 ~ /^ *- *$/ && /ok,.* no-rate \(one rank: no data crosses ranks/' \
  r1/results.md | wc -l)" -eq 2 ] || { cat r1/results.md; fail "1 rank: results.md shows a GB/s or no note"; }
# Ranks with thread counts of their own (each host's usable CPUs, by default) are at the same
# case: their case strings differ only there, as NCCL's do by each local rank's cuda:k.
timeout 120 "$mpiexec" --oversubscribe --allow-run-as-root -np 1 "$opm" run one.yaml --threads 1 --out th --no-report \
  --format json : -np 1 "$opm" run one.yaml --threads 2 --out th --no-report --format json > log.th 2>&1 ||
  { tail -30 log.th; fail "ranks of other thread counts: the run failed"; }
for d in th/rank*; do
  [ "$(jq -r 'select(.status == "ok") | .case' $d/results.jsonl | wc -l)" -eq 2 ] ||
    fail "$d: ranks of other thread counts not in step: $(jq -r '[.case, .status, .reason] | @tsv' $d/results.jsonl)"
done
# Merged, a collective is one measurement of all ranks: once, not once per rank.
"$opm" merge r2 -o m2 > log.m2 2>&1 || { cat log.m2; fail "merge of the 2-rank collectives failed"; }
[ "$(jq -r .case m2/results.jsonl | wc -l)" -eq 24 ] || fail "merged collectives: $(jq -r .case m2/results.jsonl | sort | uniq -c | head)"
[ -e m2/fleet.json ] && fail "the fleet view lists a collective as several machines: $(head -c 400 m2/fleet.json)"
# Time-based stopping and warm-up: the ranks must agree on every sample.
cat > timed.yaml <<'YAML'
ops: [collective]
impls: [mpi]
kind: [allreduce, alltoall]
bytes: [49152]  # 12288 fp32 elements: 3 blocks of 4096
stopping: {min_time_s: 0.05, timeout_s: 1, warmup_s: 0.01}
YAML
timeout 120 "$mpiexec" -np 3 --oversubscribe --allow-run-as-root "$opm" run timed.yaml --out t --no-report \
  --format json > log.t 2>&1 || { tail -30 log.t; fail "time-based stopping on 3 ranks failed or hung"; }
for d in t/rank*; do
  [ "$(jq -r 'select(.status == "ok") | .case' $d/results.jsonl | wc -l)" -eq 2 ] || fail "$d: timed cases not ok"
done
# The same sample count on every rank: they took each sample together.
[ "$(jq -r '[.case, (.samples | length)] | @tsv' t/rank*/results.jsonl | sort -u | wc -l)" -eq 2 ] ||
  fail "ranks took different sample counts: $(jq -r '[.case, (.samples | length)] | @tsv' t/rank*/results.jsonl)"
# Without a launcher the cases are skipped, with the reason.
"$opm" run coll.yaml --out alone --no-report --format json > log.alone 2>&1
jq -r .reason alone/results.jsonl | grep -q 'launcher' || fail "without a launcher: $(jq -r .reason alone/results.jsonl | head -2)"
echo ok
