"""The examples in the package's docstrings are run, so they cannot drift from the code."""
import doctest
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

import kold_span

MODULES = sorted(m.name for m in pkgutil.walk_packages(kold_span.__path__, "kold_span."))
BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples in {name} failed"


@pytest.mark.parametrize("name", ["batching", "cross_variant", "decoding_probes", "report", "serve_load"])
def test_bench_script_examples(name):
    sys.path.insert(0, str(BENCH))
    module = pytest.importorskip(name)
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
