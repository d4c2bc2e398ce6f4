"""The package's shape: its layers import one way, with no cycle (imports
inside functions counted), and no module grows past 500 lines.

docs/architecture.md draws these layers; a new module must be placed in one.
"""
import ast
import fnmatch
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).parents[1] / "clayout"

#: Lowest first. A module may import its own layer and those below it.
LAYERS = (
    ("descriptors and types", ("errors", "dtypes", "tags", "extra", "dim_values",
                               "md_addressing", "md_transforms", "memory_desc", "attr",
                               "problem", "verbose", "disk_cache")),
    ("plans and rendering", ("gpu", "gpu.families", "gpu.profile", "gpu.tile*", "gpu.plan*", "gpu.shapes",
                             "gpu.render*", "gpu.templates", "gpu.runtime_plan", "gpu.access*", "host", "host.*",
                             "compensation", "tuning_table")),
    ("engines and memories", ("backends", "backends.*", "engine", "memory", "memory_io", "dlpack",
                              "gpu.build",
                              "gpu.cache", "gpu.binaries", "gpu.events", "gpu.spirv", "gpu.host_fallback",
                              "gpu.compensation")),
    ("primitives", ("primitives", "arguments", "implementations", "cross_engine", "quantize",
                    "quantize_route",
                    "execute_values", "tiers", "ahead")),
    ("tools", ("", "__main__", "info", "tune", "explain", "benchdnn", "benchdnn.*")),
)
MAX_LINES = 500


def _modules() -> dict[str, pathlib.Path]:
    """{name relative to the package ("" for clayout itself): path}."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its body."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                base = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module + ".").startswith("clayout."):
                base = node.module.removeprefix("clayout").lstrip(".")
            else:
                continue
            for alias in node.names:  # `from . import tags` imports a module
                child = f"{base}.{alias.name}".lstrip(".")
                found.add(child if child in MODULES else base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.name + ".").startswith("clayout."):
                    found.add(alias.name.removeprefix("clayout").lstrip("."))
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> int:
    for index, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            return index
    raise AssertionError(f"clayout.{name} is in no layer of tests/test_structure.py: place it")


def test_the_import_reader_sees_function_level_imports():
    # explain imports gpu.access inside a function only.
    assert "gpu.access" in GRAPH["explain"]
    assert "memory_desc" in GRAPH["memory"] and "engine" in GRAPH["memory"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_imports_only_its_layer_and_below(name):
    mine = _layer(name)
    upward = sorted(other for other in GRAPH[name] if _layer(other) > mine)
    assert not upward, (f"clayout.{name} ({LAYERS[mine][0]}) imports "
                        + ", ".join(f"{m} ({LAYERS[_layer(m)][0]})" for m in upward))


def test_no_import_cycle():
    done, stack, on_stack = set(), [], set()

    def visit(name):
        stack.append(name)
        on_stack.add(name)
        for other in sorted(GRAPH[name]):
            if other in on_stack:
                cycle = stack[stack.index(other):] + [other]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if other not in done:
                visit(other)
        stack.pop()
        on_stack.discard(name)
        done.add(name)

    for name in sorted(GRAPH):
        if name not in done:
            visit(name)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_short(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"clayout/{MODULES[name].relative_to(PACKAGE)}: {lines} lines"
