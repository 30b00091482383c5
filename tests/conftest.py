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
    """The environment for a child Python process: this checkout first on its path, the caller's kept after it."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def untrained_model(directory: Path, snap: str = "none", max_length: int = 32) -> Path:
    """An untrained model directory, saved in seconds: a true/false task "OFF" and a span task "OFF_span" over a
    1-layer scratch encoder whose tokenizer learnt four Korean comments, with seeded weights. Its predictions mean
    nothing; tests of the plumbing around a model (files, resuming, errors, the pipeline) need no more."""
    from kold_span.config.schema import ScratchEncoderConfig
    from kold_span.inference.predictor import Predictor
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
    return Predictor(model, tokenizer, tasks, max_length=max_length, stride=8, snap=snap).save_pretrained(directory)
