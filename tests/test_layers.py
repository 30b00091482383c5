"""The package's folders are its layers: each module imports only from its own folder or the layers below,
and the modules of one layer do not import each other in a circle.

The order is the one docs/ARCHITECTURE.md draws. Layers of the same rank (corpora and metrics;
agreement and inference; training, integrations and service) are siblings: neither imports the other.
`kold_span/__init__.py` is the facade over all of them.

What counts as an import, read from the syntax tree of each file: `import kold_span.x`, `from kold_span.x
import y`, relative imports (`from . import y`, `from ..models import x`), and `importlib.import_module(...)`
or `__import__(...)` calls; at any depth (in functions, under `if TYPE_CHECKING:`). A call whose module
name is computed (a registry's lazy loading) is taken to import every package module that a string in the
same file names. For cycles every import counts, TYPE_CHECKING-guarded and function-level ones too: a cycle
a type checker or a late import hides is still one a reader must untangle. Two exceptions: computed-name
calls (a registry that loads the modules that register into it), and the implicit import of a package's
`__init__` when one of its modules is imported (a package importing its own modules is no cycle).
"""
import ast
import functools
from pathlib import Path
from typing import NamedTuple, Optional

import pytest

from conftest import PACKAGE

RANKS = {"errors": 0, "config": 1, "data": 2, "corpora": 3, "metrics": 3, "text": 4, "models": 5, "evaluation": 6,
         "agreement": 7, "inference": 7, "training": 8, "integrations": 8, "service": 8, "experiments": 9,
         "cli": 10}
DYNAMIC = {"import_module", "__import__"}


class Import(NamedTuple):
    line: int
    module: str
    computed: bool = False  # named by a string of the file, for a call whose argument is not a literal


@functools.cache
def modules_of(package: Path) -> dict[str, Path]:
    """Every module of a package by dotted name (a folder's `__init__.py` by the folder's name)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def module_name(path: Path, package: Path) -> str:
    """The dotted name of one file of the package."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> Optional[str]:
    """The layer of a dotted module name inside the package ('kold_span.models.tasks' → 'models')."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _relative(path: Path, package: Path, module: Optional[str], level: int) -> Optional[str]:
    """The absolute name of `from <level dots><module> import ...` written in `path`."""
    own = module_name(path, package).split(".")
    base = own if path.name == "__init__.py" else own[:-1]
    if level > 1:
        base = base[:-(level - 1)]
    if not base:
        return None
    return ".".join(base + ([module] if module else []))


def _dynamic_target(call: ast.Call, path: Path, package: Path) -> Optional[str]:
    """The module an `import_module` / `__import__` call names with literals; None if it is computed."""
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        return None
    name = call.args[0].value
    if not name.startswith("."):
        return name
    anchor = next((k.value for k in call.keywords if k.arg == "package"), None)
    if not (isinstance(anchor, ast.Constant) and isinstance(anchor.value, str)):
        return _relative(path, package, name.lstrip(".") or None, len(name) - len(name.lstrip(".")))
    level = len(name) - len(name.lstrip("."))
    base = anchor.value.split(".")[:len(anchor.value.split(".")) - (level - 1)]
    return ".".join(base + ([name.lstrip(".")] if name.lstrip(".") else []))


def _is_dynamic_import(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id in DYNAMIC) or (isinstance(func, ast.Attribute)
                                                                  and func.attr in DYNAMIC)


def imported_modules(path: Path, package: Path = PACKAGE) -> list[Import]:
    """Every package module a file imports, at any depth, with its line (see the module docstring)."""
    known, root = modules_of(package), package.name
    inside = lambda name: name == root or name.startswith(root + ".")  # noqa: E731
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, a.name) for a in node.names if inside(a.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module if node.level == 0 else _relative(path, package, node.module, node.level)
            if base is None or not inside(base):
                continue
            for alias in node.names:  # `from kold_span.models import tasks` imports the module tasks
                found.append(Import(node.lineno, f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base))
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func):
            target = _dynamic_target(node, path, package)
            if target is not None:
                if inside(target):
                    found.append(Import(node.lineno, target))
                continue
            found += [Import(node.lineno, s.value, computed=True) for s in ast.walk(tree)
                      if isinstance(s, ast.Constant) and isinstance(s.value, str) and s.value in known]
    return found


def violations(path: Path, package: Path = PACKAGE) -> list[str]:
    """The imports of one module that reach a layer above it, or a sibling layer of the same rank."""
    own = path.relative_to(package).parts[0].removesuffix(".py")
    problems = []
    for line, module, _ in imported_modules(path, package):
        other = layer_of(module)
        if other == own:
            continue
        if other not in RANKS:
            problems.append(f"{path.relative_to(package)}:{line} imports {module}, which is in no layer")
        elif RANKS[other] >= RANKS[own]:
            problems.append(f"{path.relative_to(package)}:{line}: layer {own} imports {module} (layer {other})")
    return problems


def import_graph(layer: str, package: Path = PACKAGE) -> dict[str, set[str]]:
    """The imports between the modules of one layer: module → the modules of the layer it imports."""
    modules = {name: path for name, path in modules_of(package).items() if layer_of(name) == layer}
    return {name: {i.module for i in imported_modules(path, package)
                   if i.module in modules and i.module != name and not i.computed}
            for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other in a circle (its first module repeated
    at the end), found as the strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(set(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(_cycle_in(graph, component) for component in components)


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself (breadth first)."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in sorted(graph[node] & component):
            if other == start:
                return paths[node] + [start]
            if other not in paths:
                paths[other] = paths[node] + [other]
                queue.append(other)
    raise AssertionError(f"no cycle through {start}")  # a strongly connected component always has one


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py")


def test_every_folder_and_top_module_is_a_known_layer():
    names = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in MODULES}
    assert names == set(RANKS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path):
    assert violations(path) == []


@pytest.mark.parametrize("layer", sorted(RANKS))
def test_no_modules_of_a_layer_import_each_other_in_a_circle(layer):
    assert [" → ".join(cycle) for cycle in cycles(import_graph(layer))] == []


def write(package: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")


def test_the_check_catches_every_form_of_an_upward_or_sibling_import(tmp_path):
    package = tmp_path / "kold_span"
    write(package, {
        "__init__.py": "", "data/__init__.py": "", "models/__init__.py": "", "models/tasks.py": "",
        "inference/__init__.py": "", "inference/predictor.py": "", "agreement/__init__.py": "",
        "data/absolute.py": "def f():\n    from kold_span.inference.predictor import Predictor\n",
        "data/plain.py": "import kold_span.inference.predictor\n",
        "data/relative.py": "from ..models import tasks\nfrom ..inference.predictor import Predictor\n",
        "data/dynamic.py": "import importlib\nimportlib.import_module('kold_span.models.tasks')\n"
                           "__import__('kold_span.inference')\n",
        "data/anchored.py": "from importlib import import_module\n"
                            "import_module('.predictor', package='kold_span.inference')\n",
        "data/computed.py": "import importlib\nHOMES = {'P': 'kold_span.inference.predictor', 'x': 'kold_span.nope'}\n"
                            "def get(name):\n    return importlib.import_module(HOMES[name])\n",
        "agreement/sibling.py": "from kold_span import inference\n",
        "agreement/facade.py": "from kold_span import Example\n",
        "models/fine.py": "from . import tasks\nfrom .tasks import x\nfrom ..data import plain\n"
                          "import importlib\nimportlib.import_module('json')\n",
    })
    found = {path.name: violations(path, package) for path in package.rglob("*.py")}
    assert found["absolute.py"] == ["data/absolute.py:2: layer data imports kold_span.inference.predictor "
                                    "(layer inference)"]
    assert found["plain.py"] == ["data/plain.py:1: layer data imports kold_span.inference.predictor (layer inference)"]
    assert found["relative.py"] == ["data/relative.py:1: layer data imports kold_span.models.tasks (layer models)",
                                    "data/relative.py:2: layer data imports kold_span.inference.predictor "
                                    "(layer inference)"]
    assert found["dynamic.py"] == ["data/dynamic.py:2: layer data imports kold_span.models.tasks (layer models)",
                                   "data/dynamic.py:3: layer data imports kold_span.inference (layer inference)"]
    assert found["anchored.py"] == ["data/anchored.py:2: layer data imports kold_span.inference.predictor "
                                    "(layer inference)"]
    assert found["computed.py"] == ["data/computed.py:4: layer data imports kold_span.inference.predictor "
                                    "(layer inference)"]
    assert found["sibling.py"] == ["agreement/sibling.py:1: layer agreement imports kold_span.inference "
                                   "(layer inference)"]
    assert found["facade.py"] == ["agreement/facade.py:1 imports kold_span, which is in no layer"]
    assert found["fine.py"] == [] and found["tasks.py"] == []


def test_the_check_finds_cycles_through_type_checking_function_level_and_relative_imports(tmp_path):
    package = tmp_path / "kold_span"
    write(package, {
        "__init__.py": "", "models/__init__.py": "", "models/kinds/__init__.py": "from . import span\n",
        "models/tasks.py": "from kold_span.models.kinds import span\n",
        "models/kinds/span.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    from ..decoding import Merged\n",
        "models/decoding.py": "def f():\n    from .tasks import Task\n",
        "models/leaf.py": "from kold_span.models import tasks\n",
        "data/__init__.py": "", "data/a.py": "import importlib\nimportlib.import_module('kold_span.data.b')\n",
        "data/b.py": "from . import a\n",
        "text/__init__.py": "import importlib\nNAMES = ['kold_span.text.reader']\n"
                            "def load(i):\n    importlib.import_module(NAMES[i])\n",
        "text/reader.py": "from kold_span.text import load\n",
    })
    assert cycles(import_graph("models", package)) == [["kold_span.models.decoding", "kold_span.models.tasks",
                                                        "kold_span.models.kinds.span", "kold_span.models.decoding"]]
    assert cycles(import_graph("data", package)) == [["kold_span.data.a", "kold_span.data.b", "kold_span.data.a"]]
    assert cycles(import_graph("text", package)) == []  # a registry loading its members by computed name


def test_cycles_lists_each_circle_once_and_leaves_chains_alone():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"], ["e", "f", "e"]]


def error_classes_outside(package: Path = PACKAGE) -> list[str]:
    """Classes outside errors.py that derive, at any remove, from one of errors.py's (a `KoldSpanError` kind
    belongs there)."""
    home = package / "errors.py"
    classes = [(path, node) for path in sorted(package.rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.ClassDef)]
    kinds = {node.name for path, node in classes if path == home}
    grown = True
    while grown:  # a subclass of a subclass counts too
        derived = {node.name for _, node in classes
                   if any((b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)) in kinds for b in node.bases)}
        grown = not derived <= kinds
        kinds |= derived
    return [f"{path.relative_to(package)}:{node.lineno}: {node.name}" for path, node in classes
            if path != home and node.name in kinds]


def test_every_kold_span_error_is_defined_in_errors_py(tmp_path):
    assert error_classes_outside() == []
    write(tmp_path / "kold_span", {
        "errors.py": "class KoldSpanError(Exception): pass\nclass DataError(KoldSpanError): pass\n",
        "service/queue.py": "from kold_span import errors\nclass Full(errors.KoldSpanError): pass\n"
                            "class Fine(ValueError): pass\n",
        "data/reader.py": "from kold_span.errors import DataError\nclass Bad(DataError): pass\n"
                          "from kold_span.service.queue import Full\nclass Fuller(Full): pass\n"})
    assert error_classes_outside(tmp_path / "kold_span") == ["data/reader.py:2: Bad", "data/reader.py:4: Fuller",
                                                           "service/queue.py:2: Full"]
