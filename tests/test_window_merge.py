"""A long text's sequence probabilities from its windows (`SequenceKind.merge`): a true/false label or a
multi-label task's label is there when any window finds it; other tasks average their windows."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.models.kinds import MergedExample, kind_of
from kold_span.models.tasks import Task

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
FLIPPED = Task("OFF", "sequence", "OFF", labels=("true", "false"))
TGT = Task("TGT", "sequence", "TGT", labels=("group", "individual", "other"))
GROUPS = Task("GRP", "sequence", "GRP", labels=("women", "men", "lgbt"), problem="multi")
VOTES = Task("irony", "sequence", "irony", labels=("false", "true"), problem="soft")


def merged(task, windows):
    out = MergedExample({})
    kind_of(task).merge(task, [{task.name: np.array(w, dtype=np.float32)} for w in windows], [], out)
    return out.sequence_probs[task.name]


def test_a_true_false_label_is_there_when_one_window_finds_it():
    # a long benign comment ending in an insult: the mean, 0.383, would call it benign; its last window is sure
    windows = [[0.9, 0.1], [0.95, 0.05], [0.0, 1.0]]
    assert merged(OFF, windows) == pytest.approx([0.0, 1.0])
    assert merged(FLIPPED, [w[::-1] for w in windows]) == pytest.approx([1.0, 0.0])  # found by name, not place
    assert merged(OFF, [[0.9, 0.1], [0.7, 0.3]]) == pytest.approx([0.7, 0.3])


def test_a_multi_label_task_takes_each_labels_highest_window():
    assert merged(GROUPS, [[0.1, 0.8, 0.2], [0.6, 0.1, 0.3]]) == pytest.approx([0.6, 0.8, 0.3])


def test_other_tasks_average_their_windows():
    assert merged(TGT, [[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]) == pytest.approx([0.4, 0.25, 0.35])
    assert merged(VOTES, [[0.6, 0.4], [0.2, 0.8]]) == pytest.approx([0.4, 0.6])  # a vote share is no presence


@pytest.mark.parametrize("task, window", [(OFF, [0.3, 0.7]), (TGT, [0.2, 0.5, 0.3]), (GROUPS, [0.1, 0.9, 0.4]),
                                          (VOTES, [0.25, 0.75])], ids=["single", "three", "multi", "soft"])
def test_one_window_is_the_text(task, window):
    assert merged(task, [window]).tolist() == np.array(window, dtype=np.float32).tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12))
def test_p_true_is_the_surest_window_and_the_row_a_distribution(p_true):
    out = merged(OFF, [[1 - p, p] for p in p_true])
    assert out[1] == pytest.approx(max(p_true), abs=1e-6) and out.sum() == pytest.approx(1.0, abs=1e-6)
