"""bench/operating_points.py: `--fit-calibration` (temperatures and confidence maps fitted on dev, ECE at each step,
argmax kept), the one-vs-rest cut of a named label, and precision at dev's benign share."""
import copy
import json
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from kold_span.data.example import Example
from kold_span.evaluation.operating_points import sequence_counts
from kold_span.evaluation.task_scores import calibration_error, confidence_hits, task_outcomes
from kold_span.metrics import calibration_error_floor, expected_calibration_error
from kold_span.inference.predictor import Predictor
from kold_span.models.kinds import Decoding, MergedExample, apply_calibration
from kold_span.models.tasks import Task
from kold_span.models.temperature import negative_log_likelihood

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "model_v1"
sys.path.insert(0, str(ROOT / "bench"))
import operating_points  # noqa: E402


def gold_examples() -> list[Example]:
    """The fixture's inputs with hand-made gold: offensive when the comment insults someone, spans on the insult."""
    insults = {"c1": "구제불능", "c3": "밥맛 떨어진다", "c5": "뻔뻔하기 짝이 없다"}
    examples = []
    for line in (FIXTURE / "inputs.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        text, insult = record["comment"], insults.get(record["id"])
        spans = [(text.index(insult), text.index(insult) + len(insult))] if insult else []
        examples.append(Example(id=record["id"], text=text, context=record.get("title"),
                                labels={"OFF": insult is not None}, spans={"OFF": spans}))
    return examples


@pytest.fixture(scope="module")
def outputs():
    predictor = Predictor.from_pretrained(FIXTURE / "model")
    examples = gold_examples()
    splits = {"dev": examples[:7], "test": examples[7:]}
    merged = {name: predictor.merged_outputs([e.text for e in split], [e.context for e in split])
              for name, split in splits.items()}
    return predictor, splits, merged


def configs(predictor, confidence_map="dev"):
    return SimpleNamespace(tasks=[SimpleNamespace(name=t.name, temperature="dev", confidence_map=confidence_map)
                                  for t in predictor.tasks])


@pytest.fixture
def small_dev_maps(monkeypatch):
    """The fixture's 7 dev texts are below the rows a map needs; here they fit one all the same."""
    from kold_span.training import calibration

    monkeypatch.setattr(calibration, "MIN_ROWS", 1)


def test_fitted_calibration_lowers_dev_nll_and_keeps_every_argmax(outputs, small_dev_maps):
    predictor, splits, raw = outputs
    merged = copy.deepcopy(raw)
    calibrated, report = operating_points.fit_calibration(configs(predictor), predictor, splits, merged)
    assert set(report) == {"OFF", "OFF_span"}
    # OFF, single-label, gets a map fitted after its temperature; the span task a temperature only
    assert calibrated.tasks[0].confidence_map and report["OFF"]["confidence_map_knots"] == len(
        calibrated.tasks[0].confidence_map)
    assert not calibrated.tasks[1].confidence_map and report["OFF_span"]["confidence_map_knots"] == 0
    tempered_only = copy.deepcopy(raw)
    apply_calibration([replace(t, confidence_map=()) for t in calibrated.tasks], tempered_only["test"])
    for task in calibrated.tasks:
        entry = report[task.name]
        assert task.temperature == entry["temperature"] > 0 and entry["temperature_fitted"]
        before_probs, targets = task_outcomes(task, splits["dev"], raw["dev"])
        tempered = copy.deepcopy(raw["dev"])
        apply_calibration([replace(task, confidence_map=())], tempered)
        assert negative_log_likelihood(task_outcomes(task, splits["dev"], tempered)[0], targets, True) <= (
            negative_log_likelihood(before_probs, targets, True) + 1e-12)
        # "after" is the ECE of the outputs as calibrated, "tempered" after the temperature alone, "before" raw
        assert entry["test_after"] == pytest.approx(calibration_error(task, splits["test"], merged["test"]))
        assert entry["test_tempered"] == pytest.approx(calibration_error(task, splits["test"], tempered_only["test"]))
        assert entry["test_before"] == pytest.approx(calibration_error(task, splits["test"], raw["test"]))
        assert entry["argmax_changed"] == 0
        # beside "after", the floor of a perfectly calibrated model with the tempered scores, on the same rows
        floor = calibration_error_floor(confidence_hits(task, splits["test"], merged["test"])[0], samples=1000)
        assert (entry["test_floor_mean"], entry["test_floor_p95"]) == (floor["mean"], floor["p95"])
        assert entry["test_rows"] == len(task_outcomes(task, splits["test"], merged["test"])[0])
    # the outputs themselves were tempered in place (a temperature of exactly 1 would leave them)
    assert report["OFF"]["temperature"] != 1.0
    assert not np.allclose(merged["dev"][1].sequence_probs["OFF"], raw["dev"][1].sequence_probs["OFF"])


def test_a_model_with_temperatures_gets_maps_only_and_maps_must_be_dropped_first(outputs, small_dev_maps):
    predictor, splits, raw = outputs
    warm = copy.copy(predictor)
    warm.tasks = [replace(t, temperature=2.0) for t in predictor.tasks]
    merged = copy.deepcopy(raw)
    for split in merged:
        apply_calibration(warm.tasks, merged[split])
    shipped = {split: copy.deepcopy(merged[split]) for split in merged}
    calibrated, report = operating_points.fit_calibration(configs(warm), warm, splits, merged)
    assert [t.temperature for t in calibrated.tasks] == [2.0, 2.0]
    assert not report["OFF"]["temperature_fitted"] and report["OFF"]["confidence_map_knots"] > 0
    # "before" is the model as it came, with its temperature
    assert report["OFF"]["test_before"] == pytest.approx(calibration_error(warm.tasks[0], splits["test"],
                                                                           shipped["test"]))
    _, unmapped = operating_points.fit_calibration(configs(warm, "none"), warm, splits, copy.deepcopy(shipped))
    assert unmapped["OFF"]["confidence_map_knots"] == 0
    assert unmapped["OFF"]["test_after"] == unmapped["OFF"]["test_tempered"] == unmapped["OFF"]["test_before"]
    with pytest.raises(ValueError, match="predict without the model's confidence maps first"):
        operating_points.fit_calibration(configs(calibrated), calibrated, splits, copy.deepcopy(raw))


def test_the_calibration_table_says_whether_the_ece_is_above_its_floor():
    calibration = {"OFF": {"temperature": 1.2, "confidence_map_knots": 9, "dev_before": 0.05, "dev_tempered": 0.045,
                           "dev_after": 0.04, "dev_floor_mean": 0.02, "dev_floor_p95": 0.03, "test_before": 0.06,
                           "test_tempered": 0.055, "test_after": 0.051, "test_floor_mean": 0.03,
                           "test_floor_p95": 0.045, "argmax_changed": 0, "test_rows": 1352, "test_at_dev_mix": 0.021,
                           "test_at_dev_mix_floor_mean": 0.02, "test_at_dev_mix_floor_p95": 0.031},
                   "TGT": {"temperature": 0.9, "dev_after": 0.02, "dev_floor_mean": 0.02, "dev_floor_p95": 0.03,
                           "test_after": 0.04, "test_floor_mean": 0.03, "test_floor_p95": 0.045}}
    result = {"name": "x", "dev": 10, "test": 20, "samples": 1000, "precision": 0.9, "recall": 0.9, "tasks": {},
              "calibration": calibration}
    text = operating_points.section(result, "cmd")
    assert "No task of this model takes a decision" in text and "| task | band" not in text  # no decisions
    rows = [line for line in text.splitlines() if line.startswith("| OFF") or line.startswith("| TGT")]
    assert rows == ["| OFF | 1.200 | 9 | 0.0500 → 0.0450 → 0.0400 | 0.0200 [0.0300] | 0.0600 → 0.0550 → **0.0510** "
                    "| 0.0300 [0.0450] | yes | 0.0210 [0.0200 [0.0310]] | 0 of 1352 |",
                    "| TGT | 0.900 | – | 0.0200 | 0.0200 [0.0300] | **0.0400** | 0.0300 [0.0450] | no | – | – |"]


def test_test_ece_at_dev_label_mix_weighs_each_gold_label_to_dev_share():
    # dev: 1 "none", 3 "hate"; test: 2 and 2. Weighted to dev's mix a "none" row counts 0.5, a "hate" one 1.5
    dev = [(0.9, "hate"), (0.8, "hate"), (0.7, "hate"), (0.2, "none")]
    test = [(0.9, "hate"), (0.6, "hate"), (0.3, "none"), (0.8, "none")]
    (dev_x, dev_m), (test_x, test_m) = hate_split(dev), hate_split(test)
    out = operating_points.calibrated(HATE, {"dev": dev_x, "test": test_x}, {"dev": dev_m, "test": test_m}, 50)
    confidences, hits = confidence_hits(HATE, test_x, test_m)
    weights = [1.5, 1.5, 0.5, 0.5]
    assert out["test_at_dev_mix"] == pytest.approx(expected_calibration_error(confidences, hits, weights=weights))
    assert out["test_at_dev_mix"] != pytest.approx(out["test_after"])
    floor = calibration_error_floor(confidences, samples=50, weights=weights)
    assert (out["test_at_dev_mix_floor_mean"], out["test_at_dev_mix_floor_p95"]) == (floor["mean"], floor["p95"])
    # the same mix as dev: nothing to reweigh, no column
    same = operating_points.calibrated(HATE, {"dev": dev_x, "test": dev_x}, {"dev": dev_m, "test": dev_m}, 50)
    assert "test_at_dev_mix" not in same


def test_label_share_weights_by_hand():
    # dev: a 1/3, b 2/3; test: a 1/2, b 1/4, c 1/4 (c, absent from dev, weighs nothing)
    weights = operating_points.label_share_weights([0, 1, 1], [0, 0, 1, 2])
    assert weights.tolist() == pytest.approx([2 / 3, 2 / 3, 8 / 3, 0.0])


HATE = Task("hate", "sequence", "hate", labels=("none", "offensive", "hate"))


def hate_split(rows):
    """Examples and outputs of a three-class task from (P(hate), gold) pairs; the rest split evenly."""
    examples = [Example(id=str(i), text="t", labels={"hate": gold}) for i, (_, gold) in enumerate(rows)]
    merged = [MergedExample({"hate": np.array([(1 - p) / 2, (1 - p) / 2, p])}) for p, _ in rows]
    return examples, merged


def test_a_named_label_is_cut_one_vs_rest():
    dev = [(0.95, "hate"), (0.9, "hate"), (0.85, "hate"), (0.8, "offensive"), (0.7, "hate"), (0.6, "none"),
           (0.5, "hate"), (0.4, "offensive"), (0.3, "none"), (0.1, "none")]
    test = [(0.9, "hate"), (0.88, "offensive"), (0.6, "hate"), (0.55, "none"), (0.45, "hate"), (0.2, "none")]
    (dev_x, dev_m), (test_x, test_m) = hate_split(dev), hate_split(test)
    predictor = SimpleNamespace(tasks=[HATE], decoding=Decoding([HATE]))
    splits, merged = {"dev": dev_x, "test": test_x}, {"dev": dev_m, "test": test_m}
    # unnamed, a three-class task takes no decision here
    assert operating_points.decisions(predictor, splits, merged, 0.9, 0.9, 200, {}) == {}
    out = operating_points.decisions(predictor, splits, merged, 0.9, 0.9, 200, {"hate": ["hate"]})
    remove, review = out["hate:hate"]["remove"], out["hate:hate"]["review"]
    # dev: precision ≥ 0.9 with the most recall is 0.85 (3 of 3 flagged are hate; 0.8 would add an offensive one)
    assert remove["threshold"] == 0.85 and remove["dev"]["precision"] == 1.0 and remove["dev"]["recall"] == 0.6
    # test at 0.85: 0.9 (hate) and 0.88 (offensive) flagged: precision 1/2, recall 1/3 of the hate texts
    assert remove["test"]["precision"] == 0.5 and remove["test"]["recall"] == pytest.approx(1 / 3)
    # dev: recall ≥ 0.9 first at 0.5 (all five hate texts); test: 4 flagged, 2 of 3 hate texts, and 2 of the 3
    # texts without hate (0.88 offensive, 0.55 none; not 0.2)
    assert review["threshold"] == 0.5
    assert review["test"]["recall"] == pytest.approx(2 / 3) and review["test"]["benign_flagged"] == pytest.approx(2 / 3)


def test_a_label_the_model_cannot_cut_on_is_refused(outputs):
    predictor, _, _ = outputs
    with pytest.raises(SystemExit, match="no task 'hate'"):
        operating_points.check_labels(predictor.tasks, {"hate": ["hate"]})
    with pytest.raises(SystemExit, match="has no label 'maybe'"):
        operating_points.check_labels(predictor.tasks, {"OFF": ["maybe"]})
    with pytest.raises(SystemExit, match="span task"):
        operating_points.check_labels(predictor.tasks, {"OFF_span": ["OFF"]})
    assert operating_points.parse_labels(["hate:hate", "hate:offensive", "OFF:true"]) == {
        "hate": ["hate", "offensive"], "OFF": ["true"]}
    with pytest.raises(SystemExit, match="TASK:LABEL"):
        operating_points.parse_labels(["hate"])


def test_precision_at_a_benign_share_reweights_the_two_groups():
    # 2 offensive texts (one flagged, right) and 6 benign ones (three flagged): precision 1/4 as it is,
    # 25% benign: each benign text weighs 0.25 / 0.75 = 1/3, each offensive one 0.75 / 0.25 = 3
    counts = sequence_counts([0.9, 0.1] + [0.9] * 3 + [0.1] * 3, [True, True] + [False] * 6, grid=(0.5,))
    assert operating_points.precision_at_benign_share(counts, 0.75) == 0.25
    assert operating_points.precision_at_benign_share(counts, 0.25) == pytest.approx(3 / (3 + 3 * (1 / 3)), abs=1e-6)
    assert operating_points.precision_at_benign_share(counts, None) is None
    no_benign = sequence_counts([0.9, 0.2], [True, True], grid=(0.5,))
    assert operating_points.precision_at_benign_share(no_benign, 0.5) is None
