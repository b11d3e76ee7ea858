# find_torch_python.sh — sourced by the GPU scripts (scripts/gpu-suite.sh,
# benchmarks/gpu/run_vs_hf_gpu.sh). The caller defines die().
#
# find_python: the Python with torch: CT_PYTHON, else the first of the GPU kit's candidates that
# imports it (the GPU machine's torch lives in /opt/torch/.venv).
find_python() {
  for c in ${CT_PYTHON:-} python3 /opt/torch/.venv/bin/python3 /usr/local/bin/python3; do
    if command -v "$c" > /dev/null 2>&1 && "$c" -c 'import torch' > /dev/null 2>&1; then
      command -v "$c"; return 0
    fi
  done
  die "no Python that imports torch (set CT_PYTHON)"
}
