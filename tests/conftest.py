"""Paths and helpers shared by the tests, each defined once.

Every path is absolute, built from this file, so the tests run from any working directory
(`cd /tmp && python -m pytest /path/to/kold-span/tests`). Test modules import them:
`from conftest import FIXTURE, TINY`.

Tests marked `slow` train a model, run DDP or run the package in other processes; `make test-quick`
(`pytest -m "not slow"`) leaves them out, `make test` runs everything.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the checkout
PACKAGE = ROOT / "kold_span"
CONFIGS = ROOT / "configs"
DEMO = CONFIGS / "experiment" / "demo.yaml"  # `make demo`'s experiment, on the made-up sample
BENCH = ROOT / "bench"
SAMPLE = ROOT / "data" / "sample"  # the made-up KOLD-format sample, its generator and word files
FIXTURES = ROOT / "tests" / "fixtures"
FIXTURE = FIXTURES / "kold_small.json"  # 26 hand-written KOLD records, written by fixtures/make_fixtures.py
BAD_FIXTURE = FIXTURES / "kold_bad.json"  # 2 malformed KOLD records
TINY = FIXTURES / "configs" / "tiny.yaml"  # a tiny joint model, trained in seconds on FIXTURE
CORPORA = FIXTURES / "corpora"  # invented files in the layout of each public corpus
# The real public corpora (never committed): $KOLD_SPAN_DATA, else the `shared/data` beside the checkout.
SHARED_DATA = Path(os.environ.get("KOLD_SPAN_DATA") or ROOT.parent / "shared" / "data")


def shared_data(relative: str) -> Path:
    """A file or directory of the real corpora under SHARED_DATA, or skip the calling test."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} not found (set KOLD_SPAN_DATA)")
    return path


def child_env() -> dict[str, str]:
    """The environment for a child Python process: this checkout first on its path, the caller's kept after it.

    UTF-8 mode, so that a child prints Korean text the same under any locale (LANG=C, a Latin-1 one).
    """
    return {**os.environ, "PYTHONUTF8": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def untrained_model(directory: Path, snap: str = "none", max_length: int = 32) -> Path:
    """An untrained model directory, saved in seconds: a true/false task "OFF" and a span task "OFF_span" over a
    1-layer scratch encoder whose tokenizer learnt four Korean comments, with seeded weights. Its predictions mean
    nothing; tests of the plumbing around a model (files, resuming, errors, the pipeline) need no more."""
    from kold_span.config.schema import ScratchEncoderConfig
    from kold_span.inference.predictor import Predictor, PredictorSettings
    from kold_span.models.backbones import scratch_encoder, train_tokenizer
    from kold_span.models.network import MultiTaskModel
    from kold_span.models.tasks import Task

    import torch

    texts = ["이 쓰레기 같은 정치인들", "좋은 기사 감사합니다", "너 진짜 한심하다", "오늘 경기 정말 재밌었어요"] * 5
    scratch = ScratchEncoderConfig(vocab_size=200, hidden_size=32, layers=1, heads=2, intermediate_size=64,
                                   max_position=64)
    tokenizer = train_tokenizer(texts, scratch)
    tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true")), Task("OFF_span", "span", "OFF")]
    torch.manual_seed(0)
    model = MultiTaskModel(scratch_encoder(scratch, len(tokenizer), tokenizer.pad_token_id), tasks)
    settings = PredictorSettings(max_length=max_length, stride=8, snap=snap)
    return Predictor(model, tokenizer, tasks, settings).save_pretrained(directory)


# How far a probability or span score recorded on one machine may move on another: float kernels differ between
# CPUs (AVX2, AVX-512, AVX-512 VNNI/BF16) and between torch's dispatch levels, in the sixth decimal (seen: 1e-6);
# predictions are written with six. Everything else in a prediction (ids, keys, labels, span offsets, types and
# texts) is compared exactly. docs/PREDICTING.md states the same tolerance to users.
PROB_ATOL = 1e-4


def json_difference(actual, expected, where: str = "", atol: float = PROB_ATOL):
    """Where two parsed JSON values differ (a message), or None: floats within `atol`, all else exact, keys in order.

    >>> json_difference({"a": [1, 0.5]}, {"a": [1, 0.50004]}) is None
    True
    >>> json_difference({"a": 0.5}, {"a": 0.6})
    'a: 0.5 != 0.6 (more than 0.0001 apart)'
    """
    name = where or "(the row)"
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return None if abs(actual - expected) <= atol else f"{name}: {actual!r} != {expected!r} (more than {atol} apart)"
    if type(actual) is not type(expected):
        return f"{name}: {actual!r} != {expected!r}"
    if isinstance(expected, dict):
        if list(actual) != list(expected):
            return f"{name}: keys {list(actual)} != {list(expected)}"
        found = (json_difference(actual[k], expected[k], f"{where}.{k}".lstrip("."), atol) for k in expected)
        return next(filter(None, found), None)
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return f"{name}: {len(actual)} items != {len(expected)}"
        found = (json_difference(a, e, f"{where}[{i}]", atol) for i, (a, e) in enumerate(zip(actual, expected)))
        return next(filter(None, found), None)
    return None if actual == expected else f"{name}: {actual!r} != {expected!r}"


def assert_same_predictions(actual: Path, expected: Path, atol: float = PROB_ATOL) -> None:
    """Two JSONL prediction files agree row by row: exactly but for floats, which may differ by `atol`."""
    import json

    got = actual.read_text(encoding="utf-8").splitlines()
    want = expected.read_text(encoding="utf-8").splitlines()
    assert len(got) == len(want), f"{actual}: {len(got)} rows, {expected} has {len(want)}"
    for number, (line, reference) in enumerate(zip(got, want), 1):
        difference = json_difference(json.loads(line), json.loads(reference), atol=atol)
        assert difference is None, f"{actual}:{number} against {expected}: {difference}"
