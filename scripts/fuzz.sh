#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan, the whole library instrumented) in a
# build folder of their own, then fuzzes each target for a while on a copy of its seed corpus.
#
# Usage: scripts/fuzz.sh [--seconds N] [--build-dir DIR] [--parallel P] [--jobs J] [--no-build]
#                        [TARGET...]
#   TARGET        names of fuzz/<name>_fuzzer.cpp (default: all of them)
#   --seconds N   fuzzing time per target (default 5: a smoke run; `make fuzz FUZZ_SECONDS=600`)
#   --build-dir   the clang build folder (default: build-fuzz in the checkout, ignored by git)
#   --parallel P  targets fuzzed at the same time (default 1)
#   --jobs J      compile jobs (default: nproc)
#   --no-build    use the binaries already built
# Prints the executions of every target (libFuzzer's stat::number_of_executed_units) and exits
# non-zero when a target crashed: its crash input is left in DIR/fuzz/artifacts/<target>/
# (replay it with DIR/fuzz/ctrainer_fuzz_<target> FILE; once the bug is fixed, copy it into
# fuzz/corpus/<target>/, where ctest's fuzz.<target>_corpus replays it from then on).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

seconds=5
build_dir="$root/build-fuzz"
parallel=1
jobs="$(nproc)"
do_build=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --parallel) parallel="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
case "$seconds$parallel$jobs" in
  *[!0-9]*) echo "fuzz.sh: --seconds, --parallel and --jobs take whole numbers" >&2; exit 2 ;;
esac

all_targets=()
for f in fuzz/*_fuzzer.cpp; do
  n="$(basename "$f" _fuzzer.cpp)"
  all_targets+=("$n")
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all_targets[@]}")
fi
for t in "${targets[@]}"; do
  [ -f "fuzz/${t}_fuzzer.cpp" ] || { echo "fuzz.sh: no target '$t' (have: ${all_targets[*]})" >&2; exit 2; }
done

# ---- build -------------------------------------------------------------------------------------
# shellcheck source=scripts/clang_build.sh
source "$root/scripts/clang_build.sh"
if [ "$do_build" -eq 1 ]; then
  configure_clang_build fuzz.sh "$build_dir"
  build_targets=()
  for t in "${targets[@]}"; do build_targets+=("ctrainer_fuzz_$t"); done
  cmake --build "$build_dir" -j "$jobs" --target "${build_targets[@]}"
fi

# ---- fuzz --------------------------------------------------------------------------------------
# LeakSanitizer stays on: a leak while parsing one input is a finding. libtorch's start-up
# allocations (operator registry, allocators, thread pools) stay reachable and are not reported,
# so fuzz/lsan.supp lists nothing (it is where libtorch/c10 frames would go). UBSan findings
# abort (the library is compiled with -fno-sanitize-recover).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/fuzz/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# One torch thread: the parsers are single-threaded, and intra-op pools only add noise.
export OMP_NUM_THREADS=1
command -v llvm-symbolizer > /dev/null && export ASAN_SYMBOLIZER_PATH="$(command -v llvm-symbolizer)"

work="$build_dir/fuzz/work"
artifacts="$build_dir/fuzz/artifacts"
mkdir -p "$work" "$artifacts"

run_one() {
  local t="$1"
  local binary="$build_dir/fuzz/ctrainer_fuzz_$t"
  local corpus="$work/$t/corpus"
  local log="$work/$t/fuzz.log"
  rm -rf "$work/$t"
  mkdir -p "$corpus" "$artifacts/$t"
  cp -r "fuzz/corpus/$t/." "$corpus/"
  local rc=0
  # -timeout: one input running for longer is a hang; -rss_limit_mb: libtorch and the sanitizers
  # take ~1 GB before the first input; a single allocation over the limit is also reported (the
  # "size read from the file" bugs).
  "$binary" "$corpus" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 \
    -rss_limit_mb=4096 -artifact_prefix="$artifacts/$t/" > "$log" 2>&1 || rc=$?
  echo "$rc" > "$work/$t/rc"
}

if [ ! -x "$build_dir/fuzz/ctrainer_fuzz_${targets[0]}" ]; then
  echo "fuzz.sh: $build_dir/fuzz/ctrainer_fuzz_${targets[0]} is not built (run without --no-build)" >&2
  exit 1
fi
echo "fuzz.sh: fuzzing ${#targets[@]} target(s) for ${seconds}s each, $parallel at a time"
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=0
printf '%-22s %14s  %s\n' target executions result
for t in "${targets[@]}"; do
  log="$work/$t/fuzz.log"
  rc="$(cat "$work/$t/rc" 2> /dev/null || echo 1)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  if [ "$rc" -eq 0 ]; then
    result="ok"
  else
    failed=1
    crash="$(ls -t "$artifacts/$t"/* 2> /dev/null | head -n 1 || true)"
    result="FAILED (exit $rc; log $log${crash:+; input $crash})"
  fi
  printf '%-22s %14s  %s\n' "$t" "${execs:-?}" "$result"
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: a target failed; see its log (the sanitizer's report is at the end)" >&2
  exit 1
fi
