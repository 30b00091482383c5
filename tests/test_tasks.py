"""Task vocabularies, class-balanced loss weights, multi-label and span thresholds (hand-checked values)."""
import math

import numpy as np
import pytest
import torch

from kold_span.config.loading import load_config
from kold_span.config.schema import TaskConfig
from kold_span.data.example import Example
from kold_span.data.jsonl import write_jsonl
from kold_span.errors import ConfigError
from kold_span.evaluation.task_scores import score
from kold_span.inference.predictor import Predictor
from kold_span.models.kinds import Decoding, MergedExample, build_tasks
from kold_span.models.kinds.problems import balanced_weights, positive_weights
from kold_span.models.kinds.problems import label_thresholds, sequence_prediction
from kold_span.models.kinds.span import span_tags, span_threshold, task_spans
from kold_span.models.network import task_loss
from kold_span.models.tasks import THRESHOLD_GRID, Task
from kold_span.training.run import train

from conftest import DEMO, FIXTURE, TINY


def examples(labels):
    return [Example(id=str(i), text="t", labels={} if y is None else {"y": y}) for i, y in enumerate(labels)]


def test_balanced_weights_are_n_over_classes_times_count():
    # n = 6 labelled (the None is not counted), k = 3: a 3×, b 2×, c 1× → 6/9, 6/6, 6/3
    weights = balanced_weights(examples(["a", "b", "a", None, "c", "a", "b"]), "y", ("a", "b", "c"))
    assert weights == pytest.approx((2 / 3, 1.0, 2.0))
    # a label fixed in the config but absent from training gets 1; the seen ones share n = 2 over k = 2
    assert balanced_weights(examples(["a", "a"]), "y", ("a", "z")) == pytest.approx((0.5, 1.0))


def test_build_tasks_sets_weights_only_when_asked():
    exs = examples(["a", "a", "a", "b"])
    plain, weighted = build_tasks([TaskConfig(name="p", source="y"),
                                   TaskConfig(name="w", source="y", class_weight="balanced")], exs)
    assert plain.class_weights == ()
    assert weighted.class_weights == pytest.approx((4 / 6, 2.0))
    assert Task.from_dict(weighted.to_dict()) == weighted


def test_weighted_loss_is_the_weighted_mean_of_the_per_example_losses():
    task = Task("w", "sequence", "y", labels=("a", "b"), class_weights=(0.5, 2.0))
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    batch = {"target_w": torch.tensor([0, 1, -100])}  # the third example has no label
    nll_a = -math.log(math.exp(2) / (math.exp(2) + 1))  # example 1, gold a
    nll_b = -math.log(math.exp(1) / (1 + math.exp(1)))  # example 2, gold b
    expected = (0.5 * nll_a + 2.0 * nll_b) / (0.5 + 2.0)
    assert task_loss(task, logits, batch).item() == pytest.approx(expected, rel=1e-6)
    unweighted = Task("u", "sequence", "y", labels=("a", "b"))
    assert task_loss(unweighted, logits, {"target_u": batch["target_w"]}).item() == pytest.approx((nll_a + nll_b) / 2)


def test_positive_weights_are_negatives_over_positives_per_label():
    # 5 labelled examples (the unlabelled one is not counted): a in 4 → 1/4, b in 1 → 4/1, c in none → 1
    exs = [Example(id=str(i), text="t", labels=labels) for i, labels in enumerate(
        [{"g": ["a"]}, {"g": ["a", "b"]}, {"g": ["a"]}, {"g": ["a"]}, {"g": []}, {}])]
    assert positive_weights(exs, "g", ("a", "b", "c")) == pytest.approx((0.25, 4.0, 1.0))
    [task] = build_tasks([TaskConfig(name="m", source="g", problem="multi", class_weight="balanced")], exs)
    assert task.labels == ("a", "b") and task.class_weights == pytest.approx((0.25, 4.0))


def test_multilabel_weighted_loss_weighs_only_the_positive_terms():
    task = Task("m", "sequence", "g", problem="multi", labels=("a", "b"), class_weights=(1.0, 3.0))
    logits = torch.tensor([[0.0, 1.0], [2.0, -1.0]])
    batch = {"target_m": torch.tensor([[1.0, 1.0], [0.0, 0.0]]), "mask_m": torch.tensor([1.0, 1.0])}

    def nll(z, positive):  # -log sigmoid(z) for a positive, -log(1 - sigmoid(z)) for a negative
        p = 1 / (1 + math.exp(-z))
        return -math.log(p if positive else 1 - p)
    row1 = (nll(0.0, True) + 3.0 * nll(1.0, True)) / 2  # both positive: b's term × 3
    row2 = (nll(2.0, False) + nll(-1.0, False)) / 2  # negatives are not weighted
    assert task_loss(task, logits, batch).item() == pytest.approx((row1 + row2) / 2, rel=1e-6)


def test_class_weight_on_a_span_task_is_a_config_error():
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.class_weight"):
        load_config(DEMO, ["tasks=[{name: s, kind: span, source: OFF, class_weight: balanced}]"])
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.class_weight"):
        load_config(DEMO, ["tasks=[{name: c, source: OFF, class_weight: inverse}]"])


# --------------------------------------------------------------------------- multi-label thresholds

def multi_task(**kw):
    return Task("g", "sequence", "g", problem="multi", labels=("a", "b", "c"), **kw)


def test_tune_thresholds_maximises_each_labels_f1():
    golds = [["a"], ["a", "b"], [], ["b"]]
    probs = [[0.30, 0.40, 0.9], [0.60, 0.20, 0.8], [0.25, 0.10, 0.7], [0.10, 0.45, 0.1]]
    # a: gold on rows 0, 1 (0.30, 0.60); row 2 has 0.25. t=0.3 → tp 2, predicted 2 → F1 1.0;
    #    t=0.25 predicts row 2 too (F1 0.8), t=0.5 only row 1 (F1 2/3).
    # b: gold on rows 1, 3 (0.20, 0.45); row 0 has 0.40. Best: t=0.2 → predicted 3, tp 2 → F1 0.8
    #    (t=0.45 → 1 predicted, tp 1 → 2/3; t=0.4 → rows 0, 3, tp 1 → 0.5).
    # c: no gold positive on dev → stays 0.5.
    assert label_thresholds(multi_task(), golds, probs) == (0.3, 0.2, 0.5)


def test_tune_thresholds_ties_go_to_the_threshold_nearest_half():
    # a single positive at 0.9 and a negative at 0.1: every t in (0.1, 0.9] gives F1 1.0
    assert label_thresholds(multi_task(), [["a"], []], [[0.9, 0, 0], [0.1, 0, 0]])[0] == 0.5


def test_sequence_prediction_uses_the_tasks_thresholds():
    probs = np.array([0.3, 0.6, 0.5])
    assert sequence_prediction(multi_task(), probs)["label"] == ["b", "c"]  # 0.5 by default, inclusive
    tuned = multi_task(thresholds=(0.25, 0.7, 0.5))
    assert sequence_prediction(tuned, probs)["label"] == ["a", "c"]
    assert Task.from_dict(tuned.to_dict()) == tuned
    assert Task.from_dict({k: v for k, v in multi_task().to_dict().items() if k != "thresholds"}) == multi_task()


def test_fixed_threshold_is_set_at_build_time():
    exs = [Example(id="1", text="t", labels={"g": ["a"]}), Example(id="2", text="t", labels={"g": ["a", "b"]})]
    fixed, tuned_later = build_tasks([TaskConfig(name="f", source="g", problem="multi", threshold=0.3),
                                      TaskConfig(name="d", source="g", problem="multi", threshold="dev")], exs)
    assert fixed.thresholds == (0.3, 0.3)
    assert tuned_later.thresholds == ()


@pytest.mark.parametrize("task, message", [
    ("{name: c, source: OFF, threshold: 0.3}", "applies to span tasks and multi-label"),
    ("{name: c, kind: span, source: OFF, threshold: 0}", "must be a number in \\(0, 1\\) or 'dev'"),
    ("{name: c, source: OFF, problem: multi, threshold: 1.5}", "must be a number in \\(0, 1\\) or 'dev'"),
    ("{name: c, source: OFF, problem: multi, threshold: best}", "must be a number in \\(0, 1\\) or 'dev'"),
])
def test_bad_thresholds_are_config_errors(task, message):
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.threshold " + message):
        load_config(DEMO, [f"tasks=[{task}]"])


def test_dev_threshold_without_a_dev_split_is_a_config_error():
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.threshold: dev needs a dev split"):
        load_config(DEMO, ["data.dev_fraction=0", "tasks=[{name: c, source: OFF, problem: multi, threshold: dev}]"])


@pytest.mark.slow
def test_training_with_dev_thresholds_saves_them_with_the_model(tmp_path):
    rows = [("a b", ["x"]), ("a c", ["x"]), ("b d", ["y"]), ("c d", ["x", "y"]), ("e", [])] * 6
    write_jsonl([Example(id=str(i), text=t, labels={"g": g}) for i, (t, g) in enumerate(rows)], tmp_path / "m.jsonl")
    config = load_config(TINY, [
        f"output_dir={tmp_path}", "run=r", "data.reader=jsonl", f"data.train={tmp_path / 'm.jsonl'}",
        "data.dev_fraction=0.34", "trainer.max_epochs=2", "model.encoder.scratch.morpheme_pretokenize=false",
        "tasks=[{name: g, source: g, problem: multi, threshold: dev}]"])
    result = train(config, quiet=True)
    saved = Predictor.from_pretrained(result.model_dir).tasks[0]
    assert len(saved.thresholds) == 2 and all(0 < t < 1 for t in saved.thresholds)
    assert result.metrics["thresholds"] == {"g": dict(zip(saved.labels, saved.thresholds))}


# --------------------------------------------------------------------------- span thresholds

def span_task(*thresholds):
    return Task("s", "span", "OFF", thresholds=tuple(thresholds))


def merged(*rows):
    """One example "ab cd ef" whose three words are its tokens, with (O, B, I) probabilities."""
    return MergedExample(token_offsets=[(0, 2), (3, 5), (6, 8)], token_probs={"s": np.array(rows, dtype=float)})


def test_span_tags_threshold_on_inside_probability():
    probs = np.array([[0.40, 0.35, 0.25], [0.30, 0.20, 0.50], [0.90, 0.05, 0.05]])
    assert span_tags(span_task(), probs) == ["O", "I", "O"]  # most probable tag
    # inside = 0.60, 0.70, 0.10: at 0.5 the first two are inside, B or I by the likelier of the two
    assert span_tags(span_task(0.5), probs) == ["B", "I", "O"]
    assert span_tags(span_task(0.65), probs) == ["O", "I", "O"]
    assert span_tags(span_task(0.05), probs) == ["B", "I", "B"]  # B and I tie at 0.05: B


def test_task_spans_decode_with_the_threshold():
    m = merged([0.40, 0.35, 0.25], [0.30, 0.20, 0.50], [0.90, 0.05, 0.05])
    assert [(s["start"], s["end"]) for s in task_spans(span_task(), m, "ab cd ef")] == [(3, 5)]
    assert [(s["start"], s["end"]) for s in task_spans(span_task(0.5), m, "ab cd ef")] == [(0, 5)]


def example_with(spans):
    return Example(id="1", text="ab cd ef", spans={"OFF": spans})


def test_tune_span_threshold_maximises_mean_char_f1():
    # gold "cd"; inside = 0.35, 0.45, 0.10. t=0.3: "ab" and "cd" → P 1/2, R 1 → F1 2/3;
    # t=0.4: "cd" → F1 1; t=0.5: nothing → 0.
    m = merged([0.65, 0.35, 0.0], [0.55, 0.45, 0.0], [0.9, 0.1, 0.0])
    tuned = span_threshold(span_task(), Decoding([span_task()]), [example_with([(3, 5)])], [m], grid=(0.3, 0.4, 0.5))
    assert tuned == 0.4


def test_tune_span_threshold_counts_empty_gold_and_breaks_ties_towards_half():
    # a second example with no gold span and inside 0.45 on "ab": right only when nothing is marked.
    # Means: t=0.3 → (2/3 + 0) / 2, t=0.4 → (1 + 0) / 2, t=0.5 → (0 + 1) / 2: 0.4 and 0.5 tie.
    first = merged([0.65, 0.35, 0.0], [0.55, 0.45, 0.0], [0.9, 0.1, 0.0])
    second = merged([0.55, 0.45, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0])
    exs = [example_with([(3, 5)]), example_with([])]
    assert span_threshold(span_task(), Decoding([span_task()]), exs, [first, second], grid=(0.3, 0.4, 0.5)) == 0.5
    # the scores the model reports follow the task's threshold
    assert score(Decoding([span_task(0.4)]), exs, [first, second])["s/char_f1"] == pytest.approx(0.5)
    assert score(Decoding([span_task(0.3)]), exs, [first, second])["s/char_f1"] == pytest.approx(1 / 3)


def test_fixed_span_threshold_is_set_at_build_time():
    exs = [Example(id="1", text="ab", spans={"OFF": [(0, 2)]})]
    fixed, default, later = build_tasks([TaskConfig(name="f", kind="span", source="OFF", threshold=0.3),
                                         TaskConfig(name="a", kind="span", source="OFF"),
                                         TaskConfig(name="d", kind="span", source="OFF", threshold="dev")], exs)
    assert (fixed.thresholds, default.thresholds, later.thresholds) == ((0.3,), (), ())


@pytest.mark.slow
def test_training_with_a_dev_span_threshold_saves_it_with_the_model(tmp_path):
    config = load_config(TINY, [
        f"output_dir={tmp_path}", "run=r", f"data.train={FIXTURE}",
        "data.limit=24", "data.dev_fraction=0.34", "trainer.max_epochs=3",
        "tasks=[{name: OFF_span, kind: span, source: OFF, threshold: dev}]"])
    result = train(config, quiet=True)
    saved = Predictor.from_pretrained(result.model_dir).tasks[0]
    assert len(saved.thresholds) == 1 and saved.thresholds[0] in THRESHOLD_GRID
    assert result.metrics["thresholds"] == {"OFF_span": {"inside": saved.thresholds[0]}}
