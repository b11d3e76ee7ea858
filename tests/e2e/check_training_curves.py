#!/usr/bin/env python3
"""Checks an SVG of `ctrainer-plot RUN [RUN...] --output FILE` against the runs' trainer_state.json.

The file must parse as XML (xml.etree) with an SVG 1.1 root holding one panel (a nested <svg>)
per curve: loss, learning_rate, grad_norm, eval_loss, then the other eval_* metrics in name
order (runtimes and throughputs left out), each only when some run logged it; every panel titled
and with one polyline per run, holding one point per log entry of the run that has the key and
a step. Exit status 0 when all hold, 1 with one line per problem.

Usage: check_training_curves.py FILE RUN [RUN...]
"""
import json
import pathlib
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
TITLES = {"loss": "Training loss", "learning_rate": "Learning rate", "grad_norm": "Gradient norm"}


def history_of(run: str):
    path = pathlib.Path(run)
    if path.is_dir():
        path = path / "trainer_state.json"
    return json.loads(path.read_text())["log_history"]


def points(history, key):
    return [e for e in history if isinstance(e.get(key), (int, float)) and "step" in e]


def expected_panels(histories):
    keys = [k for k in ("loss", "learning_rate", "grad_norm", "eval_loss")
            if any(points(h, k) for h in histories)]
    skip = ("_runtime", "_samples_per_second", "_steps_per_second")
    metrics = sorted({k for h in histories for e in h for k, v in e.items()
                      if k.startswith("eval_") and k != "eval_loss" and not k.endswith(skip)
                      and isinstance(v, (int, float))})
    return keys + metrics


def problems_of(svg_path: str, runs):
    found = []
    try:
        root = ET.parse(svg_path).getroot()
    except (ET.ParseError, OSError) as error:
        return [f"{svg_path}: not well-formed XML: {error}"]
    if root.tag != SVG + "svg" or root.get("version") != "1.1":
        found.append(f"root is {root.tag} version {root.get('version')}, not SVG 1.1")
    histories = [history_of(run) for run in runs]
    keys = expected_panels(histories)
    panels = root.findall(f"{SVG}svg")
    if len(panels) != len(keys):
        found.append(f"{len(panels)} panels, expected {len(keys)} ({keys})")
    for key, panel in zip(keys, panels):
        title = panel.find(f"{SVG}title")
        wanted = TITLES.get(key, "Evaluation: " + key[len("eval_"):])
        if title is None or title.text != wanted:
            found.append(f"panel for {key}: title {None if title is None else title.text!r}, "
                         f"expected {wanted!r}")
        lines = panel.findall(f".//{SVG}polyline")
        got = [len(line.get("points", "").split()) for line in lines]
        want = [len(points(h, key)) for h in histories]
        if got != want:
            found.append(f"panel for {key}: polylines with {got} points, expected {want}")
        legend = [t.text for t in panel.findall(f".//{SVG}g[@class='legend']/{SVG}text")]
        if len(legend) != len(runs):
            found.append(f"panel for {key}: legend {legend}, expected one entry per run")
        texts = "".join(t.text or "" for t in panel.iter(f"{SVG}text"))
        if "optimizer step" not in texts:
            found.append(f"panel for {key}: no x axis label 'optimizer step'")
    return found


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    found = problems_of(argv[1], argv[2:])
    for problem in found:
        print(problem)
    if not found:
        print(f"{argv[1]}: every panel holds every run's points")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
