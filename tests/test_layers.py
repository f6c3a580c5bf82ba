"""The package's layers: every import of every module of mcpgen/ (module-level, inside functions and
under TYPE_CHECKING alike) points to its own layer or one below, and no import circle exists.

The order is declared once, bottom first. A module's layer is that of its top-level name under
mcpgen/ (`mcpgen.load.columns` is in `load`); the package itself (`mcpgen/__init__.py`, the public
API) is at the top, with the command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mcpgen"

LAYERS: list[tuple[str, ...]] = [
    (
        "version",
        "errors",
        "limits",
        "text",
        "identity",
        "vendored",
        "keys",
        "children",
    ),  # foundation: imports nothing of mcpgen but itself
    ("spec",),  # what analysts write: spec files and mcpgen.yaml
    ("redaction", "logs", "cachefile"),  # secrets kept from messages, the call log, the cache file
    ("sql", "templates", "checks"),  # reading SQL and templates, the static checks of single constructs
    ("engines",),  # where queries run
    ("load",),  # reading a project, and describing its queries
    ("answer",),  # what a call answers
    ("serve",),  # serving over MCP
    ("http",),  # serving over HTTP
    ("commands",),  # validate, test, preview, the terminal
    ("cli", "__main__", "spark_cluster", "__init__"),  # the entry points and the public API
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["mcpgen", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The mcpgen modules `name` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "mcpgen"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.split(".")[0] != "mcpgen":
                continue
            for alias in node.names:  # `from . import logs` imports a module, `from .text import plural` a name
                out.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return out - {name}


def layer_of(name: str) -> int:
    top = name.split(".")[1] if "." in name else "__init__"
    return LAYER[top]


MODULES = modules()
GRAPH = {name: imports(name, path, set(MODULES)) for name, path in MODULES.items()}


def test_every_module_has_a_declared_layer():
    tops = {name.split(".")[1] if "." in name else "__init__" for name in GRAPH}
    assert tops - set(LAYER) == set(), "add the new top-level module or package to LAYERS"
    assert set(LAYER) - tops == set(), "LAYERS names something mcpgen/ no longer has"


def test_no_import_runs_up_a_layer():
    upward = sorted(
        f"{name} ({LAYERS[layer_of(name)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for name, targets in GRAPH.items()
        for target in targets
        if layer_of(target) > layer_of(name)
    )
    assert upward == []


def test_no_import_circle():
    # Tarjan's strongly connected components: any component of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in GRAPH.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    assert circles == []


def test_serving_never_imports_a_command():
    serving = {name: targets for name, targets in GRAPH.items() if name.startswith(("mcpgen.serve", "mcpgen.http"))}
    assert serving and not any(t.startswith("mcpgen.commands") for targets in serving.values() for t in targets)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from ..text import plural\nfrom .. import logs\nfrom .specs import LoadedSpec\n",
            {"mcpgen.text", "mcpgen.logs", "mcpgen.load.specs"},
        ),
        ("def f():\n    from ..cli import main\n", {"mcpgen.cli"}),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mcpgen.load.specs import LoadedSpec\n",
            {"mcpgen.load.specs"},
        ),
    ],
)
def test_the_checker_sees_every_kind_of_import(tmp_path, source, expected):
    """Module-level, function-level and TYPE_CHECKING imports, relative and absolute, all count."""
    path = tmp_path / "columns.py"
    path.write_text(source, encoding="utf-8")
    assert imports("mcpgen.load.columns", path, set(modules())) == expected
