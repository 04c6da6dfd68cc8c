"""The house's rules, read from the imports: the product never imports the lab or the benchmarks.

Every ``import`` and ``from ... import`` statement of every module of the ``evomem`` package is
read (with ``ast``, so an import inside a function counts as much as one at the top), and a test
fails naming the module and the line that breaks a rule.
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


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import in ``path``; ``from a import b`` counts ``a.b`` too."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return out


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


def test_the_rule_catches_a_module_that_breaks_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from lab import train_linker\n    import bench.quality\n", encoding="utf-8")
    assert [name for _, name in imports(bad)] == ["lab", "lab.train_linker", "bench.quality"]
