#!/usr/bin/env python3
"""Fails when files of different folders include each other in a cycle.

A file and its namesakes with another suffix (foo.h, foo.cpp, foo.inl) are one unit: foo.cpp
including bar.h while bar.h includes foo.h is the cycle foo -> bar -> foo. Units of one folder may
form cycles (a header and its helpers); a cycle that leaves its folder means neither folder can be
read, built or moved without the other, so it is refused, e.g. the one issue 31 removed:
trainer/args/training_args -> trainer/sharding/sharding_config -> trainer/args/training_args.

Includes are read as scripts/check_layers.py reads them (every spelling of ctrainer's headers).

Usage: check_include_cycles.py [ROOT]   (ROOT defaults to the repository holding this script)
Exit status 0 without such a cycle, 1 with one line per cycle (its units, in include order).
"""
import pathlib
import posixpath
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_layers  # noqa: E402  (same folder)


def unit_of(relative_path: str) -> str:
    return posixpath.splitext(relative_path)[0]


def include_graph(root: pathlib.Path):
    """unit -> {unit: 'file:line' of the first include that makes the edge}."""
    graph = {}
    for layer in check_layers.ALLOWED:
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in check_layers.SOURCE_SUFFIXES or not path.is_file():
                continue
            source = path.relative_to(root).as_posix()
            edges = graph.setdefault(unit_of(source), {})
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in check_layers.INCLUDE.finditer(text):
                literal = check_layers.LITERAL.match(match.group(2).strip())
                if literal is None:
                    continue  # check_layers.py refuses these
                target = check_layers.target_of(path, root, *literal.groups())
                if target is None or target.startswith("../") or not (root / target).is_file():
                    continue
                line = text.count("\n", 0, match.start()) + 1
                if unit_of(target) != unit_of(source):
                    edges.setdefault(unit_of(target), f"{source}:{line}")
    return graph


def strongly_connected(graph):
    """Tarjan's algorithm, iterative: the components with more than one unit."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def cycle_through(graph, component):
    """A cycle inside `component` that crosses folders, as [(unit, 'file:line'), ...]: an edge
    between two folders, then the shortest way back."""
    members = set(component)
    for source in component:
        for target, where in sorted(graph.get(source, {}).items()):
            if target not in members or posixpath.dirname(target) == posixpath.dirname(source):
                continue
            parents = {target: None}
            queue = [target]
            while queue:
                node = queue.pop(0)
                if node == source:
                    path = []
                    while parents[node] is not None:
                        node, step = parents[node]
                        path.append((node, step))
                    return [(source, where)] + path[::-1]
                for child, step in sorted(graph.get(node, {}).items()):
                    if child in members and child not in parents:
                        parents[child] = (node, step)
                        queue.append(child)
    return [(unit, "") for unit in component]


def violations(root: pathlib.Path):
    graph = include_graph(root)
    found = []
    for component in strongly_connected(graph):
        if len({posixpath.dirname(u) for u in component}) < 2:
            continue
        cycle = cycle_through(graph, component)
        steps = " -> ".join(f"{unit} ({where})" for unit, where in cycle)
        found.append(f"include cycle across folders: {steps} -> {cycle[0][0]}; "
                     f"move what both need into the lower folder, or split a file")
    return found


def main(argv):
    return check_layers.run_check(argv, "check_include_cycles", violations,
                                  "{count} cycle(s) between folders")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
