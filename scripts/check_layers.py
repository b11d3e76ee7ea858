#!/usr/bin/env python3
"""Fails when an #include points up a layer (docs/architecture.md draws the layers).

Layers, lowest first; a file may include its own room and the rooms listed for it:
  trainer/core      basics (errors, torch compat, logger, Batch, gradient clipping): nothing above
  integrations      file formats and outside tools:                       core
  models            modules, configs, tokenizers, weights:                core, integrations
  distributed       process groups, strategies, launcher:                 core
  trainer           the Trainer, its arguments, data, callbacks, ...:     all of the above
  examples          programs built on the library:                        all of the above
  benchmarks        the harness:                                          all of the above, examples
tests/ may include anything. Only includes of ctrainer's own headers are checked:
<ctrainer/<path>> and "<path>" (resolved next to the including file).

Usage: check_layers.py [ROOT]   (ROOT defaults to the repository holding this script)
Exit status 0 when every include points down or sideways, 1 with one line per violation.
"""
import pathlib
import re
import sys

# Room -> the rooms it may include besides itself. The most specific prefix names a file's room.
ALLOWED = {
    "trainer/core": set(),
    "integrations": {"trainer/core"},
    "models": {"trainer/core", "integrations"},
    "distributed": {"trainer/core"},
    "trainer": {"trainer/core", "integrations", "models", "distributed"},
    "examples": {"trainer/core", "integrations", "models", "distributed", "trainer"},
    "benchmarks": {"trainer/core", "integrations", "models", "distributed", "trainer", "examples"},
}
SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc"}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.MULTILINE)


def room_of(relative_path: str):
    """The room a repository-relative path belongs to, or None outside the layered code."""
    best = None
    for room in ALLOWED:
        if relative_path == room or relative_path.startswith(room + "/"):
            if best is None or len(room) > len(best):
                best = room
    return best


def violations(root: pathlib.Path):
    found = []
    for room in ALLOWED:
        for path in sorted((root / room).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            source = path.relative_to(root).as_posix()
            if room_of(source) != room:
                continue  # a deeper room (trainer/core inside trainer) checks it
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INCLUDE.finditer(text):
                bracket, name = match.groups()
                if bracket == "<":
                    if not name.startswith("ctrainer/"):
                        continue  # std, torch, third-party
                    target = name[len("ctrainer/"):]
                else:
                    resolved = (path.parent / name).resolve()
                    try:
                        target = resolved.relative_to(root.resolve()).as_posix()
                    except ValueError:
                        continue
                target_room = room_of(target)
                if target_room is None or target_room == room or target_room in ALLOWED[room]:
                    continue
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{source}:{line}: includes {name} ({target_room}), but {room} may "
                             f"only include {', '.join(sorted(ALLOWED[room])) or 'itself'}")
    return found


def main(argv):
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1]
    if not (root / "trainer").is_dir():
        print(f"check_layers: {root} has no trainer/ folder; pass the repository root",
              file=sys.stderr)
        return 2
    found = violations(root)
    for line in found:
        print(line)
    if found:
        print(f"check_layers: {len(found)} include(s) point up a layer (see docs/architecture.md)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
