# shellcheck shell=bash
# Sourced by scripts/fuzz.sh and scripts/sanitize.sh: the one clang build folder they share
# (ASan + UBSan + coverage on the whole library, CTRAINER_FUZZ), configured the same way by both
# so that neither reconfigures what the other built.
#
#   configure_clang_build SCRIPT_NAME BUILD_DIR
#     checks for clang++, installs the dependencies (scripts/install-deps.sh) and configures
#     BUILD_DIR; exports ccache's settings for the shared precompiled header.

configure_clang_build() {
  local script="$1" build_dir="$2"
  # ccache and the shared precompiled header only cooperate with these settings (the Makefile's).
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
  command -v clang++ > /dev/null || {
    echo "$script: clang++ not found: the sanitizer and libFuzzer build needs clang" \
      "(scripts/install-deps.sh installs it)" >&2
    exit 1
  }
  bash scripts/install-deps.sh
  local venv
  venv="$(bash scripts/install-deps.sh --print-venv)"
  # -O1, as the sanitizers' documentation advises: their reports stay exact, and the instrumented
  # library compiles in about three quarters of -O3's time.
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_CXX_COMPILER=clang++ -DCTRAINER_PYTHON="$venv/bin/python" \
    -DCTRAINER_WITH_CUDA=OFF -DCTRAINER_FUZZ=ON \
    -DCTRAINER_BUILD_TESTS=ON -DCTRAINER_BUILD_BENCHMARKS=OFF > /dev/null
}
