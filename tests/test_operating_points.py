"""Operating points: tables, choices and bootstrap intervals checked by hand on tiny data, and their promise."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.config.schema import TaskConfig, DecisionConfig
from kold_span.data.example import Example
from kold_span.errors import ArgumentError, DataError, UnreachableTargetError
from kold_span.evaluation import operating_points
from kold_span.evaluation.operating_points import (Target, bootstrap_interval, choose, decide, decision_band,
                                                   merge_decision, policy_in_words, sequence_counts, span_counts,
                                                   threshold_table)
from kold_span.models.kinds import Decoding, MergedExample
from kold_span.models.tasks import Task
from kold_span.training.calibration import calibrate

SCORES = [0.9, 0.8, 0.7, 0.4, 0.3, 0.1]
GOLD = [True, True, False, True, False, False]


def test_the_table_by_hand():
    rows = threshold_table(sequence_counts(SCORES, GOLD))
    # at 0.7: flagged 0.9, 0.8, 0.7: 2 right of 3, 2 of 3 positives, 1 of 3 benign texts flagged
    at = {row["threshold"]: row for row in rows}
    assert at[0.7] == {"threshold": 0.7, "precision": 0.666667, "recall": 0.666667, "f1": 0.666667,
                       "flagged": 0.5, "benign_flagged": 0.333333}
    assert at[0.1]["recall"] == 1.0 and at[0.1]["flagged"] == 1.0 and at[0.1]["benign_flagged"] == 1.0
    assert [row["threshold"] for row in rows] == sorted(SCORES, reverse=True)


def test_choices_by_hand():
    rows = threshold_table(sequence_counts(SCORES, GOLD))
    assert choose(rows, "precision", 0.95)["threshold"] == 0.8  # 2/2, recall 2/3; 0.9 is 1/1 with recall 1/3
    assert choose(rows, "precision", 0.75)["threshold"] == 0.4  # 3/4, recall 1
    assert choose(rows, "recall", 1.0)["threshold"] == 0.4
    assert choose(rows, "flagged", 0.4)["threshold"] == 0.8  # 2 of 6 texts, recall 2/3
    assert choose(rows, "f1")["threshold"] == 0.4  # 2·3/(4+3) = 0.857
    with pytest.raises(UnreachableTargetError, match="highest recall reached is 0.0000"):
        choose(threshold_table(sequence_counts([0.5, 0.4], [False, False])), "recall", 0.9)


def test_an_unreachable_precision_names_the_best_one():
    rows = threshold_table(sequence_counts([0.9, 0.8, 0.7], [False, True, False]))
    with pytest.raises(UnreachableTargetError, match=r"precision=0.95 .* highest precision reached is 0.5000"):
        choose(rows, "precision", 0.95)


def test_a_few_flagged_texts_promise_no_more_than_they_can_show():
    # three flagged, all right: every resample says 1.0; the exact binomial interval of 3 of 3 is [0.2924, 1]
    counts = sequence_counts([0.95, 0.9, 0.85] + [0.3] * 20, [True] * 3 + [True, False] * 10)
    interval = bootstrap_interval(counts, 0.85, samples=300)
    assert interval["precision"] == [0.2924, 1.0]
    # recall: 3 found of 13 positives, the exact interval [0.0504, 0.5381] is inside the bootstrap's or widens it
    low, high = interval["recall"]
    assert low <= 0.0504 and high >= 0.5381
    # many flagged texts: the bootstrap interval of a share is about as wide as the exact one
    many = sequence_counts([0.9] * 400 + [0.1] * 400, [True] * 300 + [False] * 100 + [False] * 400)
    wide = bootstrap_interval(many, 0.9, samples=300)["precision"]
    assert wide[0] <= 0.75 <= wide[1] and 0.07 < wide[1] - wide[0] < 0.1


def test_the_bootstrap_is_seeded_and_brackets_the_point():
    counts = sequence_counts(SCORES * 5, GOLD * 5)
    first, again = bootstrap_interval(counts, 0.4, samples=300), bootstrap_interval(counts, 0.4, samples=300)
    assert first == again
    low, high = first["precision"]
    assert low <= 0.75 <= high and high - low > 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=4, max_size=40), st.floats(0.3, 1.0))
def test_a_chosen_precision_is_met_on_the_data_it_was_chosen_on(pairs, target):
    """The property of issue 57: a threshold never promises less precision than it has on its own data."""
    scores, gold = [s for s, _ in pairs], [g for _, g in pairs]
    counts = sequence_counts(scores, gold)
    try:
        band = decision_band(counts, "precision", target, "test", "0" * 64, samples=200)
    except UnreachableTargetError:
        assert all(row["precision"] is None or row["precision"] < target for row in threshold_table(counts))
        return
    flagged = [g for s, g in zip(scores, gold) if round(s, 6) >= band["threshold"]]
    precision = sum(flagged) / len(flagged)
    assert precision >= target - 1e-6 and precision == pytest.approx(band["precision"], abs=1e-6)
    low, high = band["precision_interval"]
    assert low - 1e-6 <= precision <= high + 1e-6


def test_span_counts_are_characters():
    span = Task("OFF_span", "span", "OFF")
    example = Example("1", "ab cd", spans={"OFF": [(0, 2)]})
    # tokens "ab" (inside 0.9) and "cd" (inside 0.5): at 0.6 only "ab", at 0.4 both
    merged = MergedExample(token_offsets=[(0, 2), (3, 5)],
                           token_probs={"OFF_span": np.array([[0.1, 0.9, 0.0], [0.5, 0.5, 0.0]])})
    counts = span_counts(span, Decoding([span]), [example], [merged], grid=(0.4, 0.6))
    rows = {row["threshold"]: row for row in threshold_table(counts)}
    assert rows[0.6]["precision"] == 1.0 and rows[0.6]["recall"] == 1.0
    assert rows[0.4]["precision"] == 0.5 and rows[0.4]["recall"] == 1.0  # 2 of 4 characters
    assert rows[0.4]["benign_flagged"] is None  # no text without a gold span


def test_review_above_remove_is_refused():
    remove, review = {"threshold": 0.5, "target": "precision=0.9"}, {"threshold": 0.7, "target": "recall=0.9"}
    with pytest.raises(UnreachableTargetError, match="review threshold 0.7 .* no review band is needed"):
        merge_decision(None, "true", {"remove": remove, "review": review}, "OFF")
    kept = merge_decision({"label": "true", "remove": remove}, "true", {"review": {"threshold": 0.3}}, "OFF")
    assert kept["remove"] is remove and kept["review"]["threshold"] == 0.3


class Fixed:
    """A predictor whose dev outputs are SCORES."""

    tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true"))]
    companions = {}
    decoding = Decoding(tasks)

    def merged_outputs(self, texts, contexts, batch_size=32):
        return [MergedExample({"OFF": np.array([1 - s, s])}) for s in SCORES]


def test_training_ends_with_the_configured_decision():
    dev = [Example(str(i), f"t{i}", labels={"OFF": g}) for i, g in enumerate(GOLD)]
    task = TaskConfig("OFF", source="OFF", temperature=1, confidence_map="none",
                      decision=DecisionConfig(precision=0.95, recall=1.0))
    chosen = calibrate([task], Fixed(), {"train": [], "dev": dev})
    policy = chosen.decisions["OFF"]
    assert policy["label"] == "true" and policy["remove"]["threshold"] == 0.8 and policy["review"]["threshold"] == 0.4
    assert policy["remove"]["data"] == "dev" and len(policy["remove"]["data_sha256"]) == 64
    unmet = calibrate([TaskConfig("OFF", source="OFF", temperature=1, confidence_map="none",
                                  decision=DecisionConfig(precision=0.99, flagged=0.01))],
                      Fixed(), {"train": [], "dev": dev})
    assert "OFF" in unmet.decision_errors  # a target dev cannot meet is reported, the run is not lost


@pytest.mark.parametrize("decision, message", [
    ("{precision: 0.9, f1: true}", "precision and f1 both choose the remove threshold"),
    ("{recall: 0.9, flagged: 0.1}", "recall and flagged both choose the review threshold"),
    ("{label: 'true'}", "decision needs a target"),
])
def test_a_decision_in_a_config_is_checked(tmp_path, decision, message):
    from kold_span.config.loading import load_config
    from kold_span.errors import ConfigError

    from conftest import TINY

    text = TINY.read_text(encoding="utf-8").replace("dev_fraction: 0.0", "dev_fraction: 0.2").replace(
        "{name: OFF, kind: sequence, source: OFF}",
                                                    f"{{name: OFF, kind: sequence, source: OFF, decision: {decision}}}")
    path = tmp_path / "tiny.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_config(path)
    ok = text.replace(f"decision: {decision}", "decision: {precision: 0.9}")
    path.write_text(ok, encoding="utf-8")
    assert load_config(path).tasks[0].decision.precision == 0.9


def test_a_review_band_above_remove_keeps_remove_alone():
    dev = [Example(str(i), f"t{i}", labels={"OFF": g}) for i, g in enumerate(GOLD)]
    # remove at 0.8 (precision 1, recall 2/3) already reaches recall 0.3, which review would cut at 0.9
    task = TaskConfig("OFF", source="OFF", temperature=1, confidence_map="none",
                      decision=DecisionConfig(precision=0.95, recall=0.3))
    chosen = calibrate([task], Fixed(), {"train": [], "dev": dev})
    assert chosen.decisions["OFF"]["remove"]["threshold"] == 0.8 and chosen.decisions["OFF"]["review"] is None
    assert "no review band is needed" in chosen.decision_errors["OFF"]


def dev_of(gold):
    """Examples with `gold` as their OFF labels, in SCORES' order."""
    return [Example(str(i), f"t{i}", labels={"OFF": g}) for i, g in enumerate(gold)]


@pytest.mark.parametrize("gold, why", [
    ([False] * len(SCORES), r"no text of these data is positive \(6 texts with a gold"),  # every band: recall 0
    ([None] * len(SCORES), r"no text of these data is positive \(0 texts with a gold"),  # no gold OFF at all
])
@pytest.mark.parametrize("target", [Target("OFF", "true", "f1", None), Target("OFF", "true", "flagged", 0.5)])
def test_a_band_needs_a_gold_positive(gold, why, target):
    with pytest.raises(UnreachableTargetError, match=f"task OFF:true: {why}"):
        decide(Fixed(), dev_of(gold), [target], "dev.jsonl", "0" * 64)


def test_a_gold_label_the_task_lacks_is_refused():
    dev = dev_of(GOLD)
    dev[2].labels["OFF"] = "maybe"  # not false, not true: counted as benign it would move every promise
    with pytest.raises(DataError, match="example '2': label 'maybe' of task 'OFF' was not seen in training"):
        decide(Fixed(), dev, [Target("OFF", "true", "f1", None)], "dev.jsonl", "0" * 64)


def test_two_sets_for_one_band_are_refused():
    targets = Target.parse(["OFF", "precision=0.95"]) + Target.parse(["OFF", "f1"])  # two --set, one band
    with pytest.raises(ArgumentError, match="two targets for one band"):
        decide(Fixed(), dev_of(GOLD), targets, "dev.jsonl", "0" * 64)


@pytest.mark.parametrize("task, decision, message", [
    ("{name: OFF_span, kind: span, source: OFF}", "{label: 'true', f1: true}",
     r"tasks\[1\]\.decision\.label: task 'OFF_span' is a span task"),
    ("{name: OFF, kind: sequence, source: OFF}", "{label: maybe, f1: true}",
     r"tasks\[0\]\.decision\.label: task 'OFF' has no label 'maybe'; its labels: false, true"),
])
def test_a_decision_label_is_refused_before_training(tmp_path, task, decision, message):
    from kold_span.config.loading import load_config
    from kold_span.errors import ConfigError
    from kold_span.training.run import train

    from conftest import FIXTURE, TINY

    text = TINY.read_text(encoding="utf-8").replace("dev_fraction: 0.0", "dev_fraction: 0.3")
    path = tmp_path / "tiny.yaml"
    path.write_text(text.replace(task, f"{task[:-1]}, decision: {decision}}}"), encoding="utf-8")
    config = load_config(path, [f"output_dir={tmp_path / 'runs'}", f"data.train={FIXTURE}", "data.limit=24",
                                "trainer.max_epochs=1", "run=r"])
    with pytest.raises(ConfigError, match=message):
        train(config, quiet=True)
    assert not list((tmp_path / "runs").rglob("*.ckpt"))  # refused before any epoch, not after the last


def test_the_review_sentence_counts_what_review_and_remove_flag_together():
    promise = {"precision_interval": [0.9, 1.0], "recall_interval": [0.87, 1.0], "examples": 115, "data": "dev.jsonl",
               "data_sha256": "7e3e06de38", "date": "2026-12-06T18:43:31Z"}
    policy = {"label": "true", "remove": {**promise, "threshold": 0.97, "precision": 1.0, "recall": 0.87},
              "review": {**promise, "threshold": 0.9, "precision": 0.98, "recall": 0.96}}
    review = policy_in_words("OFF", policy)[1]
    # 0.98 and 0.96 are counted at or above 0.9: the removed texts with the ones in the band, not the band alone
    assert review.startswith("review when P(OFF = true) >= 0.9: ")
    assert review.endswith("98% of the texts it flagged (sent to review or removed) were OFF = true (95% interval "
                           "90%–100%) and it flagged 96% of them (87%–100%)")


def test_a_decision_dev_meets_in_no_band_leaves_no_policy():
    dev = dev_of([True, False, False, True, False, False])  # 0.9 and 0.4 offensive: precision 1 at 0.9, recall 1 at 0.4
    task = TaskConfig("OFF", source="OFF", temperature=1, confidence_map="none",
                      decision=DecisionConfig(precision=0.999, flagged=0.01))  # 0.9 alone flags 1/6 already
    half = calibrate([task], Fixed(), {"train": [], "dev": dev})
    assert half.decisions["OFF"]["remove"]["threshold"] == 0.9 and half.decisions["OFF"]["review"] is None
    none = calibrate([replace(task, decision=DecisionConfig(precision=0.999, recall=0.999))], Fixed(),
                     {"train": [], "dev": dev_of([False] * len(SCORES))})
    # no band at all: the model keeps no policy (a policy of no bands would state "allow" on every row)
    assert "OFF" not in none.decisions
    assert "precision=0.999" in none.decision_errors["OFF"] and "recall=0.999" in none.decision_errors["OFF"]


def test_the_bootstrap_drawn_a_chunk_at_a_time_is_the_same(monkeypatch):
    # 5 texts, 4 draws held at once: every resample is its own chunk, and the interval is the one drawn whole
    counts = sequence_counts([0.9, 0.8, 0.7, 0.4, 0.2], [True, False, True, True, False])
    whole = bootstrap_interval(counts, 0.7, samples=300, seed=4)
    monkeypatch.setattr(operating_points, "BOOTSTRAP_DRAWS_HELD", 4)
    assert bootstrap_interval(counts, 0.7, samples=300, seed=4) == whole
    monkeypatch.setattr(operating_points, "BOOTSTRAP_DRAWS_HELD", 7 * 5)
    assert bootstrap_interval(counts, 0.7, samples=300, seed=4) == whole


def reference_optimism(counts, target, value, samples, seed):
    """`selection_optimism` the slow way: each resample's texts repeated, `threshold_table` and `choose` on them."""
    rng, n, gaps = np.random.default_rng([seed, 1]), counts.tp.shape[1], []
    here = {row["threshold"]: row["precision"] for row in threshold_table(counts)}
    for _ in range(samples):
        draws = rng.multinomial(n, np.full(n, 1.0 / n))
        keep = np.repeat(np.arange(n), draws)
        drawn = operating_points.Counts(counts.thresholds, counts.tp[:, keep], counts.flagged[:, keep],
                                        counts.positives[keep], counts.texts_flagged[:, keep], counts.benign[keep])
        try:
            row = choose(threshold_table(drawn), target, value)
        except UnreachableTargetError:
            continue
        if row["precision"] is not None and here[row["threshold"]] is not None:
            gaps.append(row["precision"] - here[row["threshold"]])
    return round(float(np.mean(gaps)), 4) if gaps else 0.0


@pytest.mark.parametrize("target, value", [("precision", 0.9), ("precision", 0.7), ("recall", 0.9), ("f1", None),
                                           ("flagged", 0.3)])
def test_selection_optimism_is_choose_on_each_resample(target, value):
    rng = np.random.default_rng(3)
    scores = rng.random(40)
    gold = rng.random(40) < 0.3 + 0.4 * scores  # a weak signal: the chosen place is partly luck
    counts = sequence_counts(scores, gold)
    fast = operating_points.selection_optimism(counts, target, value, samples=150, seed=5)
    assert fast == pytest.approx(reference_optimism(counts, target, value, 150, 5), abs=1e-4)


def test_a_band_chosen_on_a_weak_signal_promises_less_than_the_fixed_threshold_bootstrap():
    # a weak signal on 80 texts: precision 0.8 is met where some lucky texts sit, and the choice flatters it
    rng = np.random.default_rng(4)
    scores = rng.random(80)
    counts = sequence_counts(scores, rng.random(80) < 0.3 + 0.4 * scores)
    band = decision_band(counts, "precision", 0.8, "dev.jsonl", "0" * 64, samples=300)
    plain = bootstrap_interval(counts, band["threshold"], samples=300)["precision"]
    optimism = operating_points.selection_optimism(counts, "precision", 0.8, samples=300)
    assert optimism > 0.02
    assert band["precision_interval"] == [round(plain[0] - optimism, 4), plain[1]]
