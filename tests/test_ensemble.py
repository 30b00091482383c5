"""Ensembles: hand-checked averaging on stand-in members, then two trained models through the CLI."""
import json

import numpy as np
import pytest

from kold_span.cli import main
from kold_span.config.loading import load_config
from kold_span.inference.ensemble import Ensemble
from kold_span.inference.predictor import Predictor, PredictorSettings
from kold_span.models.kinds import MergedExample
from kold_span.models.tasks import Task
from kold_span.training.run import train

from conftest import FIXTURE, TINY

LABEL = Task("OFF", "sequence", "OFF", labels=("false", "true"))
GROUPS = Task("GRP", "sequence", "GRP", problem="multi", labels=("a", "b"))
SPAN = Task("OFF_span", "span", "OFF")


class Member:
    """Stands in for a Predictor: fixed tasks, fixed merged outputs for the text "ab cd"; its stages pass texts on."""

    def __init__(self, tasks, sequence=None, token_probs=None, offsets=((0, 2), (3, 5)), perspective=None):
        self.tasks = list(tasks)
        self.settings, self.precision = PredictorSettings(snap="none", perspective=perspective), "fp32"
        self.output = MergedExample(sequence_probs={k: np.array(v) for k, v in (sequence or {}).items()},
                                    token_offsets=list(offsets),
                                    token_probs={k: np.array(v) for k, v in (token_probs or {}).items()})

    def encode(self, texts, contexts):
        return list(texts)

    def prepare(self, encoded, batch_size):
        return encoded

    def run_network(self, prepared):
        return None

    def merge(self, prepared, outputs):
        return [self.output for _ in prepared]


def test_probabilities_are_averaged_and_decoded_once():
    tasks = [LABEL, SPAN]
    first = Member(tasks, {"OFF": [0.6, 0.4]}, {"OFF_span": [[0.9, 0.1, 0.0], [0.55, 0.4, 0.05]]})
    second = Member(tasks, {"OFF": [0.3, 0.7]}, {"OFF_span": [[0.1, 0.8, 0.1], [0.3, 0.6, 0.1]]})
    out = Ensemble([first, second]).predict(["ab cd"])[0]
    # OFF: mean (0.45, 0.55) → true, though the first member alone says false
    assert out["labels"]["OFF"] == {"label": True, "probs": {"false": 0.45, "true": 0.55}}
    # "ab": mean (0.5, 0.45, 0.05) → O (the second member alone marks it); "cd": (0.425, 0.5, 0.075) → B
    # (the first member alone leaves it out)
    assert [(s["start"], s["end"]) for s in out["spans"]] == [(3, 5)]


def test_thresholds_are_the_members_mean():
    span_a, span_b = Task("OFF_span", "span", "OFF", thresholds=(0.3,)), Task("OFF_span", "span", "OFF",
                                                                            thresholds=(0.5,))
    groups_tuned = Task("GRP", "sequence", "GRP", problem="multi", labels=("a", "b"), thresholds=(0.2, 0.6))
    first = Member([groups_tuned, span_a], {"GRP": [0.3, 0.5]}, {"OFF_span": [[0.5, 0.4, 0.1], [0.9, 0.1, 0.0]]})
    second = Member([GROUPS, span_b], {"GRP": [0.2, 0.7]}, {"OFF_span": [[0.6, 0.3, 0.1], [0.9, 0.1, 0.0]]})
    ensemble = Ensemble([first, second])
    # GRP: (0.2, 0.6) and the untuned member's 0.5 → (0.35, 0.55); span: (0.3 + 0.5) / 2
    assert ensemble.tasks[0].thresholds == pytest.approx((0.35, 0.55))
    assert ensemble.tasks[1].thresholds == pytest.approx((0.4,))
    out = ensemble.predict(["ab cd"])[0]
    # mean GRP probabilities (0.25, 0.6): a under 0.35 (the first member's 0.2 would take it), b over 0.55
    assert out["labels"]["GRP"]["label"] == ["b"]
    # "ab": mean (0.55, 0.35, 0.1), O by the most probable tag, but P(B) + P(I) = 0.45 reaches 0.4
    assert [(s["start"], s["end"]) for s in out["spans"]] == [(0, 2)]


def test_members_must_agree_on_tasks_and_tokens():
    with pytest.raises(ValueError, match="at least two models"):
        Ensemble([Member([LABEL])])
    with pytest.raises(ValueError, match="m2 predicts other tasks than m1"):
        Ensemble([Member([LABEL]), Member([Task("OFF", "sequence", "OFF", labels=("no", "yes"))])], ["m1", "m2"])
    with pytest.raises(ValueError, match="differ in data.perspective"):
        Ensemble([Member([LABEL]), Member([LABEL], perspective={"label": "irony", "traits": ["age"]})])
    tuned = Task("OFF_span", "span", "OFF", thresholds=(0.4,))
    with pytest.raises(ValueError, match=r"threshold in some members but not in \['m2'\]"):
        Ensemble([Member([tuned]), Member([SPAN])], ["m1", "m2"])
    probs = {"OFF_span": [[1, 0, 0], [1, 0, 0]]}
    other_tokens = Ensemble([Member([SPAN], token_probs=probs), Member([SPAN], token_probs=probs,
                                                                       offsets=((0, 1), (1, 2)))], ["m1", "m2"])
    with pytest.raises(ValueError, match="text 0: m2 splits it into other tokens than m1"):
        other_tokens.predict(["ab cd"])


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("ensemble")
    dirs = []
    for seed in (7, 8):
        config = load_config(TINY, [f"output_dir={out}", f"run=seed{seed}", f"seed={seed}", "data.limit=16",
                                    "trainer.max_epochs=4", f"data.train={FIXTURE}"])
        dirs.append(train(config, quiet=True).model_dir)
    return dirs


@pytest.mark.slow
def test_predict_cli_with_two_models_averages_them(two_models, tmp_path):
    (tmp_path / "in.txt").write_text("정말 한심한 사람들이네\n좋은 기사 감사합니다\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["predict", "--model", *map(str, two_models), "--input", str(tmp_path / "in.txt"),
                 "--output", str(out), "--quiet"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    singles = [Predictor.from_pretrained(d).predict(["정말 한심한 사람들이네", "좋은 기사 감사합니다"]) for d in two_models]
    # the seeds must disagree somewhere, or the mean could not be told from either member
    assert max(abs(a["labels"]["OFF"]["probs"]["true"] - b["labels"]["OFF"]["probs"]["true"])
               for a, b in zip(*singles)) > 1e-4  # ten times the tolerance the mean is checked to
    for i, row in enumerate(rows):
        mean = np.mean([[s[i]["labels"]["OFF"]["probs"][k] for k in ("false", "true")] for s in singles], axis=0)
        assert [row["labels"]["OFF"]["probs"][k] for k in ("false", "true")] == pytest.approx(mean, abs=1e-5)
        for span in row["spans"]:
            assert row["text"][span["start"]:span["end"]] == span["text"]
