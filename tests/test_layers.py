"""The package's folders are its layers: each module imports only from its own folder or the layers below.

The order is the one docs/ARCHITECTURE.md draws. Layers of the same rank (agreement and inference;
training, integrations and service) are siblings: neither imports the other. `kold_span/__init__.py` is the
facade over all of them.
"""
import ast
from pathlib import Path

import pytest

from conftest import PACKAGE

RANKS = {"errors": 0, "config": 1, "data": 2, "corpora": 3, "text": 4, "models": 5, "evaluation": 6,
         "agreement": 7, "inference": 7, "training": 8, "integrations": 8, "service": 8, "experiments": 9,
         "cli": 10}


def layer_of(module: str) -> str:
    """The layer of a dotted module name inside the package ('kold_span.models.tasks' → 'models')."""
    return module.split(".")[1]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every `kold_span` module a file imports, at any depth (function-level imports too), with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("kold_span.")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "kold_span":
                found += [(node.lineno, f"kold_span.{a.name}") for a in node.names]
            elif node.module.startswith("kold_span."):
                found.append((node.lineno, node.module))
    return found


def violations(path: Path, package: Path = PACKAGE) -> list[str]:
    """The imports of one module that reach a layer above it, or a sibling layer of the same rank."""
    own = path.relative_to(package).parts[0].removesuffix(".py")
    problems = []
    for line, module in imported_modules(path):
        other = layer_of(module)
        if other == own:
            continue
        if other not in RANKS:
            problems.append(f"{path.name}:{line} imports {module}, which is in no layer")
        elif RANKS[other] >= RANKS[own]:
            problems.append(f"{path.relative_to(package)}:{line}: layer {own} imports {module} (layer {other})")
    return problems


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py")


def test_every_folder_and_top_module_is_a_known_layer():
    names = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in MODULES}
    assert names == set(RANKS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path):
    assert violations(path) == []


def test_the_check_catches_upward_and_sibling_imports(tmp_path):
    package = tmp_path / "kold_span"
    (package / "data").mkdir(parents=True)
    (package / "agreement").mkdir()
    low = package / "data" / "bad.py"
    low.write_text("def f():\n    from kold_span.inference.predictor import Predictor\n", encoding="utf-8")
    sibling = package / "agreement" / "bad.py"
    sibling.write_text("from kold_span import inference\n", encoding="utf-8")
    assert violations(low, package) == ["data/bad.py:2: layer data imports kold_span.inference.predictor "
                                        "(layer inference)"]
    assert violations(sibling, package) == ["agreement/bad.py:1: layer agreement imports kold_span.inference "
                                            "(layer inference)"]
