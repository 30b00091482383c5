"""Temperature scaling: hand-checked values, the order it keeps, its fit on dev and where it is applied."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.config.schema import ScratchEncoderConfig, TaskConfig
from kold_span.data.example import Example
from kold_span.metrics import expected_calibration_error
from kold_span.evaluation.task_scores import calibration_error
from kold_span.inference.predictor import Predictor
from kold_span.models.backbones import scratch_encoder
from kold_span.models.kinds import Decoding, MergedExample, apply_calibration
from kold_span.models.kinds.sequence import sequence_prediction
from kold_span.models.kinds.span import span_tags
from kold_span.models.network import MultiTaskModel
from kold_span.models.tasks import Task
from kold_span.models.temperature import fit_temperature, temper
from kold_span.training.calibration import Calibration, calibrate

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
GROUPS = Task("groups", "sequence", "groups", problem="multi", labels=("a", "b"))
SPAN = Task("OFF_span", "span", "OFF")


def test_temper_by_hand():
    # softmax: 0.2 : 0.8 is e^0 : e^{ln 4}; at T = 2 the logits halve, 1 : 2
    assert np.allclose(temper(np.array([0.2, 0.8]), 2.0, exclusive=True), [1 / 3, 2 / 3])
    # sigmoid: odds 4 → 4^(1/2) = 2 → 2/3; at T = 0.5, odds 16 → 16/17
    assert np.allclose(temper(np.array([0.8]), 2.0, exclusive=False), [2 / 3])
    assert np.allclose(temper(np.array([0.8]), 0.5, exclusive=False), [16 / 17])
    probs = np.array([[0.1, 0.3, 0.6]])
    assert temper(probs, 1.0, exclusive=True) is not None and np.allclose(temper(probs, 1.0, True), probs)


rows = st.lists(st.floats(0.001, 0.999), min_size=2, max_size=5)


@settings(max_examples=200, deadline=None)
@given(rows, st.floats(0.05, 20.0))
def test_temperature_changes_no_argmax_and_no_label_at_one_half(values, temperature):
    probs = np.array(values) / sum(values)
    tempered = temper(probs, temperature, exclusive=True)
    assert math.isclose(tempered.sum(), 1.0, rel_tol=1e-9)
    assert int(np.argmax(tempered)) == int(np.argmax(probs)) or math.isclose(
        probs[int(np.argmax(tempered))], probs.max(), rel_tol=1e-9)
    sigmoid = np.array(values)
    assert ((temper(sigmoid, temperature, exclusive=False) >= 0.5) == (sigmoid >= 0.5)).all() or any(
        math.isclose(v, 0.5) for v in values)
    # every decoded label: a single-label task's top label, a multi-label task's labels at 0.5, a span's tags
    off = Task("t", "sequence", "t", labels=tuple(f"l{i}" for i in range(len(values))))
    if len(set(np.round(probs, 9))) == len(probs):
        assert sequence_prediction(off, tempered)["label"] == sequence_prediction(off, probs)["label"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 1), st.floats(0.01, 1), st.floats(0.01, 1)), min_size=1, max_size=6),
       st.floats(0.05, 20.0))
def test_temperature_keeps_every_span_tag(values, temperature):
    probs = np.array(values) / np.array(values).sum(axis=1, keepdims=True)
    if any(len(set(np.round(row, 9))) < 3 for row in probs):
        return  # a tie: either tag is the most probable
    merged = MergedExample(token_probs={"s": probs.copy()}, token_offsets=[(i, i + 1) for i in range(len(probs))])
    task = Task("s", "span", "OFF", temperature=temperature)
    apply_calibration([task], [merged])
    assert span_tags(task, merged.token_probs["s"]) == span_tags(task, probs)


def test_fit_temperature_by_hand():
    # always 0.9 sure of "true", right 7 times in 10: the NLL is least where the tempered 0.9 is 0.7,
    # sigmoid(logit(0.9) / T) = 0.7, T = ln 9 / ln(7/3) = 2.5933
    expected = math.log(9) / math.log(7 / 3)
    binary = np.array([[0.1, 0.9]] * 10)
    targets = np.array([[0, 1]] * 7 + [[1, 0]] * 3)
    assert fit_temperature(binary, targets, exclusive=True) == pytest.approx(expected, abs=1e-3)
    assert fit_temperature(binary[:, 1:], targets[:, 1:], exclusive=False) == pytest.approx(expected, abs=1e-3)
    assert fit_temperature(np.zeros((0, 2)), np.zeros((0, 2)), exclusive=True) == 1.0


def test_ece_by_hand():
    # 6 scores, 3 bins of 2: {0.1, 0.3} hit 0/2 → |0 − 0.2|; {0.5, 0.6} 1/2 → |0.5 − 0.55|;
    # {0.8, 0.9} 2/2 → |1 − 0.85|
    ece = expected_calibration_error([0.9, 0.1, 0.5, 0.8, 0.3, 0.6], [1, 0, 0, 1, 0, 1], bins=3)
    assert ece == pytest.approx((0.2 + 0.05 + 0.15) / 3)
    assert expected_calibration_error([], []) == 0.0


class Flat:
    """A predictor that gives every dev text the same probabilities: 0.9 of OFF true."""

    tasks, companions = [OFF], {}
    decoding = Decoding([OFF])

    def merged_outputs(self, texts, contexts, batch_size=32):
        return [MergedExample({"OFF": np.array([0.1, 0.9])}) for _ in texts]


def dev_split():
    return [Example(str(i), f"text {i}", labels={"OFF": i < 7}) for i in range(10)]


def test_calibrate_fits_the_temperature_and_reports_ece_before_and_after():
    chosen = calibrate([TaskConfig("OFF", source="OFF")], Flat(), {"train": [], "dev": dev_split()})
    expected = math.log(9) / math.log(7 / 3)
    assert chosen.temperatures["OFF"] == pytest.approx(expected, abs=1e-3)
    report = chosen.temperature_report["OFF"]
    # one bin of ties: before |0.7 − 0.9|, after |0.7 − 0.7|
    assert report["bins"] == 15 and report["dev_ece_before"] == pytest.approx(0.2)
    assert report["dev_ece_after"] == pytest.approx(0.0, abs=1e-3)
    fixed = calibrate([TaskConfig("OFF", source="OFF", temperature=2.0)], Flat(), {"train": [], "dev": []})
    assert fixed.temperatures == {"OFF": 2.0}


def test_calibration_error_of_a_span_task_counts_tokens():
    gold = Example("1", "ab", spans={"OFF": [(0, 1)]})
    merged = MergedExample(token_offsets=[(0, 1), (1, 2)], token_probs={"OFF_span": np.array([[0.2, 0.8, 0.0],
                                                                                              [0.6, 0.2, 0.2]])})
    # top tags B (0.8, right) and O (0.6, right): bins of one, |1 − 0.8| and |1 − 0.6|
    assert calibration_error(SPAN, [gold], [merged]) == pytest.approx(0.3)


def tiny_predictor(tasks):
    encoder = scratch_encoder(ScratchEncoderConfig(hidden_size=8, layers=1, heads=1, intermediate_size=8,
                                                   max_position=16), vocab_size=20, pad_id=0)
    return Predictor(MultiTaskModel(encoder, tasks), None, tasks)


def test_the_predictor_applies_its_temperature_and_saves_it():
    trained = tiny_predictor([OFF, GROUPS])
    calibrated = Calibration(temperatures={"OFF": 3.0, "groups": 0.5}).apply_to(trained)
    assert [t.temperature for t in calibrated.tasks] == [3.0, 0.5] and trained.tasks[0].temperature == 1.0
    merged = [MergedExample({"OFF": np.array([0.2, 0.8]), "groups": np.array([0.8, 0.2])})]
    apply_calibration(calibrated.tasks, merged)
    assert np.allclose(merged[0].sequence_probs["OFF"], temper(np.array([0.2, 0.8]), 3.0, True))
    assert np.allclose(merged[0].sequence_probs["groups"], [16 / 17, 1 / 17])
    # config.json: written only when not 1 (a model without it reads as T = 1)
    assert "temperature" not in OFF.to_dict()
    assert Task.from_dict(calibrated.tasks[0].to_dict()).temperature == 3.0
    assert Task.from_dict(OFF.to_dict()).temperature == 1.0


def test_a_saved_temperature_is_applied_to_what_predict_gives(tmp_path):
    from conftest import untrained_model

    directory = untrained_model(tmp_path / "model")
    raw = Predictor.from_pretrained(directory)
    text = ["너 진짜 한심하다"]
    before = raw.predict(text)[0]
    Calibration(temperatures={"OFF": 4.0, "OFF_span": 2.0}).apply_to(raw).save_pretrained(tmp_path / "warm")
    warm = Predictor.from_pretrained(tmp_path / "warm")  # the manifest, re-written, still checks
    assert [t.temperature for t in warm.tasks] == [4.0, 2.0]
    after = warm.predict(text)[0]
    probs = [before["labels"]["OFF"]["probs"][k] for k in ("false", "true")]
    expected = temper(np.array(probs), 4.0, exclusive=True)
    assert [after["labels"]["OFF"]["probs"][k] for k in ("false", "true")] == pytest.approx(expected, abs=1e-5)
    assert after["labels"]["OFF"]["label"] == before["labels"]["OFF"]["label"]
