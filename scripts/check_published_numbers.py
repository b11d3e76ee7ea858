#!/usr/bin/env python3
"""Every published measurement comes from a result file in benchmarks/results.

A measured number in Markdown carries its source right after it, as an HTML comment that
renderers hide:

    1.97×<!--#vs_hf metrics.w1_b8.samples_per_s_ratio-->
    0.305<!--#vs_hf_w1_epoch metrics.w1_b8.ctrainer.fraction_of_gemm_peak.median-->
    9 min 56 s<!--#build_and_test_times metrics.ctest_built_tree_s min:s-->

NAME is benchmarks/results/NAME.json (gpu/NAME: benchmarks/gpu/results/NAME.json, the GPU
recipes' results), PATH a dotted path into it (a list index is a number).
An optional last word converts the value before it is compared: `*N` or `/N` (`*100`: a fraction
shown as a percentage or in points; `/1e6`: bytes shown in MB; `/1000`: ms shown as s), or `min:s`
(seconds shown as "M min S s").
The shown number must equal the value rounded to the shown number of decimals.

Files in COVERED must mark every number that looks like a measurement (a ratio `1.2×`, a time,
a size, a rate, a percentage): a number that is no measurement (a setting, a target, a formula)
is followed by `<!--#set-->` instead.

Usage: check_published_numbers.py [ROOT] [--list]   (--list prints each marked number)
Exit status 0 when every marker matches its file and every covered measurement is marked.
"""
import json
import pathlib
import re
import sys

# Files where every measurement must carry its source (globs). Others are checked where they
# carry markers.
COVERED = ["README.md", "docs/*.md", "benchmarks/results/tokenizer.md",
           "benchmarks/results/tokenizer_json.md",
           "benchmarks/results/dataloader.md", "benchmarks/results/precision.md",
           "benchmarks/results/gradient_checkpointing.md", "benchmarks/results/checkpoint_io.md",
           "benchmarks/results/ddp.md", "benchmarks/results/sharding.md",
           "benchmarks/results/trainer_overhead.md", "benchmarks/results/README.md",
           "benchmarks/results/vs_hf.md", "benchmarks/gpu/README.md"]
MARKED_FILES = ["README.md", "docs/*.md", "benchmarks/results/*.md", "benchmarks/gpu/*.md"]

NUMBER = r"[-+−]?\d+(?:,\d{3})*(?:\.\d+)?"
MARKER = re.compile(r"<!--#(?P<body>[^>]*?)-->")
SHOWN_BEFORE = re.compile(
    r"(?P<minutes>\d+)\s*min\s+(?P<seconds>\d+(?:\.\d+)?)\s*s\**$|(?P<number>" + NUMBER +
    r")\s*(?:×|x|%|pt|s|ms|min|MB|GB|MiB|GiB|KB|GFLOP/s|TFLOP/s|MB/s|samples/s|tokens/s)?\**$")
MEASUREMENT = re.compile(
    r"(?<![\w.#/-])(?:\d+\s*min\s+\d+(?:\.\d+)?\s*s|" + NUMBER +
    r"\s?(?:×|x\b|%|\s?(?:s|ms|min|minutes|GFLOP/s|MB/s|MB|GB|MiB|GiB|KB|samples/s|tokens/s|pt)\b))")
GENERATED = re.compile(r"<!-- generated:begin (\S+) -->.*?<!-- generated:end \1 -->", re.DOTALL)
CODE = re.compile(r"`[^`]*`")  # code spans may wrap lines


def value_at(document, path):
    node = document
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def convert(value, conversion):
    """`*N` or `/N` scales (a fraction shown in %, bytes in MB, ms in s); min:s changes only how
    the value is shown."""
    if conversion in (None, "min:s"):
        return value
    match = re.fullmatch(r"([*/])(\d+(?:\.\d+)?(?:e\d+)?)", conversion)
    if match is None:
        raise ValueError(f"unknown conversion {conversion!r} (use *N, /N or min:s)")
    factor = float(match.group(2))
    return value * factor if match.group(1) == "*" else value / factor


def shown_matches(shown, value, conversion):
    """Whether the text before a marker shows `value`; returns (ok, what the JSON says)."""
    match = SHOWN_BEFORE.search(shown)
    if match is None:
        return False, "no number right before the marker"
    if conversion == "min:s" or match.group("minutes"):
        if match.group("minutes") is None:
            return False, "min:s needs 'M min S s' before the marker"
        seconds_text = match.group("seconds")
        decimals = len(seconds_text.split(".")[1]) if "." in seconds_text else 0
        total = round(float(value), decimals)
        minutes, seconds = divmod(total, 60)
        expected = f"{int(minutes)} min {seconds:0{3 + decimals if decimals else 2}.{decimals}f} s"
        got = float(match.group("minutes")) * 60 + float(seconds_text)
        return abs(got - total) < 10 ** -decimals / 2 + 1e-9, expected
    text = match.group("number").replace(",", "").replace("−", "-")
    decimals = len(text.split(".")[1]) if "." in text else 0
    expected = f"{round(float(value), decimals):.{decimals}f}"
    return float(text) == float(expected), expected


def check_file(root, path, results, problems, listing):
    text = path.read_text(encoding="utf-8")
    relative = path.relative_to(root).as_posix()
    masked = CODE.sub(lambda m: " " * len(m.group(0)), text)  # a marker quoted in code is prose
    for marker in MARKER.finditer(masked):
        body = marker.group("body").strip()
        line = text.count("\n", 0, marker.start()) + 1
        where = f"{relative}:{line}"
        if body == "set":
            continue
        words = body.split()
        if len(words) not in (2, 3):
            problems.append(f"{where}: marker <!--#{body}--> should be <!--#NAME PATH [CONVERSION]-->")
            continue
        name, json_path = words[0], words[1]
        conversion = words[2] if len(words) == 3 else None
        if name not in results:
            problems.append(f"{where}: no benchmarks/results/{name}.json")
            continue
        try:
            value = convert(value_at(results[name], json_path), conversion)
        except (KeyError, IndexError, ValueError, TypeError) as error:
            problems.append(f"{where}: {name}.json has no number at {json_path} ({error})")
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            problems.append(f"{where}: {name}.json {json_path} is not a number")
            continue
        before = text[max(0, marker.start() - 40):marker.start()]
        ok, expected = shown_matches(before, value, conversion)
        if listing:
            print(f"{where}: {before.split()[-1] if before.split() else ''} <- {name} {json_path}")
        if not ok:
            problems.append(f"{where}: shows {before.strip().split(chr(10))[-1][-20:]!r}, but "
                            f"{name}.json {json_path} is {value!r} (shown: {expected})")


def unmarked_measurements(root, relative, problems):
    text = (root / relative).read_text(encoding="utf-8")
    masked = CODE.sub(lambda m: " " * len(m.group(0)), text)  # commands and messages
    # What `ctrainer-bench report` generates from the result files is theirs by construction.
    masked = GENERATED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), masked)
    for match in MEASUREMENT.finditer(masked):
        after = masked[match.end():match.end() + 8]
        if after.startswith("<!--") or after.lstrip("*").startswith("<!--"):
            continue
        line = text.count("\n", 0, match.start()) + 1
        problems.append(f"{relative}:{line}: '{match.group(0)}' has no source: add "
                        f"<!--#NAME PATH--> (benchmarks/results/NAME.json), or <!--#set--> if it is "
                        f"no measurement")


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    listing = "--list" in argv
    root = pathlib.Path(args[0]) if args else pathlib.Path(__file__).resolve().parents[1]
    results = {}
    for path in sorted((root / "benchmarks" / "results").glob("*.json")):
        results[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    for path in sorted((root / "benchmarks" / "gpu" / "results").glob("*.json")):
        results["gpu/" + path.stem] = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    seen = set()
    for pattern in MARKED_FILES:
        for path in sorted(root.glob(pattern)):
            if path not in seen:
                seen.add(path)
                check_file(root, path, results, problems, listing)
    for pattern in COVERED:
        for path in sorted(root.glob(pattern)):
            unmarked_measurements(root, path.relative_to(root).as_posix(), problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_published_numbers: {len(problems)} number(s) not from their result file",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
