#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer): builds
# the library and the tests/unit programs (all with --all) with clang in a build folder of their own (the one
# scripts/fuzz.sh uses, so the instrumented library is compiled once for both), then runs each
# program. Any sanitizer report (a heap overflow, a use after free, undefined behaviour, a leak)
# or failing test fails the run.
#
# Usage: scripts/sanitize.sh [--all] [--build-dir DIR] [--jobs J] [--no-build] [TEST...]
#   TEST          names of tests/unit/<name>_test.cpp (default: the make test set below)
#   --all         every tests/unit program (`make sanitize`)
#   --build-dir   the clang build folder (default: build-fuzz in the checkout, ignored by git)
#   --jobs J      compile jobs and test programs run at once (default: nproc)
#   --no-build    use the programs already built
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

build_dir="$root/build-fuzz"
jobs="$(nproc)"
do_build=1
all=0
tests=()
# The default set (make test): the programs whose subject is bytes, files, memory, threads and
# signals that no fuzz target reaches (checkpoint files, write faults, malformed and unreadable
# safetensors, Unicode in the tokenizer pipeline, the tokenized cache, untrusted paths, signal
# handling, process-group sockets, the large-buffer cache's allocator). The fuzz targets, which
# make test runs next from the same build, cover the other parsers under the same sanitizers. The rest (tensor arithmetic and
# training loops, where the instrumented code is mostly libtorch's) runs in `make sanitize`:
# compiling every program instrumented would add about 10 minutes to a cold make test.
default_tests="checkpoint_manager_test write_faults_test safetensors_malformed_test
  safetensors_io_errors_test tokenizer_pipeline_test tokenized_dataset_test untrusted_paths_test
  signal_guard_test process_group_test sentencepiece_model_test large_buffer_cache_test"
while [ $# -gt 0 ]; do
  case "$1" in
    --all) all=1; shift ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "sanitize.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) tests+=("$1"); shift ;;
  esac
done
for t in $default_tests; do  # a renamed test must not drop out of the default set unnoticed
  [ -f "tests/unit/$t.cpp" ] || { echo "sanitize.sh: default_tests names no tests/unit/$t.cpp" >&2; exit 2; }
done
if [ ${#tests[@]} -eq 0 ]; then
  if [ "$all" -eq 1 ]; then
    for f in tests/unit/*_test.cpp; do tests+=("$(basename "$f" .cpp)"); done
  else
    read -r -a tests <<< "$(echo $default_tests)"
  fi
else
  for i in "${!tests[@]}"; do tests[$i]="${tests[$i]%_test}_test"; done
fi
build_dir="$(mkdir -p "$build_dir" && cd "$build_dir" && pwd)"  # absolute: tests run in its tests/
for t in "${tests[@]}"; do
  [ -f "tests/unit/$t.cpp" ] || { echo "sanitize.sh: no tests/unit/$t.cpp" >&2; exit 2; }
done

# shellcheck source=scripts/clang_build.sh
source "$root/scripts/clang_build.sh"
if [ "$do_build" -eq 1 ]; then
  configure_clang_build sanitize.sh "$build_dir"
  targets=()
  for t in "${tests[@]}"; do targets+=("ctrainer_$t"); done
  start=$(date +%s)
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
  echo "sanitize.sh: built ${#targets[@]} test programs in $(( $(date +%s) - start )) s"
fi

# A leak is a failure (LeakSanitizer runs at exit); undefined behaviour aborts (the library is
# compiled with -fno-sanitize-recover=undefined).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/fuzz/lsan.supp:print_suppressions=0}"
# One intra-op thread per program: `jobs` programs run at once. No GPU: the CUDA paths are not
# instrumented (CTRAINER_WITH_CUDA=OFF).
export OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES=

logs="$build_dir/sanitize-logs"
rm -rf "$logs"
mkdir -p "$logs"
run_one() {
  local t="$1" logs="$2" build_dir="$3"
  local start=$(date +%s)
  if (cd "$build_dir/tests" && "./ctrainer_$t" --gtest_brief=1 > "$logs/$t.log" 2>&1); then
    echo "  passed $t ($(( $(date +%s) - start )) s)"
  else
    echo "  FAILED $t ($(( $(date +%s) - start )) s): $logs/$t.log"
    grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:|\[  FAILED  \]" "$logs/$t.log" | head -5 | sed 's/^/    /'
    return 1
  fi
}
export -f run_one
start=$(date +%s)
status=0
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} "$logs" "$build_dir" ||
  status=1
echo "sanitize.sh: ${#tests[@]} unit test programs under ASan + UBSan in $(( $(date +%s) - start )) s"
[ "$status" -eq 0 ] || echo "sanitize.sh: failures (logs in $logs)" >&2
exit "$status"
