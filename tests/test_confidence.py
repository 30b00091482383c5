"""Confidence maps: hand-checked fits, the order they keep, where they are fitted, saved, checked and applied."""
import json
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.config.schema import TaskConfig
from kold_span.data.example import Example
from kold_span.errors import ModelFormatError
from kold_span.inference.predictor import Predictor
from kold_span.metrics import calibration_error_floor, expected_calibration_error
from kold_span.models.confidence import MARGIN, fit_confidence_map, knots_problem, remap
from kold_span.models.kinds import Decoding, MergedExample, apply_calibration
from kold_span.models.tasks import Task
from kold_span.training.calibration import Calibration, calibrate

from conftest import untrained_model
from test_temperature import tiny_predictor

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
TGT = Task("TGT", "sequence", "TGT", labels=("group", "individual", "other"))
GROUPS = Task("groups", "sequence", "groups", problem="multi", labels=("a", "b"))


def kept(steps):
    """Knots from hit rates by hand: y = 0.9 × hit rate + 0.1 × x."""
    return [(x, 0.9 * y + 0.1 * x) for x, y in steps]


def test_an_over_confident_score_is_mapped_to_its_hit_rate():
    # 0.9 sure ten times, right seven: one step (0.9, 0.7), carried level to 0.5 and to 1
    knots = fit_confidence_map([0.9] * 10, [1] * 7 + [0] * 3, lowest=0.5)
    assert np.allclose(knots, kept([(0.5, 0.7), (0.9, 0.7), (1.0, 0.7)]), rtol=0, atol=1e-12)
    assert remap(np.array([0.1, 0.9]), knots) == pytest.approx([0.28, 0.72])
    by_hand = ((0.5, 0.5), (0.9, 0.7), (1.0, 1.0))
    assert remap(np.array([0.1, 0.9]), by_hand) == pytest.approx([0.3, 0.7])
    # three quarters of the way from (0.5, 0.5) to (0.9, 0.7)
    assert remap(np.array([0.2, 0.8]), by_hand) == pytest.approx([0.35, 0.65])
    assert remap(np.array([0.05, 0.95]), by_hand) == pytest.approx([0.15, 0.85])  # halfway to (1, 1)


def test_steps_below_one_in_k_are_raised_and_pooled():
    # right 1 time in 4 at 0.4 and 0.45 (three labels: at least 1/3), 3 in 4 at 0.8
    knots = fit_confidence_map([0.4] * 4 + [0.45] * 4 + [0.8] * 4, [1, 0, 0, 0] * 2 + [1, 1, 1, 0], lowest=1 / 3)
    expected = kept([(1 / 3, 1 / 3), (0.425, 1 / 3), (0.8, 0.75), (1.0, 0.75)])
    assert np.allclose(knots, expected, rtol=0, atol=1e-12)


def test_the_ends_keep_a_step_that_sits_on_them():
    # every row 1.0 sure, right 9 times in 10: the last step (1.0, 0.9) is the end itself
    knots = fit_confidence_map([0.6] * 2 + [1.0] * 10, [0, 1] + [1] * 9 + [0], lowest=0.5)
    assert np.allclose(knots, kept([(0.5, 0.5), (0.6, 0.5), (1.0, 0.9)]), rtol=0, atol=1e-12)
    assert fit_confidence_map([], [], lowest=0.5) == ()
    with pytest.raises(ValueError, match="2 confidences but 1 hits"):
        fit_confidence_map([0.6, 0.7], [1], lowest=0.5)


def test_the_top_label_stays_ahead_where_the_map_would_bring_it_level():
    knots = ((1 / 3, 1 / 3), (0.5, 0.34), (1.0, 1.0))
    # top 0.5 → 0.34 would leave the second 0.45 × 0.66 / 0.5 = 0.594 ahead: the top is kept at the level 0.45/0.95
    row = remap(np.array([0.45, 0.5, 0.05]), knots)
    assert row.argmax() == 1 and row[1] - row[0] == pytest.approx(MARGIN * (1 + 0.45 / 0.5), rel=1e-3)
    assert row.sum() == pytest.approx(1.0)
    # a top label that held everything shares what the map takes away equally
    assert remap(np.array([0.0, 1.0, 0.0]), ((1 / 3, 1 / 3), (1.0, 0.8))) == pytest.approx([0.1, 0.8, 0.1])
    assert remap(np.array([0.3, 0.7]), ()) == pytest.approx([0.3, 0.7])


def rows(classes):
    return st.lists(st.lists(st.floats(0.001, 1.0), min_size=classes, max_size=classes), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 5).flatmap(lambda k: st.tuples(rows(k), rows(k), st.lists(st.booleans(), min_size=40,
                                                                                    max_size=40))))
def test_a_fitted_map_keeps_every_argmax_and_the_rows_distributions(data):
    dev, test, hits = data
    dev = np.array(dev) / np.sum(dev, axis=1, keepdims=True)
    test = np.array(test) / np.sum(test, axis=1, keepdims=True)
    classes = dev.shape[1]
    knots = fit_confidence_map(dev.max(axis=1), np.array(hits[:len(dev)], dtype=float), 1 / classes)
    assert knots_problem([list(k) for k in knots]) is None
    assert all(1 / classes - 1e-12 <= y <= 1.0 for _, y in knots)
    mapped = remap(test, knots)
    assert (mapped.argmax(axis=1) == test.argmax(axis=1)).all()
    assert np.allclose(mapped.sum(axis=1), 1.0) and (mapped >= 0).all() and (mapped <= 1).all()
    # the labels other than the top keep their order
    for before, after in zip(test, mapped):
        others = [j for j in np.argsort(before, kind="stable") if j != before.argmax()]
        assert (np.diff(after[others]) >= -1e-12).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.5, 1.0), min_size=2, max_size=60), st.lists(st.booleans(), min_size=60, max_size=60),
       st.lists(st.integers(0, 10_000), min_size=2, max_size=30, unique=True))
def test_a_binary_map_keeps_the_order_of_p_true_and_ties_nothing(confidences, hits, p_true):
    # thresholds cut P(true): the map neither swaps two scores nor ties them (but at 0.5 ± MARGIN, where
    # the top label is held ahead)
    knots = fit_confidence_map(confidences, np.array(hits[:len(confidences)], dtype=float), lowest=0.5)
    p = np.sort(np.array(p_true)) / 10_000  # scores at least 0.0001 apart
    mapped = remap(np.stack([1 - p, p], axis=1), knots)[:, 1]
    steps = np.diff(mapped)
    held = np.abs(mapped - 0.5) <= MARGIN + 1e-12
    assert (steps >= -1e-12).all()
    assert (steps[~(held[1:] & held[:-1])] > 0).all()


def test_the_map_lowers_the_dev_ece_of_a_head_wrong_at_both_ends():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.5, 1.0, 2000)
    hits = (rng.uniform(size=2000) < 0.5 + (scores - 0.5) * 0.4 + 0.25 * (scores > 0.9)).astype(float)
    knots = fit_confidence_map(scores, hits, lowest=0.5)
    mapped = remap(np.stack([1 - scores, scores], axis=1), knots).max(axis=1)
    # before: twice what a calibrated model would score at worst; after: no worse than one
    assert expected_calibration_error(scores, hits) > 2 * calibration_error_floor(scores)["p95"]
    assert expected_calibration_error(mapped, hits) < calibration_error_floor(mapped)["p95"]


def test_knots_problem_names_what_is_wrong():
    assert knots_problem([]) is None
    assert knots_problem("x") == "a list of [x, y] pairs"
    assert knots_problem([[0.5, 0.5], [0.5, 0.6]]) == "x must increase: 0.5 after 0.5 (knot 1)"
    assert knots_problem([[0.5, 1.5]]).startswith("a list of [x, y] pairs of numbers in [0, 1] (knot 0")
    assert knots_problem([[0.5, True]]).startswith("a list of [x, y] pairs of numbers in [0, 1]")


class Flat:
    """A predictor that gives every dev text the same probabilities of OFF, TGT and groups."""

    tasks, companions = [OFF, TGT, GROUPS], {}
    decoding = Decoding([OFF, TGT, GROUPS])

    def merged_outputs(self, texts, contexts, batch_size=32):
        return [MergedExample({"OFF": np.array([0.1, 0.9]), "TGT": np.array([0.8, 0.1, 0.1]),
                               "groups": np.array([0.9, 0.2])}) for _ in texts]


def dev_split(n=500):
    """`n` dev texts: OFF true for 7 in 10, TGT "group" for half."""
    return [Example(str(i), f"text {i}", labels={"OFF": i < 0.7 * n, "TGT": "group" if i < n / 2 else "other",
                                                 "groups": ["a"]}) for i in range(n)]


def test_calibrate_fits_a_map_for_single_label_tasks_only_and_reports_it():
    configs = [TaskConfig("OFF", source="OFF", temperature=1.0), TaskConfig("TGT", source="TGT", temperature=1.0),
               TaskConfig("groups", source="groups", problem="multi", temperature=1.0)]
    chosen = calibrate(configs, Flat(), {"train": [], "dev": dev_split()})
    assert set(chosen.confidence_maps) == {"OFF", "TGT"}
    assert np.allclose(chosen.confidence_maps["OFF"], kept([(0.5, 0.7), (0.9, 0.7), (1.0, 0.7)]))
    assert np.allclose(chosen.confidence_maps["TGT"], kept([(1 / 3, 0.5), (0.8, 0.5), (1.0, 0.5)]))
    none = [TaskConfig("OFF", source="OFF", temperature=1.0, confidence_map="none")]
    assert calibrate(none, Flat(), {"train": [], "dev": dev_split()}).confidence_maps == {}
    fitted = calibrate([TaskConfig("OFF", source="OFF")], Flat(), {"train": [], "dev": dev_split()})
    # the temperature already brings 0.9 to the hit rate 0.7: the map fitted after it is the identity there
    assert fitted.confidence_maps["OFF"][1] == pytest.approx((0.7, 0.7), abs=1e-3)
    assert fitted.temperature_report["OFF"]["confidence_map_knots"] == 3


def test_a_multi_label_task_gets_a_map_per_label_only_when_its_thresholds_are_chosen_on_dev():
    fixed = TaskConfig("groups", source="groups", problem="multi", temperature=1.0)
    assert calibrate([fixed], Flat(), {"train": [], "dev": dev_split()}).confidence_maps == {}
    tuned = TaskConfig("groups", source="groups", problem="multi", temperature=1.0, threshold="dev")
    chosen = calibrate([tuned], Flat(), {"train": [], "dev": dev_split()})
    # a: always given at 0.9, mapped to 0.9 × 1 + 0.1 × 0.9; b: never, at 0.2, to 0.1 × 0.2
    a, b = chosen.confidence_maps["groups"]
    assert np.allclose(a, kept([(0.0, 1.0), (0.9, 1.0), (1.0, 1.0)]))
    assert np.allclose(b, kept([(0.0, 0.0), (0.2, 0.0), (1.0, 0.0)]))
    assert chosen.temperature_report["groups"]["confidence_map_knots"] == 6
    calibrated = chosen.apply_to(tiny_predictor([GROUPS]))
    assert calibrated.tasks[0].label_maps == (a, b) and calibrated.tasks[0].confidence_map == ()
    merged = [MergedExample({"groups": np.array([0.9, 0.2])})]
    apply_calibration(calibrated.tasks, merged)
    assert merged[0].sequence_probs["groups"] == pytest.approx([0.99, 0.02])


def test_saved_label_maps_are_read_back_and_checked(tmp_path):
    from kold_span.models.model_dir import _check_task_fields

    groups = Task("groups", "sequence", "groups", problem="multi", labels=("a", "b"),
                  label_maps=(((0.0, 0.1), (1.0, 0.9)), ()))
    saved = groups.to_dict()
    assert saved["label_maps"] == [[[0.0, 0.1], [1.0, 0.9]], []] and "confidence_map" not in saved
    assert Task.from_dict(saved) == groups and "label_maps" not in GROUPS.to_dict()
    _check_task_fields(saved, "config.json: tasks[0]")
    with pytest.raises(ModelFormatError, match=r"tasks\[0\]: label_maps must be a list of confidence maps "
                                               r"\(one map per label: 1 for 2 labels\)"):
        _check_task_fields({**saved, "label_maps": [[]]}, "config.json: tasks[0]")


def test_a_map_beside_a_fixed_temperature_is_reported_and_a_small_dev_fits_none(caplog):
    chosen = calibrate([TaskConfig("OFF", source="OFF", temperature=1.0)], Flat(), {"train": [], "dev": dev_split()})
    # 0.9 sure, right 7 in 10: before |0.7 - 0.9|; after, the map brings 0.9 to 0.9 × 0.7 + 0.1 × 0.9 = 0.72
    assert chosen.temperature_report["OFF"]["confidence_map_knots"] == 3
    assert chosen.temperature_report["OFF"]["dev_ece_before"] == pytest.approx(0.2)
    assert chosen.temperature_report["OFF"]["dev_ece_after"] == pytest.approx(0.02)
    assert chosen.temperature_report["OFF"]["temperature"] == 1.0 and chosen.temperature_report["OFF"]["rows"] == 500
    with caplog.at_level("INFO", logger="kold_span.training.calibration"):
        small = calibrate([TaskConfig("OFF", source="OFF", temperature=1.0)], Flat(),
                          {"train": [], "dev": dev_split(499)})
    assert small.confidence_maps == {} and "no confidence map: 499 labelled dev rows, fewer than 500" in caplog.text


def test_a_saved_map_is_applied_to_what_predict_gives_and_checked_on_load(tmp_path):
    directory = untrained_model(tmp_path / "model")
    raw = Predictor.from_pretrained(directory)
    text = ["너 진짜 한심하다"]
    before = raw.predict(text)[0]["labels"]["OFF"]
    knots = ((0.5, 0.5), (0.75, 0.55), (1.0, 1.0))
    Calibration(confidence_maps={"OFF": knots}).apply_to(raw).save_pretrained(tmp_path / "mapped")
    config = json.loads((tmp_path / "mapped" / "config.json").read_text(encoding="utf-8"))
    assert config["tasks"][0]["confidence_map"] == [[0.5, 0.5], [0.75, 0.55], [1.0, 1.0]]
    assert "confidence_map" not in config["tasks"][1]  # the span task has none, and none is written
    mapped = Predictor.from_pretrained(tmp_path / "mapped")
    assert mapped.tasks[0].confidence_map == knots
    after = mapped.predict(text)[0]["labels"]["OFF"]
    expected = remap(np.array([before["probs"]["false"], before["probs"]["true"]]), knots)
    assert [after["probs"]["false"], after["probs"]["true"]] == pytest.approx(expected, abs=1e-5)
    assert after["label"] == before["label"]
    merged = [MergedExample({"OFF": np.array([0.25, 0.75])})]
    apply_calibration(mapped.tasks[:1], merged)
    assert merged[0].sequence_probs["OFF"] == pytest.approx([0.45, 0.55])


def test_a_malformed_saved_map_is_refused_naming_the_field(tmp_path):
    from kold_span.models.manifest import write_manifest

    directory = untrained_model(tmp_path / "model")
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tasks"][0]["confidence_map"] = [[0.5, 0.9], [0.8, 0.6]]
    config_path.write_text(json.dumps(config), encoding="utf-8")
    write_manifest(directory)
    with pytest.raises(ModelFormatError, match=r"tasks\[0\]: confidence_map must be a confidence map "
                                               r"\(y must never decrease: 0.6 after 0.9 \(knot 1\)\)"):
        Predictor.from_pretrained(directory)


def test_serve_and_spacy_give_the_mapped_probabilities(tmp_path):
    import spacy
    from fastapi.testclient import TestClient

    from kold_span.inference.ensemble import load_predictor
    from kold_span.service.app import Settings, create_app

    raw = Predictor.from_pretrained(untrained_model(tmp_path / "model"))
    knots = ((0.5, 0.5), (0.75, 0.55), (1.0, 1.0))
    directory = Calibration(temperatures={"OFF": 2.0}, confidence_maps={"OFF": knots}).apply_to(raw).save_pretrained(
        tmp_path / "mapped")
    text = "너 진짜 한심하다"
    expected = Predictor.from_pretrained(directory).predict([text])[0]
    assert expected["labels"]["OFF"]["probs"] != raw.predict([text])[0]["labels"]["OFF"]["probs"]
    with TestClient(create_app(Settings(models=(str(directory),)), lambda: load_predictor([directory]))) as client:
        for _ in range(3000):  # until the model is loaded (at most 30 s): /health says 200
            if client.get("/health").status_code == 200:
                break
            time.sleep(0.01)
        [served] = client.post("/v1/predict", json={"comments": [{"text": text}]}).json()["predictions"]
        analyzed = client.post("/v1alpha1/comments:analyze", json={
            "comment": {"text": text}, "requestedAttributes": {"TOXICITY": {}}}).json()
    assert served["labels"]["OFF"] == expected["labels"]["OFF"]
    assert analyzed["attributeScores"]["TOXICITY"]["summaryScore"]["value"] == expected["labels"]["OFF"]["probs"][
        "true"]
    nlp = spacy.blank("xx")
    nlp.add_pipe("kold_span", config={"model": str(directory)})
    assert nlp(text).cats["OFF/true"] == expected["labels"]["OFF"]["probs"]["true"]
