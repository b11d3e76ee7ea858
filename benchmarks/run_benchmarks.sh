#!/usr/bin/env bash
# make bench: re-runs every benchmark result with the command recorded in its JSON, then
# regenerates the results README (ctrainer-bench report).
#
#   benchmarks/run_benchmarks.sh CTRAINER_BENCH [RESULTS_DIR]
#
# The scenarios are those `ctrainer-bench --help` lists (so a scenario not built into this
# binary is never asked for); BENCH_SCENARIOS="a b" or "a,b" selects some of them. A scenario
# with RESULTS_DIR/<name>.json is re-run with `ctrainer-bench rerun` (its recorded command, full
# settings, output back into that file); one without gets its default settings and
# --json RESULTS_DIR/<name>.json --plots RESULTS_DIR.
set -euo pipefail

bench=${1:?usage: run_benchmarks.sh CTRAINER_BENCH [RESULTS_DIR]}
results=${2:-benchmarks/results}
if [[ ! -x $bench ]]; then
  echo "error: $bench is not an executable ctrainer-bench" \
    "(build it: cmake --build build --target ctrainer-bench)" >&2
  exit 2
fi
if [[ ! -d $results ]]; then
  echo "error: results folder $results does not exist" >&2
  exit 2
fi

# The names under "scenarios:" in the help text, first word of each line indented by two
# spaces (a scenario's own flags follow it, indented further).
available=$("$bench" --help | awk '/^scenarios:/ { on = 1; next } on && /^  [^ ]/ { print $1 }')
selected=${BENCH_SCENARIOS:-$available}
selected=${selected//,/ }
for name in $selected; do
  if ! grep -qx -- "$name" <<<"$available"; then
    echo "error: BENCH_SCENARIOS names '$name', which $bench does not have; it lists:" \
      $available >&2
    exit 2
  fi
done

# A scenario may have several results: NAME.json and variants NAME_*.json (vs_hf_w3.json: one
# workload of vs_hf with its own settings); each is re-run with its own recorded command.
for name in $selected; do
  found=0
  for json in "$results/$name.json" "$results/${name}"_*.json; do
    [[ -f $json ]] || continue
    # A variant belongs to this scenario only if it says so (sharding_x.json is not ddp's).
    grep -q "\"scenario\": *\"$name\"" "$json" || continue
    found=1
    echo "== $name: the command recorded in $json"
    "$bench" rerun "$json"
  done
  if ((found == 0)); then
    json="$results/$name.json"
    echo "== $name: no $json yet, default settings"
    "$bench" "$name" --json "$json" --plots "$results"
  fi
done
"$bench" report --results "$results"
