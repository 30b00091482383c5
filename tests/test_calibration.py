"""Calibration returns what it chose; applying it makes a new predictor and leaves the trained one as it was."""
import pytest

from kold_span.config.loading import load_config
from kold_span.config.schema import ScratchEncoderConfig
from kold_span.data.example import Example
from kold_span.inference.predictor import Predictor
from kold_span.models.backbones import scratch_encoder
from kold_span.models.network import MultiTaskModel
from kold_span.models.kinds.problems import label_thresholds
from kold_span.models.ngram import Companion, NgramBaseline, NgramScorer
from kold_span.models.tasks import Task
from kold_span.training.calibration import Calibration, calibrate

from conftest import TINY

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
GROUPS = Task("groups", "sequence", "groups", problem="multi", labels=("women", "men", "old"))
SPAN = Task("OFF_span", "span", "OFF", gate="OFF")


def tiny_predictor(companions=None):
    encoder = scratch_encoder(ScratchEncoderConfig(hidden_size=8, layers=1, heads=1, intermediate_size=8,
                                                   max_position=16), vocab_size=20, pad_id=0)
    tasks = [OFF, GROUPS, SPAN]
    return Predictor(MultiTaskModel(encoder, tasks), None, tasks, companions=companions)


def companion(weight):
    pairs = [("you idiot", True), ("nice day", False), ("what an idiot", True), ("a nice game", False)]
    examples = [Example(str(i), text, labels={"OFF": off}) for i, (text, off) in enumerate(pairs)]
    ngram = NgramBaseline("OFF", "single").fit(examples)
    return Companion("OFF", weight, NgramScorer.from_baseline(ngram))


def test_thresholds_are_set_in_each_tasks_label_order():
    trained = tiny_predictor()
    # Given out of label order: the task's label order decides.
    chosen = Calibration(thresholds={"groups": {"old": 0.7, "women": 0.3, "men": 0.4}, "OFF_span": {"inside": 0.35}})
    calibrated = chosen.apply_to(trained)
    assert [t.thresholds for t in calibrated.tasks] == [(), (0.3, 0.4, 0.7), (0.35,)]
    assert [t.thresholds for t in trained.tasks] == [(), (), ()]
    assert calibrated.model is trained.model and calibrated is not trained


def test_the_dev_view_carries_the_train_only_ngram_and_the_saved_model_the_refitted_one():
    other = companion(0.9)
    trained = tiny_predictor(companions={"elsewhere": other})
    dev_only, refitted = companion(0.4), companion(0.4)
    chosen = Calibration(companions={"OFF": refitted}, dev_companions={"OFF": dev_only})

    def attached(predictor):
        return {task: id(c) for task, c in predictor.companions.items()}

    assert attached(chosen.apply_to(trained)) == {"elsewhere": id(other), "OFF": id(refitted)}
    assert attached(chosen.apply_to(trained, dev=True)) == {"elsewhere": id(other), "OFF": id(dev_only)}
    assert attached(trained) == {"elsewhere": id(other)}


def test_nothing_asked_nothing_chosen():
    config = load_config(TINY)
    assert calibrate(config.tasks, tiny_predictor(), {"train": [], "dev": [], "test": []}) == Calibration()
    with pytest.raises(KeyError):  # a threshold for a label the task lacks is a bug, not a silent default
        Calibration(thresholds={"groups": {"women": 0.3}}).apply_to(tiny_predictor())


def test_calibrate_takes_task_settings_and_runs_dev_through_the_encoder_once():
    """No whole Config: the task settings, the predictor and the splits; the n-gram fused before thresholds."""
    import numpy as np

    from kold_span.config.schema import TaskConfig
    from kold_span.models.kinds import Decoding, MergedExample

    groups = Task("groups", "sequence", "groups", problem="multi", labels=("a", "b"))

    class Flat:
        tasks, companions, decoding, passes = [groups], {}, Decoding([groups]), 0

        def merged_outputs(self, texts, contexts, batch_size=32):
            Flat.passes += 1
            return [MergedExample({"groups": np.array([0.3, 0.3])}) for _ in texts]

    def make(i, labels):
        return Example(str(i), " ".join(labels) or "none", labels={"groups": labels})

    golds = [["a"], ["b"], ["a", "b"], []]
    splits = {"train": [make(i, g) for i, g in enumerate(golds * 3)],
              "dev": [make(100 + i, g) for i, g in enumerate(golds)]}
    task = TaskConfig("groups", source="groups", problem="multi", threshold="dev", fuse_ngram=True, temperature=1)
    chosen = calibrate([task], Flat(), splits, allow_context=False)
    assert Flat.passes == 1
    # the flat encoder tells nothing, the n-gram reads the label names: dev prefers some n-gram
    assert chosen.fusion["groups"]["weight"] < 1.0 and chosen.fusion["groups"]["ngram_context"] is False
    # tuned on dev fused with the train-only n-gram (the saved one is refitted on train + dev)
    dev_only = chosen.dev_companions["groups"]
    fused = [dev_only.fuse_array(groups.labels, np.array([0.3, 0.3]), p)
             for p in dev_only.ngram_probs([e.text for e in splits["dev"]], [""] * 4)]
    expected = label_thresholds(groups, golds, fused)
    assert chosen.thresholds["groups"] == dict(zip(groups.labels, expected)) != {"a": 0.3, "b": 0.3}
    assert chosen.companions["groups"] is not dev_only
    assert calibrate([TaskConfig("groups", source="groups", problem="multi", temperature=1)], Flat(),
                     splits) == Calibration()
