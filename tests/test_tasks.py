"""Task vocabularies and class-balanced loss weights (hand-checked values)."""
import math

import pytest
import torch

from kold_span.config import ConfigError, TaskConfig, load_config
from kold_span.data import Example
from kold_span.model import task_loss
from kold_span.tasks import Task, balanced_weights, build_tasks


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


def test_class_weight_on_a_span_task_is_a_config_error():
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.class_weight"):
        load_config("configs/experiment/demo.yaml",
                    ["tasks=[{name: s, kind: span, source: OFF, class_weight: balanced}]"])
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.class_weight"):
        load_config("configs/experiment/demo.yaml", ["tasks=[{name: c, source: OFF, class_weight: inverse}]"])
