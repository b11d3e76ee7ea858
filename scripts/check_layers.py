#!/usr/bin/env python3
"""Fails when an #include points up a layer (docs/architecture.md draws the layers).

Layers, lowest first; a file may include its own layer and the layers listed for it:
  core          basics (errors, torch compat, logger, Batch, JSON, files):  nothing above
  integrations  file formats and outside tools:                              core
  models        modules, configs, registries, tokenizers:                    core, integrations
  distributed   process groups, strategies (and their checkpoint state):    core, integrations
  trainer       the Trainer, its arguments, data, callbacks, ...:            all of the above
  examples      programs built on the library:                               all of the above
  benchmarks    the harness:                                                 all of the above, examples
A leaf room (LEAF_ROOMS: trainer/args) may include only itself and the lower layers.
tests/ and fuzz/ may include anything; cmake/, scripts/, docs/ and third_party/ hold no layered
code. Any other top-level folder with C or C++ sources is an error until it is given a place here
(and in cmake/CtrainerLayers.cmake, which enforces the same table when compiling and linking).

Only includes of ctrainer's own headers are checked, in every spelling the preprocessor accepts:
<ctrainer/<path>> and "ctrainer/<path>" (found through the include directory), "<path>" resolved
next to the including file, `..` anywhere inside either (normalised first), #include_next and
#import as well as #include. Header-like files of any suffix (.h .hh .hpp .hxx .inl .ipp .tpp .tcc
.cuh ...) and sources (.c .cc .cpp .cxx .cu ...) are read. An include whose name is a macro
cannot be checked and is refused in layered code.

Usage: check_layers.py [ROOT]   (ROOT defaults to the repository holding this script)
Exit status 0 when every include points down or sideways, 1 with one line per violation.
"""
import pathlib
import posixpath
import re
import sys

# Layer -> the layers it may include besides itself.
ALLOWED = {
    "core": set(),
    "integrations": {"core"},
    "models": {"core", "integrations"},
    "distributed": {"core", "integrations"},
    "trainer": {"core", "integrations", "models", "distributed"},
    "examples": {"core", "integrations", "models", "distributed", "trainer"},
    "benchmarks": {"core", "integrations", "models", "distributed", "trainer", "examples"},
}
# Rooms of a layer that are leaves: they may include lower layers and themselves, but no other
# room of their layer (the arguments are read by every room, so they must depend on none).
LEAF_ROOMS = {
    "trainer/args": "the arguments are a leaf of trainer/ (parser, TrainingArguments, option "
                    "specs): move what they need into a lower layer, or the check into its room",
}
# Top-level folders outside the layers: may include anything (tests, fuzz) or hold no C++.
UNLAYERED = {"tests", "fuzz", "cmake", "scripts", "docs", "third_party"}
SOURCE_SUFFIXES = {".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp", ".tcc", ".ixx",
                   ".cuh", ".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".inc"}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*(include_next|include|import)[ \t]*(.*)$', re.MULTILINE)
LITERAL = re.compile(r'^([<"])([^>"]+)[>"]')


def layer_of(relative_path: str):
    """The layer a repository-relative path belongs to, or None outside the layered code."""
    top = relative_path.split("/", 1)[0]
    return top if top in ALLOWED else None


def is_build_folder(path: pathlib.Path):
    return path.name.startswith(("build", ".")) or (path / "CMakeCache.txt").exists()


def unknown_top_level_folders(root: pathlib.Path):
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if folder.name in ALLOWED or folder.name in UNLAYERED or is_build_folder(folder):
            continue
        if any(p.suffix in SOURCE_SUFFIXES and p.is_file() for p in folder.rglob("*")):
            found.append(f"{folder.name}/: a top-level folder with C++ sources that is no layer; "
                         f"give it a place in scripts/check_layers.py ALLOWED, "
                         f"cmake/CtrainerLayers.cmake and docs/architecture.md, or move it into one")
    return found


def target_of(path: pathlib.Path, root: pathlib.Path, bracket: str, name: str):
    """Repository-relative path an include names, or None when it is not one of ctrainer's."""
    if bracket == '"':
        beside = posixpath.normpath(posixpath.join(path.parent.relative_to(root).as_posix(), name))
        if (root / beside).exists() or not name.startswith("ctrainer/"):
            return None if beside.startswith("../") else beside
    if not name.startswith("ctrainer/"):
        return None  # std, torch, third-party
    return posixpath.normpath(name[len("ctrainer/"):])


def violations(root: pathlib.Path):
    found = unknown_top_level_folders(root)
    for layer in ALLOWED:
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            source = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INCLUDE.finditer(text):
                directive, rest = match.groups()
                line = text.count("\n", 0, match.start()) + 1
                literal = LITERAL.match(rest.strip())
                if literal is None:
                    found.append(f"{source}:{line}: #{directive} {rest.strip()} names no file "
                                 f"literally, so its layer cannot be checked; write the path")
                    continue
                bracket, name = literal.groups()
                target = target_of(path, root, bracket, name)
                if target is None:
                    continue
                target_layer = layer_of(target)
                if target_layer is None and not target.startswith("../"):
                    continue  # a file outside the layers (the repository root, cmake/)
                room = next((r for r in LEAF_ROOMS if source.startswith(r + "/")), None)
                if room and target_layer == layer and not target.startswith(room + "/"):
                    found.append(f"{source}:{line}: includes {name}, outside {room}/: "
                                 f"{LEAF_ROOMS[room]}")
                    continue
                if target_layer == layer or target_layer in ALLOWED[layer]:
                    continue
                found.append(f"{source}:{line}: includes {name} ({target_layer or 'outside the repository'}), "
                             f"but {layer} may only include "
                             f"{', '.join(sorted(ALLOWED[layer])) or 'itself'}")
    return found


def run_check(argv, name, find_violations, summary):
    """The command line of a repository check: ROOT (default: this script's repository), one line
    per violation on stdout, `summary` (with {count}) on stderr, exit status 0, 1, or 2 (usage)."""
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1]
    if not (root / "trainer").is_dir():
        print(f"{name}: {root} has no trainer/ folder; pass the repository root", file=sys.stderr)
        return 2
    found = find_violations(root.resolve())
    for line in found:
        print(line, flush=True)
    if found:
        print(f"{name}: " + summary.format(count=len(found)), file=sys.stderr)
        return 1
    return 0


def main(argv):
    return run_check(argv, "check_layers", violations,
                     "{count} include(s) point up a layer (see docs/architecture.md)")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
