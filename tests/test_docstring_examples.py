"""The examples in the package's docstrings are run, so they cannot drift from the code.

Every module shows at least one (on its main public function, or a small helper where
everything else needs a trained model); a module without any fails, unless EXEMPT says why.
"""
import doctest
import importlib
import inspect
import pkgutil
import sys
import types

import pytest

import kold_span

from conftest import BENCH

MODULES = ["kold_span"] + sorted(m.name for m in pkgutil.walk_packages(kold_span.__path__, "kold_span."))
LAYER = "a layer's package: its docstring and re-exports; the examples are in its modules"
EXEMPT = {
    "kold_span.agreement": LAYER,
    "kold_span.cli": LAYER,
    "kold_span.cli.__main__": "`python -m kold_span.cli` only calls cli.main.main, whose docstring has the example",
    "kold_span.config": LAYER,
    "kold_span.data": LAYER,
    "kold_span.evaluation": LAYER,
    "kold_span.experiments": LAYER,
    "kold_span.inference": LAYER,
    "kold_span.integrations": LAYER,
    "kold_span.service": LAYER,
    "kold_span.models": LAYER,
    "kold_span.text": LAYER,
}


def example_problems(module: types.ModuleType, exempt: bool = False) -> list[str]:
    """What is wrong with a module's docstring examples: failures, or none at all (unless exempt)."""
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    problems = []
    if result.failed:
        problems.append(f"{result.failed} of {result.attempted} docstring examples in {module.__name__} failed")
    if result.attempted == 0 and not exempt:
        problems.append(f"{module.__name__} has no docstring example: add an `Example:` with `>>>` lines to its "
                        "main public function (or, if everything needs a trained model, to a small helper)")
    return problems


def own_definitions(module: types.ModuleType) -> list[str]:
    """The functions and classes a module defines itself (not the ones it imports)."""
    return [name for name, value in vars(module).items()
            if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert example_problems(importlib.import_module(name), exempt=name in EXEMPT) == []


@pytest.mark.parametrize("name", sorted(EXEMPT))
def test_an_exempt_module_has_nothing_of_its_own_to_show(name):
    assert name in MODULES
    assert own_definitions(importlib.import_module(name)) == []


def test_a_module_without_an_example_fails():
    def toy_module(source: str) -> types.ModuleType:
        module = types.ModuleType("toy")
        exec(source, module.__dict__)
        return module

    without = toy_module('def double(x):\n    """Twice x."""\n    return 2 * x\n')
    good = toy_module('def double(x):\n    """Twice x.\n\n    >>> double(2)\n    4\n    """\n    return 2 * x\n')
    wrong = toy_module('def double(x):\n    """Twice x.\n\n    >>> double(2)\n    5\n    """\n    return 2 * x\n')
    assert example_problems(without) == ["toy has no docstring example: add an `Example:` with `>>>` lines to its "
                                         "main public function (or, if everything needs a trained model, to a small "
                                         "helper)"]
    assert example_problems(without, exempt=True) == []
    assert example_problems(good) == []
    assert example_problems(wrong, exempt=True) == ["1 of 1 docstring examples in toy failed"]
    assert own_definitions(good) == ["double"] and own_definitions(importlib.import_module("kold_span.cli")) == []


@pytest.mark.parametrize("name", ["batching", "cross_variant", "decoding_probes", "memory", "quality_corpora", "report",
                                  "serve_load", "spacy_pipe", "throughput", "ray_scale", "int8_variants",
                                  "kold_snapping", "quality", "functional"])
def test_bench_script_examples(name):
    sys.path.insert(0, str(BENCH))
    module = pytest.importorskip(name)
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
