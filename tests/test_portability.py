"""Tests pass on any x86-64 CPU: recorded predictions agree under other float kernels, to the stated tolerance.

Machines of one kind differ in their CPUs (AVX2 only, AVX-512 with VNNI and BF16), and torch and oneDNN pick their
float kernels by what the CPU has. A prediction file recorded on one machine is therefore compared exactly in what
must be exact (ids, keys, labels, spans) and to `PROB_ATOL` in its floats (`assert_same_predictions`); this file
runs the recorded fixture under lower kernel levels than the machine's own, in other processes, to show the
tolerance holds there too.
"""
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, PROB_ATOL, assert_same_predictions, child_env, json_difference

MODEL_V1 = FIXTURES / "model_v1"


def lower_onednn_isa(flags: str) -> str:
    """A oneDNN instruction-set cap below what a CPU with these /proc/cpuinfo `flags` has.

    >>> lower_onednn_isa("sse4_1 avx avx2 avx512f avx512_vnni"), lower_onednn_isa("sse4_1 avx avx2")
    ('AVX2', 'SSE41')
    """
    return "AVX2" if "avx512f" in flags.split() else "SSE41"


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    return next((line.partition(":")[2] for line in text.splitlines() if line.startswith("flags")), "")


def test_json_difference_is_exact_but_for_floats():
    row = {"id": "1", "labels": {"OFF": {"label": True, "probs": {"false": 0.25, "true": 0.75}}},
           "spans": [{"type": "OFF", "start": 3, "end": 9, "score": 0.93}]}
    moved = {"id": "1", "labels": {"OFF": {"label": True, "probs": {"false": 0.25009, "true": 0.74991}}},
             "spans": [{"type": "OFF", "start": 3, "end": 9, "score": 0.93005}]}
    assert json_difference(moved, row) is None
    assert json_difference({**moved, "id": 1}, row) == "id: 1 != '1'"
    too_far = {**moved, "spans": [{"type": "OFF", "start": 3, "end": 9, "score": 0.9302}]}
    assert json_difference(too_far, row) == f"spans[0].score: 0.9302 != 0.93 (more than {PROB_ATOL} apart)"
    shifted = {**moved, "spans": [{"type": "OFF", "start": 4, "end": 9, "score": 0.93}]}
    assert json_difference(shifted, row) == "spans[0].start: 4 != 3"
    flipped = {**moved, "labels": {"OFF": {"label": False, "probs": {"false": 0.25, "true": 0.75}}}}
    assert json_difference(flipped, row) == "labels.OFF.label: False != True"
    reordered = {"labels": row["labels"], "id": "1", "spans": row["spans"]}
    assert json_difference(reordered, row) == "(the row): keys ['labels', 'id', 'spans'] != ['id', 'labels', 'spans']"
    assert json_difference({**row, "spans": []}, row) == "spans: 0 items != 1"
    assert json_difference(1.0, True) == "(the row): 1.0 != True"  # a bool is never a float within tolerance


def test_assert_same_predictions_names_the_file_and_row(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"id": "x", "p": 0.5}\n{"id": "y", "p": 0.5}\n', encoding="utf-8")
    b.write_text('{"id": "x", "p": 0.50001}\n{"id": "y", "p": 0.6}\n', encoding="utf-8")
    with pytest.raises(AssertionError, match=r"a\.jsonl:2 against .*b\.jsonl: p: 0\.5 != 0\.6"):
        assert_same_predictions(a, b)
    b.write_text('{"id": "x", "p": 0.5}\n', encoding="utf-8")
    with pytest.raises(AssertionError, match="2 rows"):
        assert_same_predictions(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["aten-default", "onednn-lower"])
def test_the_recorded_fixture_predicts_the_same_under_other_kernels(kernels, tmp_path):
    env = child_env()
    if kernels == "aten-default":
        env["ATEN_CPU_CAPABILITY"] = "default"  # torch's own kernels without AVX2 or AVX-512
    else:
        env["ONEDNN_MAX_CPU_ISA"] = lower_onednn_isa(cpu_flags())
    out = tmp_path / "predictions.jsonl"
    proc = subprocess.run([sys.executable, "-m", "kold_span.cli", "predict", "--model", str(MODEL_V1 / "model"),
                           "--input", str(MODEL_V1 / "inputs.jsonl"), "--output", str(out), "--quiet"],
                          capture_output=True, encoding="utf-8", timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_predictions(out, MODEL_V1 / "predictions.jsonl")
