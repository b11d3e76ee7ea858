#!/usr/bin/env bash
# gpu-suite.sh — the test suite and a short GPU benchmark on a machine with a CUDA GPU, through
# the GPU build kit (/work/shared/tools/gpu: the Debian libraries the GPU machine lacks, unpacked
# into a private prefix; its torch wheel; its nvcc).
#
#   dev machine, repo root:  CT_EXTRA_DEBS="zlib1g-dev zlib1g libgmock-dev libcurl4-openssl-dev libcurl4 libonig-dev libonig5" bash <kit>/prep
#                            bash scripts/gpu-suite.sh fetch-curl   what libcurl needs, in case
#   GPU machine, repo root:  bash scripts/gpu-suite.sh        what the GPU tests and the
#                                                             benchmark need, the GPU tests, and
#                                                             the benchmark (w3_b32, below)
#                            bash scripts/gpu-suite.sh rest   (same warm machine) every other test
#                            bash scripts/gpu-suite.sh all    build + GPU tests + the others in
#                                                             what is left of the call (no bench)
#
# One device call runs at most 10 minutes, and a task's whole lease is 15. On an H100 machine
# (2026-11-26): the whole build took 253 s on 16 cores, the 39 GPU tests 24 s, the 636 others
# (label parity excluded: the reference Python stack is not there) 94 s with -j8. `suite` builds
# only the GPU tests' programs, run_glue and ctrainer-bench, runs the GPU tests, then `after`
# (the kit's CT_AFTER): vs_hf's GPU recipe at batch 32 for 200 steps, with and without the
# [CLS]-only last layer, in what is left of CT_TIME_BUDGET. `rest` runs the other tests.
# CPU tests get OMP_NUM_THREADS=2: ctest -j8 with every test using all 16 cores timed tests out.
# Environment: CT_PYTHON (a python with torch), CT_GPU_BENCH_SECONDS (0 skips the benchmark).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
die() { echo "gpu-suite: ERROR: $*" >&2; exit 1; }

# shellcheck source=scripts/find_torch_python.sh
source "$root/scripts/find_torch_python.sh"  # find_python

# The tests that run on the GPU (the rest hide it or never touch it).
readonly GPU_TESTS='Cuda|RunGlueGpu|RngState|PrecisionTraining|GradScaler'

# What libcurl4 needs at run time (Debian 12), for a GPU machine without them. The kit brings
# libcurl4-openssl-dev and libcurl4 (prep's CT_EXTRA_DEBS) onto its own library path.
readonly CURL_DEPENDENCY_DEBS=(libbrotli1 libcom-err2 libdb5.3 libffi8 libgmp10 libgnutls30
  libgssapi-krb5-2 libhogweed6 libidn2-0 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0
  libldap-2.5-0 libnettle8 libnghttp2-14 libp11-kit0 libpsl5 librtmp1 libsasl2-2
  libsasl2-modules-db libssh2-1 libssl3 libtasn1-6 libunistring2 libzstd1)

fetch_curl() {
  mkdir -p .device/curl-debs
  (cd .device/curl-debs && apt-get download "${CURL_DEPENDENCY_DEBS[@]}") || die "apt-get download failed"
}

system_has() { { ldconfig -p 2>/dev/null || /sbin/ldconfig -p; } | grep -qE "^\s$1 \(libc6,x86-64"; }

# Puts on LD_LIBRARY_PATH only the libraries libcurl needs that the machine lacks (shadowing its
# own, newer ones could break its tools).
provide_curl_dependencies() {
  ls .device/curl-debs/*.deb > /dev/null 2>&1 ||
    die "no .device/curl-debs: run 'scripts/gpu-suite.sh fetch-curl' on the dev machine"
  local unpacked=/opt/ctcurl/unpacked dir=/opt/ctcurl/lib deb f name
  rm -rf /opt/ctcurl && mkdir -p "$unpacked" "$dir"
  for deb in .device/curl-debs/*.deb; do dpkg-deb -x "$deb" "$unpacked"; done
  for f in "$unpacked"/usr/lib/x86_64-linux-gnu/*.so.* "$unpacked"/lib/x86_64-linux-gnu/*.so.*; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    system_has "$name" || cp -L "$f" "$dir/$name"
  done
  echo "gpu-suite: libraries for libcurl the machine lacks: $(ls "$dir" | tr '\n' ' ')"
  export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

kit() {
  [ -f .device/build-on-device ] || die "no .device/build-on-device: run the kit's prep on the dev machine"
  local py; py=$(find_python)
  export CT_PYTHON="$py"
  provide_curl_dependencies
  export CT_CMAKE_ARGS="-DCTRAINER_PYTHON=$py -DCTRAINER_WITH_CUDA=ON ${CT_CMAKE_ARGS:-}"
  export CT_TEST_TIMEOUT="${CT_TEST_TIMEOUT:-240}"
  export CT_KEEP_GOING=1
  exec bash .device/build-on-device
}

# What the GPU tests and the benchmark need, built alone: on a 15-minute lease the whole build
# (~170 test and tool programs) would leave no time for a benchmark of realistic length.
# The unit tests are one program in a unity build (tests/CMakeLists.txt): ctrainer_unit_tests.
readonly GPU_TARGETS='ctrainer_cuda run_glue ctrainer-bench ctrainer_unit_tests
  ctrainer_run_glue_gpu_e2e_test'

suite() {
  export CT_BUILD_ARGS="--target $(echo $GPU_TARGETS) ${CT_BUILD_ARGS:-}"
  export CT_CTEST_ARGS="-j6 -R '$GPU_TESTS'"
  export CT_AFTER="bash scripts/gpu-suite.sh after"
  # after() spends what is left of the kit's budget (CT_TIME_BUDGET, started now).
  export CT_SUITE_DEADLINE=$(($(date +%s) + ${CT_TIME_BUDGET:-570} - 10))
  kit
}

# The GPU tests, then every other test for what is left of CT_TIME_BUDGET (tests that need the
# reference Python stack, absent on the GPU machine, excluded: label parity).
all() {
  export CT_CTEST_ARGS="-j6 -R '$GPU_TESTS'"
  export CT_AFTER="OMP_NUM_THREADS=2 ctest --test-dir ${CT_BUILD_DIR:-build-gpu} -j8 --timeout 200 -E '$GPU_TESTS' -LE parity --output-on-failure"
  kit
}

rest() {
  export CT_STEPS=env
  export CT_AFTER="OMP_NUM_THREADS=2 ctest --test-dir ${CT_BUILD_DIR:-build-gpu} -j8 --timeout 240 -E '$GPU_TESTS'"
  kit
}

# The GPU recipe at a realistic length: W3's BERT-base at batch 32 for 200 steps (w3_b32), bf16,
# no --profile_steps (its per-phase synchronisation would slow our side), 2 rounds alternating
# the sides; then, time allowing, the same at equal FLOPs (--full_last_layer). The JSONs land in
# $OUT (the kit's logs take 7 of its 8 files: configure.log, not needed once the build ran, is
# dropped to make room for the second).
after() {
  local py; py=$(find_python)
  local bin=${CT_BUILD_DIR:-build-gpu}/benchmarks/ctrainer-bench
  local out=${OUT:-$root/${CT_BUILD_DIR:-build-gpu}}
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
  [ "${CT_GPU_BENCH_SECONDS:-1}" -gt 0 ] || { echo "gpu-suite: benchmark skipped (CT_GPU_BENCH_SECONDS=0)"; return 0; }
  [ -x "$bin" ] || die "$bin is not built"
  rm -f "${OUT:-/nonexistent}/configure.log"
  local deadline=${CT_SUITE_DEADLINE:-$(($(date +%s) + ${CT_GPU_BENCH_SECONDS:-300}))} rc=0 left
  local recipe=(vs_hf --device cuda --bf16 --workloads w3_b32 --rounds 2 --no_profile)
  left=$((deadline - $(date +%s)))
  echo "gpu-suite: ${left}s left for the benchmark"
  CTRAINER_BENCH_PYTHON="$py" timeout -k 5 "$left" "$bin" "${recipe[@]}" \
    --json "$out/vs_hf_gpu_w3_b32.json" || rc=$?
  left=$((deadline - $(date +%s)))
  if [ "$left" -gt 150 ]; then
    CTRAINER_BENCH_PYTHON="$py" timeout -k 5 "$left" "$bin" "${recipe[@]}" --full_last_layer \
      --json "$out/vs_hf_gpu_w3_b32_full_last_layer.json" || rc=$?
  else
    echo "gpu-suite: ${left}s left: the equal-FLOPs run (--full_last_layer) is skipped"
  fi
  return "$rc"
}

case "${1:-suite}" in
  suite) suite ;;
  rest) rest ;;
  all) all ;;
  fetch-curl) fetch_curl ;;
  after) after ;;
  *) die "usage: $0 [suite|rest|all|after|fetch-curl]" ;;
esac
