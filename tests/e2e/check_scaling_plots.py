#!/usr/bin/env python3
"""Checks the SVG charts of `ctrainer-bench scaling --quick --plots DIR --json DIR/scaling.json`.

Every chart listed in the result's "plots" must parse as XML (xml.etree), be an SVG 1.1 root,
and hold one polyline per series with one point per swept value: the throughput charts one
series, the peak-RSS charts two (peak and the process at start), the processes charts two
(threads in one process, DDP processes). Exit status 0 when all hold, 1 with one line per problem.

Usage: check_scaling_plots.py DIR
"""
import json
import math
import pathlib
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def problems_of(directory: pathlib.Path):
    result = json.loads((directory / "scaling.json").read_text())
    points = result["metrics"]["points"]
    sweeps = result["config"]["sweeps"]
    plots = result.get("plots", [])
    expected_files = {f"scaling_{s}_{q}.svg" for s in sweeps for q in ("throughput", "peak_rss")}
    found = []
    if set(plots) != expected_files:
        found.append(f"plots {sorted(plots)} != expected {sorted(expected_files)}")
    for name in plots:
        path = directory / name
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError) as error:
            found.append(f"{path}: not well-formed XML: {error}")
            continue
        if root.tag != SVG + "svg" or root.get("version") != "1.1":
            found.append(f"{path}: root is {root.tag} version {root.get('version')}, not SVG 1.1")
        sweep = name[len("scaling_"):].rsplit("_", 2 if name.endswith("peak_rss.svg") else 1)[0]
        keys = sweeps[sweep]
        if sweep == "processes":
            lengths = [sum(points[k]["processes"] == 1 for k in keys),
                       sum(points[k]["threads"] == 1 for k in keys)]
        elif name.endswith("peak_rss.svg"):
            lengths = [len(keys), len(keys)]
        else:
            lengths = [len(keys)]
        lines = root.findall(f".//{SVG}polyline")
        got = [len(line.get("points", "").split()) for line in lines]
        if got != lengths:
            found.append(f"{path}: polylines with {got} points, expected {lengths}")
        for line in lines:
            for pair in line.get("points", "").split():
                if not all(math.isfinite(float(v)) for v in pair.split(",")):
                    found.append(f"{path}: non-finite coordinate {pair}")
        title = root.find(f"{SVG}title")
        if title is None or not (title.text or "").strip():
            found.append(f"{path}: no <title>")
        legend = [t.text for t in root.iterfind(f".//{SVG}g[@class='legend']/{SVG}text")]
        if len(legend) != len(lengths):
            found.append(f"{path}: legend {legend}, expected {len(lengths)} entries")
    return found


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    found = problems_of(pathlib.Path(argv[1]))
    for line in found:
        print(line)
    if not found:
        print("check_scaling_plots: all charts are valid SVG with the expected series")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
