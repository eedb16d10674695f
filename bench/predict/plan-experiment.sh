#!/usr/bin/env bash
# Active learning on a sweep measured in full: `opmeter predict plan` picks the cases to measure in
# two rounds (space filling for a model that has not seen the op, then where the fitted model is
# least sure), the model is fitted on them alone and predicts the whole sweep; a random pick of
# the same size is the reference. No measuring: picks are taken from the full results' journal.
# Usage: plan-experiment.sh OPMETER FULL_RESULTS.jsonl CONFIG SEED_MODEL BUDGET1 BUDGET2 CALIBRATION OUT
set -u
opm=$1 full=$2 config=$3 seed_model=$4 b1=$5 b2=$6 cal=$7 out=$8
mkdir -p "$out"
pick() {  # pick PLAN.yaml RESULTS_OUT: the full journal's lines of the plan's cases
  grep -o 'gemm/[^" ]*' "$1" | sed 's/^/"case":"/; s/$/"/' > "$out/keys.txt"
  grep -F -f "$out/keys.txt" "$full" >> "$2"
}
"$opm" predict plan "$seed_model" --budget "$b1" "$config" -o "$out/plan1.yaml" > "$out/plan1.txt" 2>&1
: > "$out/round1.jsonl"; pick "$out/plan1.yaml" "$out/round1.jsonl"
"$opm" predict fit "$out/round1.jsonl" --calibration "$cal" -o "$out/model1.json" --no-report > "$out/fit1.txt" 2>&1
"$opm" predict plan "$out/model1.json" --budget "$b2" "$config" -o "$out/plan2.yaml" > "$out/plan2.txt" 2>&1
cp "$out/round1.jsonl" "$out/planned.jsonl"; pick "$out/plan2.yaml" "$out/planned.jsonl"
n=$(grep -c . "$out/planned.jsonl")
grep '"case":"gemm/' "$full" | shuf -n "$n" --random-source=<(yes) > "$out/random.jsonl"
for kind in planned random; do
  "$opm" predict fit "$out/$kind.jsonl" --calibration "$cal" -o "$out/$kind-model.json" --no-report > "$out/fit-$kind.txt" 2>&1
  "$opm" predict "$out/$kind-model.json" "$full" > "$out/predict-$kind.md" 2>&1
done
echo "measured $n of $(grep -c '"case":"gemm/' "$full") cases"
