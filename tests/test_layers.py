"""The house's rules, read from the imports: the layers point inward, nothing is circular, and the
product never imports the lab or the benchmarks.

Every ``import`` and ``from ... import`` statement of every module of the ``evomem`` package is
read (with ``ast``, so an import inside a function counts as much as one at the top), and a test
fails naming the module and the line that breaks a rule. The layers, inner first:

- ``domain``: plain Python, importing nothing of the package outside it, not even for type
  checking (the linkers' ports are defined with them: ``domain/linkers/contracts.py``).
- ``app``: the application (ports, services, policies) over the domain; process plumbing (``ops``:
  the metrics registry) but no adapter, entry point, setting or composition.
- ``adapters`` (outbound) and ``security``: over app and domain (security also reads the settings
  object it applies: ``security/configure.py``), never an entry point or the composition root.
- ``entrypoints`` (inbound): anything but the composition root, which only the commands call.
- ``bootstrap``: the composition root, the one place that builds wirings: it may import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "services" / "evomem"
GENERATED = PACKAGE / "v1"


def product_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if GENERATED not in p.parents)


def imports(path: Path, *, typing_only: bool = True) -> list[tuple[int, str]]:
    """(line, imported module) for every import in ``path``; ``from a import b`` counts ``a.b`` too.
    ``typing_only=False`` leaves out the imports under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skipped: set[int] = set()
    if not typing_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                skipped |= {id(n) for n in ast.walk(node)}
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return out


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def layer_of(module: str) -> str | None:
    """``evomem.adapters.sqlite.store`` -> ``adapters``; None outside the package or for the package's
    face (``evomem.__version__``)."""
    parts = module.split(".")
    if parts[0] != "evomem" or len(parts) < 2 or parts[1].startswith("__"):
        return None
    return parts[1]


#: What each layer may import of the package (its own layer always).
ALLOWED = {
    "domain": set(),
    "app": {"domain", "ops"},
    "adapters": {"domain", "app", "ops", "security", "v1"},
    "security": {"domain", "app", "ops", "settings"},
    "ops": {"settings"},
    "settings": {"domain"},
    "entrypoints": {"domain", "app", "adapters", "ops", "security", "settings", "v1", "bootstrap"},
    "bootstrap": {"domain", "app", "adapters", "entrypoints", "ops", "security", "settings", "v1"},
}
#: The commands: the only entry points that call the composition root.
COMMANDS = ("evomem.entrypoints.cli.", "evomem.entrypoints.mcp.gateway")


def test_the_product_has_modules_to_check() -> None:
    assert len(product_modules()) > 40


@pytest.mark.parametrize("outside", ["lab", "bench", "tests"])
def test_the_product_never_imports_the_lab_or_the_benchmarks(outside: str) -> None:
    broken = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in product_modules()
        for line, name in imports(path)
        if name == outside or name.startswith(outside + ".")
    ]
    assert not broken, "\n".join(broken)


def test_every_layer_imports_only_the_layers_inside_it() -> None:
    broken = []
    for path in product_modules():
        module = module_of(path)
        own = layer_of(module)
        if own not in ALLOWED:
            continue  # the package's face (evomem/__init__.py)
        for line, name in imports(path, typing_only=False):
            other = layer_of(name)
            if other is None or other == own or (other in ALLOWED[own] and other != "bootstrap"):
                continue
            if own == "entrypoints" and other == "bootstrap" and module.startswith(COMMANDS):
                continue
            broken.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {name} ({other})")
    assert not broken, "\n".join(broken)


def test_the_domain_imports_nothing_outside_it_even_for_type_checking() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in product_modules()
        if layer_of(module_of(path)) == "domain"
        for line, name in imports(path)
        if layer_of(name) not in (None, "domain")
    ]
    assert not outside, "\n".join(outside)


def test_no_module_reads_the_environment_but_the_settings() -> None:
    readers = [
        str(path.relative_to(ROOT))
        for path in product_modules()
        if path.name != "settings.py"
        and ("os.environ" in path.read_text(encoding="utf-8") or "getenv" in path.read_text(encoding="utf-8"))
    ]
    assert not readers


def test_no_import_circle_between_modules() -> None:
    graph: dict[str, set[str]] = {}
    modules = {module_of(p): p for p in product_modules()}
    for module, path in modules.items():
        graph[module] = {name for _, name in imports(path, typing_only=False) if name in modules and name != module}
    circles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join([*trail, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    assert not circles, "\n".join(sorted(set(circles)))


def test_no_product_file_is_huge() -> None:
    big = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in product_modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600
    ]
    assert not big, "\n".join(big)


def test_the_rule_catches_a_module_that_breaks_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from lab import train_linker\n    import bench.quality\n", encoding="utf-8")
    assert [name for _, name in imports(bad)] == ["lab", "lab.train_linker", "bench.quality"]
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evomem.app.ports import Store\n")
    assert "evomem.app.ports" in [n for _, n in imports(typed)]
    assert "evomem.app.ports" not in [n for _, n in imports(typed, typing_only=False)]
