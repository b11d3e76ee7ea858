#!/usr/bin/env bash
# gpu-suite.sh — the whole test suite, then a short GPU benchmark, on a machine with a CUDA GPU,
# through the GPU build kit (/work/shared/tools/gpu: the Debian libraries the GPU machine lacks,
# unpacked into a private prefix; its torch wheel; its nvcc).
#
#   dev machine, repo root:  CT_EXTRA_DEBS="zlib1g-dev zlib1g" bash <kit>/prep
#   GPU machine, repo root:  bash scripts/gpu-suite.sh        (build + ctest + `after`)
#
# `after` (run by the kit as CT_AFTER, inside its library environment) prints the GPU, then runs
# ctrainer-bench vs_hf in the GPU recipe (bf16 on every side, MFU) on W3 and then W1 batch 32,
# each under its own time limit, writing the W3 JSON to $OUT.
# Environment: CT_PYTHON (a python with torch), CT_CTEST_ARGS (default -j12),
#              CT_GPU_BENCH_SECONDS (time for the benchmark part, default 200; 0 skips it).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
die() { echo "gpu-suite: ERROR: $*" >&2; exit 1; }

find_python() {
  for c in ${CT_PYTHON:-} python3 /opt/torch/.venv/bin/python3 /usr/local/bin/python3; do
    if command -v "$c" > /dev/null 2>&1 && "$c" -c 'import torch' > /dev/null 2>&1; then
      command -v "$c"; return 0
    fi
  done
  die "no Python that imports torch (set CT_PYTHON)"
}

suite() {
  [ -f .device/build-on-device ] || die "no .device/build-on-device: run the kit's prep on the dev machine"
  local py; py=$(find_python)
  export CT_PYTHON="$py"
  export CT_CMAKE_ARGS="-DCTRAINER_PYTHON=$py -DCTRAINER_WITH_CUDA=ON ${CT_CMAKE_ARGS:-}"
  export CT_CTEST_ARGS="${CT_CTEST_ARGS:--j12}"
  export CT_TEST_TIMEOUT="${CT_TEST_TIMEOUT:-240}"
  export CT_KEEP_GOING=1
  export CT_AFTER="bash scripts/gpu-suite.sh after"
  exec bash .device/build-on-device
}

after() {
  local py; py=$(find_python)
  local bin=${CT_BUILD_DIR:-build-gpu}/benchmarks/ctrainer-bench
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
  local budget=${CT_GPU_BENCH_SECONDS:-200}
  [ "$budget" -gt 0 ] || { echo "gpu-suite: benchmark skipped (CT_GPU_BENCH_SECONDS=0)"; return 0; }
  [ -x "$bin" ] || die "$bin is not built"
  local start=$SECONDS rc=0
  # W3 first: BERT-base, where MFU means most; its JSON comes back in $OUT.
  CTRAINER_BENCH_PYTHON="$py" timeout -k 5 "$budget" "$bin" vs_hf --device cuda --bf16 \
    --workloads w3 --rounds 3 --json "${OUT:-$root/${CT_BUILD_DIR:-build-gpu}}/vs_hf_gpu_w3.json" ||
    rc=$?
  local left=$((budget - (SECONDS - start)))
  if [ "$left" -gt 30 ]; then
    CTRAINER_BENCH_PYTHON="$py" timeout -k 5 "$left" "$bin" vs_hf --device cuda --bf16 \
      --workloads w1_b32 --rounds 3 --max_steps 300 || rc=$?
  fi
  return "$rc"
}

case "${1:-suite}" in
  suite) suite ;;
  after) after ;;
  *) die "usage: $0 [suite|after]" ;;
esac
