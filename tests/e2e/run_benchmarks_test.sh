#!/usr/bin/env bash
# benchmarks/run_benchmarks.sh (make bench) against a fake ctrainer-bench that records its
# calls: every result of a selected scenario is re-run with `rerun`, variants NAME_*.json
# included when their "scenario" is NAME (and not when it is another scenario's), a scenario
# without a result runs with its defaults, then the report; an unknown BENCH_SCENARIOS name is
# an error that runs nothing.
set -euo pipefail
script=${1:?usage: run_benchmarks_test.sh RUN_BENCHMARKS_SH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/fake-bench" <<'FAKE'
#!/usr/bin/env bash
if [[ $1 == --help ]]; then
  printf 'usage: ctrainer-bench SCENARIO\nscenarios:\n  ddp\n    --rounds N\n  vs_hf\n  tokenizer\n'
  exit 0
fi
echo "$*" >>"$CALLS"
FAKE
chmod +x "$work/fake-bench"
results="$work/results"
mkdir "$results"
printf '{\n  "scenario": "vs_hf"\n}\n' >"$results/vs_hf.json"
printf '{\n  "scenario": "vs_hf"\n}\n' >"$results/vs_hf_w3.json"
printf '{\n  "scenario": "ddp"\n}\n' >"$results/ddp.json"
printf '{\n  "scenario": "ddp"\n}\n' >"$results/vs_hf_misnamed.json"
export CALLS="$work/calls"

fail() { echo "FAIL: $*" >&2; echo "calls were:" >&2; cat "$CALLS" >&2 || true; exit 1; }

BENCH_SCENARIOS="vs_hf,tokenizer" bash "$script" "$work/fake-bench" "$results" >/dev/null
expected="rerun $results/vs_hf.json
rerun $results/vs_hf_w3.json
tokenizer --json $results/tokenizer.json --plots $results
report --results $results"
[[ $(cat "$CALLS") == "$expected" ]] || fail "selected run: expected
$expected"

rm -f "$CALLS"
if BENCH_SCENARIOS="nope" bash "$script" "$work/fake-bench" "$results" 2>"$work/err"; then
  fail "an unknown scenario was accepted"
fi
grep -q "names 'nope'" "$work/err" || fail "the error does not name the scenario: $(cat "$work/err")"
[[ ! -e $CALLS ]] || fail "an unknown scenario still ran something"
echo "1 passed, 0 failed"
