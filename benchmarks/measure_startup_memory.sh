#!/usr/bin/env bash
# What loading CUDA costs a process: the peak RSS of `run_glue --help` with CTRAINER_CUDA=off
# (libtorch_cpu only) and CTRAINER_CUDA=on (libctrainer_cuda.so, libtorch_cuda and the wheel's CUDA
# libraries loaded even without a driver), 5 runs each, medians, into
# benchmarks/results/startup_memory.json (docs/building.md quotes it).
#
#   benchmarks/measure_startup_memory.sh [BUILD_DIR] [RESULT_JSON]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${1:-build}"
result="${2:-benchmarks/results/startup_memory.json}"
[[ -x $build/examples/run_glue ]] || { echo "measure_startup_memory.sh: $build/examples/run_glue is not built" >&2; exit 2; }
python3 - "$build/examples/run_glue" "$result" <<'PY'
import datetime, json, os, platform, statistics, subprocess, sys
program, result = sys.argv[1:]
def peak_mib(mode):
    runs = []
    for _ in range(5):
        child = subprocess.Popen([program, "--help"], stdout=subprocess.DEVNULL,
                                 env=dict(os.environ, CTRAINER_CUDA=mode))
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            sys.exit(f"measure_startup_memory.sh: {program} --help failed with CTRAINER_CUDA={mode}")
        runs.append(usage.ru_maxrss / 1024)  # KiB -> MiB
    return statistics.median(runs), runs
off, off_runs = peak_mib("off")
on, on_runs = peak_mib("on")
json.dump({
    "scenario": "startup_memory",
    "command": "benchmarks/measure_startup_memory.sh",
    "config": {"program": "run_glue --help", "runs": 5, "unit": "MiB (ru_maxrss from wait4)"},
    "environment": {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "machine": platform.platform(), "nproc": os.cpu_count()},
    "metrics": {"help_peak_rss_mib_cuda_off": off, "help_peak_rss_mib_cuda_on": on,
                "cuda_libraries_mib": on - off, "runs_cuda_off": off_runs, "runs_cuda_on": on_runs},
    "table": {"header": ["CTRAINER_CUDA", "peak RSS MiB (median of 5)"],
              "rows": [["off", f"{off:.0f}"], ["on", f"{on:.0f}"]]},
}, open(result, "w"), indent=2, sort_keys=True)
open(result, "a").write("\n")
print(f"measure_startup_memory.sh: {off:.0f} MiB without CUDA, {on:.0f} MiB with -> {result}")
PY
