"""No import circles among torchbench_core's modules, nor among the evaluation scripts (issue 49): a module
never imports, at the top or inside a function, a module that imports it back, directly or round a longer
loop. What two modules share lives a floor below both (cpp.compile_cpp, alert_validation.asv_conf)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# none known: the strace tracer's process (syscalls_trace) imports the asv worker, which imports only the
# trace's parser (syscalls)
KNOWN: set[frozenset[str]] = set()


def _modules(*folders: str) -> dict[str, Path]:
    found = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports, anywhere in its text: relative imports resolved, `from pkg import mod`
    an edge to pkg.mod (not to pkg), and an evaluation script's bare sibling names resolved to the script."""
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                subs = {f"{module}.{a.name}" for a in node.names} & modules.keys()
                targets |= subs or {module}
        if name.startswith("evaluation."):
            targets |= {f"evaluation.{t}" for t in targets}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = {stack.pop()}
            while v not in group:
                group.add(stack.pop())
            if len(group) > 1:
                circles.append(group)

    for v in graph:
        if v not in index:
            visit(v)
    return circles


def test_the_checker_finds_a_lazy_circle():
    graph = _graph(_modules("torchbench_core"))
    graph["torchbench_core.callgrind"].add("torchbench_core.timing")  # issue 49's circle, as it was
    assert {"torchbench_core.callgrind", "torchbench_core.timing"} in _circles(graph)


def test_no_import_circles_in_torchbench_core_or_the_evaluation_scripts():
    graph = _graph(_modules("torchbench_core", "evaluation"))
    assert graph["evaluation.plain_suite_counts"] >= {"evaluation.alert_validation"}
    assert [c for c in _circles(graph) if frozenset(c) not in KNOWN] == []
