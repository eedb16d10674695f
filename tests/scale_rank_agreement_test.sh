#!/bin/bash
# Ranks that disagree about a collective case do not hang (engine/rank_gate.hpp): a case only rank
# 1 refuses, or whose setup fails only on rank 2, is recorded on every rank with that rank's reason
# and the next case runs in step; a rank that hangs is named after OPMETER_RANK_WAIT_S and the run
# ends; ranks resumed with different results agree. The faults come from the test-only
# OPMETER_TEST_RANK_FAULT hook (ops/collective/collective_mpi.cpp; stall_comm: launch_comm_mpi.cpp). Usage: OPMETER MPIEXEC PART,
# PART `agree` (a skip, a setup error, resumed ranks, check) or `lost` (a hung rank).
set -u
opm=$(realpath "$1")
mpiexec=$2
part=$3
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"  # OpenMPI's own (see scale_collectives_test.sh)
work=$(mktemp -d /tmp/opmeter_ranks.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"
"$opm" list 2>/dev/null | grep -q 'collective.*mpi' || { echo "no collective/mpi impl in this build: nothing to test"; exit 0; }
cat > coll.yaml <<'YAML'
ops: [collective]
impls: [mpi]
dtypes: [fp32]
kind: [allreduce, alltoall, broadcast]
bytes: [3072]
stopping: {samples: 3, warmup: 1}
YAML
mpi() { timeout 30 "$mpiexec" -np 3 --oversubscribe --allow-run-as-root "$@"; }
# status and reason of KIND in every rank's results under DIR, one line per rank
verdicts() { for d in "$1"/rank*; do jq -r 'select(.case | contains("kind='$2',")) | [.status, .reason] | @tsv' $d/results.jsonl; done; }

if [ "$part" = agree ]; then
# 1. Only rank 1 refuses alltoall: all three skip it with rank 1's reason; the others run on every rank.
mpi -x OPMETER_TEST_RANK_FAULT=refuse:1:alltoall "$opm" run coll.yaml --out refuse --no-report --format json > log.refuse 2>&1
[ $? -lt 124 ] || { tail -20 log.refuse; fail "a case only rank 1 refuses: the run hung"; }
[ "$(verdicts refuse alltoall | sort -u)" = "$(printf 'skipped\trank 1: refused by OPMETER_TEST_RANK_FAULT (a test hook)')" ] ||
  fail "refused on rank 1: expected the same skip on every rank, got: $(verdicts refuse alltoall)"
[ "$(verdicts refuse broadcast | grep -c '^ok')" -eq 3 ] || fail "the case after the refused one did not run on every rank"

# 2. Rank 2's setup fails: every rank records the error with its reason.
mpi -x OPMETER_TEST_RANK_FAULT=fail:2:allreduce "$opm" run coll.yaml --out setup --no-report --format json > log.setup 2>&1
[ $? -lt 124 ] || { tail -20 log.setup; fail "a setup error on rank 2: the run hung"; }
[ "$(verdicts setup allreduce | sort -u)" = "$(printf 'error\trank 2: setup failed (OPMETER_TEST_RANK_FAULT, a test hook)')" ] ||
  fail "setup error on rank 2: got $(verdicts setup allreduce)"
[ "$(verdicts setup alltoall | grep -c '^ok')" -eq 3 ] || fail "the case after the failed one did not run on every rank"

fi

if [ "$part" = lost ]; then
# 3. Rank 1 hangs in the first case's setup: ranks 0 and 2 name it after 2 s, the later collectives are
# errors at once, and the launch ends (it ends the hung rank) instead of waiting 10 minutes.
start=$(date +%s)
mpi -x OPMETER_RANK_WAIT_S=2 -x OPMETER_TEST_RANK_FAULT=stall:1:allreduce "$opm" run coll.yaml --out stall --no-report \
  --format json > log.stall 2>&1
[ $? -lt 124 ] && [ $(( $(date +%s) - start )) -lt 25 ] || { tail -20 log.stall; fail "a hung rank hung the others"; }
for d in stall/rank000* stall/rank002*; do
  # (ranks 0 and 2 may name each other too when one started more than 2 s after the other)
  jq -r 'select(.case | contains("kind=allreduce,")) | .reason' $d/results.jsonl | grep -Eq '^ranks? (1|[02], 1)\b.* did not answer within 2 s' ||
    fail "$d: the hung rank is not named: $(jq -r '[.case, .status, .reason] | @tsv' $d/results.jsonl)"
  [ "$(jq -r 'select(.case | contains("kind=broadcast,")) | .status' $d/results.jsonl)" = error ] ||
    fail "$d: the collective after the lost rank was not an error"
done

# 3b. Rank 1 hangs while sampling (after every rank voted): the others give up on the sampling
# loop's shared decision after 3 s.
mpi -x OPMETER_RANK_WAIT_S=3 -x OPMETER_TEST_RANK_FAULT=stall_sampling:1:allreduce "$opm" run coll.yaml --out stall2 \
  --no-report --format json > log.stall2 2>&1
[ $? -lt 124 ] || { tail -20 log.stall2; fail "a rank hung while sampling hung the others"; }
for d in stall2/rank000* stall2/rank002*; do
  jq -r 'select(.case | contains("kind=allreduce,")) | [.status, .reason] | @tsv' $d/results.jsonl |
    grep -q '^error.*no answer from every rank within 3 s' || fail "$d: $(jq -r '[.case, .status, .reason] | @tsv' $d/results.jsonl)"
done


# 3c. Rank 1 hangs at the energy sum of the first case (its 3rd call of the launch's communicator,
# engine/launch_comm.hpp, after the case's two votes): the others name it after 2 s and the later
# collectives are errors at once.
start=$(date +%s)
mpi -x OPMETER_RANK_WAIT_S=2 -x OPMETER_TEST_RANK_FAULT=stall_comm:1:3 "$opm" run coll.yaml --out stall3 --no-report \
  --format json > log.stall3 2>&1
[ $? -lt 124 ] && [ $(( $(date +%s) - start )) -lt 25 ] || { tail -20 log.stall3; fail "a rank hung at the energy sum hung the others"; }
for d in stall3/rank000* stall3/rank002*; do
  head -1 $d/results.jsonl | jq -r .reason | grep -Eq '^ranks? (1|[02], 1)\b.* did not answer within 2 s' ||
    fail "$d: the rank hung at the energy sum is not named: $(jq -r '[.case, .status, .reason] | @tsv' $d/results.jsonl)"
  [ "$(jq -r .status $d/results.jsonl | sort -u)" = error ] && [ "$(wc -l < $d/results.jsonl)" -eq 3 ] ||
    fail "$d: expected every case an error: $(jq -r '[.case, .status, .reason] | @tsv' $d/results.jsonl)"
done

fi

if [ "$part" = agree ]; then
# 4. Resumed with different results (rank 1 lost its broadcast): rank 1 records it skipped with the
# reason, ranks 0 and 2 add nothing, and nobody waits.
mpi "$opm" run coll.yaml --out res --no-report --format json > log.res 2>&1 || { tail -20 log.res; fail "a plain run failed"; }
sed -i '/kind=broadcast,/d' res/rank001*/results.jsonl
mpi "$opm" run coll.yaml --resume res --no-report --format json > log.res2 2>&1
[ $? -lt 124 ] || { tail -20 log.res2; fail "resuming ranks with different results hung"; }
[ "$(jq -r 'select(.case | contains("kind=broadcast,")) | .reason' res/rank001*/results.jsonl)" = \
  "rank 0: measured before --resume; collectives run only when every rank runs them (rerun all ranks)" ] ||
  fail "rank 1 after resuming: $(jq -r '[.case, .status, .reason] | @tsv' res/rank001*/results.jsonl)"
[ "$(cat res/rank000*/results.jsonl res/rank002*/results.jsonl | wc -l)" -eq 6 ] || fail "ranks 0 and 2 recorded a case again"
# 5. check under mpirun: one check.json per rank (no race on one file), joined by merge; rank 1
# refusing a collective there too is every rank's skip.
mpi -x OPMETER_TEST_RANK_FAULT=refuse:1:broadcast "$opm" check --op collective --dtype fp32 -o chk > log.chk 2>&1
[ $? -lt 124 ] || { tail -20 log.chk; fail "check under mpirun hung"; }
[ "$(ls chk/rank00*-of-3-*/check.json | wc -l)" -eq 3 ] && [ ! -e chk/check.json ] || fail "check: expected one check.json per rank: $(find chk)"
[ "$(jq -r '.cases[] | select(.case | contains("kind=broadcast,")) | .reason' chk/rank*/check.json | sort -u)" = \
  "rank 1: refused by OPMETER_TEST_RANK_FAULT (a test hook)" ] || fail "check: the refused collective differs between ranks"
"$opm" merge chk -o chk-merged > log.merge 2>&1 || { cat log.merge; fail "merge of the check files failed"; }
[ "$(jq '.cases | length' chk-merged/check.json)" -eq "$(jq -s 'map(.cases | length) | add' chk/rank*/check.json)" ] ||
  fail "merged check.json lost cases"
fi
echo ok
