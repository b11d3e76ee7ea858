#!/usr/bin/env bash
# The README's demo numbers, measured: runs `make demo`'s run_glue command (already built) once,
# timing the whole process, and writes its wall time and dev accuracy into the result file
# benchmarks/results/demo.json (scripts/check_published_numbers.py checks the README against it).
#
#   benchmarks/measure_demo.sh [BUILD_DIR] [RESULT_JSON]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${1:-build}"
result="${2:-benchmarks/results/demo.json}"
program="$build/examples/run_glue"
[[ -x $program ]] || { echo "measure_demo.sh: $program is not built (make demo builds it)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# The Makefile's demo recipe, word for word (make -n prints it).
recipe="$(make -s -n demo BUILD_DIR="$build" | sed -e ":a" -e "/\\\\$/N; s/\\\\\n//; ta" | grep 'examples/run_glue' | sed "s#--output_dir demo_output#--output_dir $out/demo_output#")"
[[ -n $recipe ]] || { echo "measure_demo.sh: no run_glue line in make -n demo" >&2; exit 2; }
load_before="$(cut -d' ' -f1 /proc/loadavg)"
start="$(date +%s.%N)"
bash -c "$recipe" > "$out/log.txt" 2>&1
end="$(date +%s.%N)"
python3 - "$result" "$out/demo_output/eval_results.json" "$start" "$end" "$load_before" "$recipe" <<'PY'
import datetime, json, os, platform, sys
result, eval_path, start, end, load, recipe = sys.argv[1:]
metrics = json.load(open(eval_path))
wall = float(end) - float(start)
json.dump({
    "scenario": "demo",
    "command": "benchmarks/measure_demo.sh",
    "config": {"recipe": recipe.replace(os.path.dirname(os.path.dirname(eval_path)), "<tmp>")},
    "environment": {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": os.cpu_count(), "load_average_1min": float(load), "machine": platform.platform()},
    "metrics": {"wall_s": wall, "dev_accuracy": metrics["eval_accuracy"]},
    "table": {"header": ["wall time", "dev accuracy"],
              "rows": [[f"{int(wall // 60)} min {wall % 60:02.0f} s", f"{metrics['eval_accuracy']:.3f}"]]},
}, open(result, "w"), indent=2, sort_keys=True)
open(result, "a").write("\n")
print(f"measure_demo.sh: {wall:.1f} s, dev accuracy {metrics['eval_accuracy']:.4f} -> {result}")
PY
