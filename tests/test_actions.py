"""The review band: each prediction row, /v1/predict answer, /info and spaCy doc states allow, review or remove."""
import time

import pytest

from kold_span.inference.predictor import Predictor
from kold_span.training.calibration import Calibration

from conftest import untrained_model

TEXTS = ["이 쓰레기 같은 정치인들", "좋은 기사 감사합니다"]


def band(threshold):
    return {"threshold": threshold, "target": "precision=0.9", "precision": 0.9, "recall": 0.5, "f1": 0.6,
            "flagged": 0.2, "benign_flagged": None, "precision_interval": [0.85, 0.95], "recall_interval": [0.4, 0.6],
            "bootstrap": {"samples": 1000, "seed": 0, "level": 0.95}, "examples": 100, "data": "dev.jsonl",
            "data_sha256": "ab" * 32, "date": "2026-12-06T07:00:00Z"}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("plain") / "model")


def with_policy(plain, out, off, span=None):
    decisions = {"OFF": off} if span is None else {"OFF": off, "OFF_span": span}
    return Calibration(decisions=decisions).apply_to(Predictor.from_pretrained(plain)).save_pretrained(out)


def test_the_action_follows_the_bands(plain, tmp_path):
    everything = Predictor.from_pretrained(with_policy(plain, tmp_path / "a", {"label": "true", "remove": band(0.0)}))
    assert [row["actions"] for row in everything.predict(TEXTS)] == [{"OFF": "remove"}] * 2
    review = with_policy(plain, tmp_path / "b", {"label": "true", "remove": band(1.0), "review": band(0.0)},
                         span={"label": None, "remove": band(1.0)})
    rows = Predictor.from_pretrained(review).predict(TEXTS)
    assert [row["actions"] for row in rows] == [{"OFF": "review", "OFF_span": "allow"}] * 2
    assert "actions" not in Predictor.from_pretrained(plain).predict(TEXTS)[0]  # no policy, no key: rows as before


def test_a_span_task_removes_when_its_threshold_decodes_a_span(plain, tmp_path):
    model = with_policy(plain, tmp_path / "s", {"label": "false", "remove": band(1.0)},
                        span={"label": None, "remove": band(0.0)})
    rows = Predictor.from_pretrained(model).predict(TEXTS)
    assert [row["actions"] for row in rows] == [{"OFF": "allow", "OFF_span": "remove"}] * 2


def test_a_bad_policy_in_config_json_is_named(plain, tmp_path):
    import json

    from kold_span.errors import ModelFormatError
    from kold_span.models.manifest import write_manifest

    model = with_policy(plain, tmp_path / "bad", {"label": "true", "remove": band(0.2), "review": band(0.7)})
    with pytest.raises(ModelFormatError, match="review's threshold 0.7 is above remove's 0.2"):
        Predictor.from_pretrained(model)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config["tasks"][0]["decision"] = {"label": "true", "remove": {"threshold": 2}}
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_manifest(model)
    with pytest.raises(ModelFormatError, match="remove must be an object with a threshold in"):
        Predictor.from_pretrained(model)


def test_serve_answers_with_actions_and_info_states_the_promise(plain, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from kold_span.inference.ensemble import load_predictor
    from kold_span.service.app import Settings, create_app

    model = with_policy(plain, tmp_path / "served", {"label": "true", "remove": band(0.0), "review": None})
    with TestClient(create_app(Settings(models=(str(model),)), lambda: load_predictor([model]))) as client:
        for _ in range(3000):  # at most 30 s for the model to load and warm
            if client.get("/health").status_code == 200:
                break
            time.sleep(0.01)
        answer = client.post("/v1/predict", json={"comments": [{"text": TEXTS[0]}]}).json()
        assert answer["predictions"][0]["actions"] == {"OFF": "remove"}
        off = client.get("/info").json()["tasks"][0]
    assert off["policy"]["remove"]["threshold"] == 0.0 and off["policy"]["review"] is None
    assert off["policy_in_words"] == [
        "remove when P(OFF = true) >= 0: on 100 texts of dev.jsonl (sha256 abababab…, 2026-12-06), 90% of the texts "
        "it removed were OFF = true (95% interval 85%–95%) and it removed 50% of them (40%–60%)"]


def test_a_spacy_doc_carries_the_actions(plain, tmp_path):
    spacy = pytest.importorskip("spacy")
    import kold_span.integrations.spacy_component  # noqa: F401  registers the factory

    model = with_policy(plain, tmp_path / "sp", {"label": "true", "remove": band(0.0)})
    nlp = spacy.blank("xx")
    nlp.add_pipe("kold_span", config={"model": str(model)})
    assert nlp(TEXTS[0])._.kold_actions == {"OFF": "remove"}
    plain_nlp = spacy.blank("xx")
    plain_nlp.add_pipe("kold_span", config={"model": str(plain)})
    assert plain_nlp(TEXTS[0])._.kold_actions == {}


def test_an_ensemble_keeps_a_policy_only_when_its_members_share_it(plain, tmp_path, caplog):
    from kold_span.inference.ensemble import load_predictor

    same = with_policy(plain, tmp_path / "same", {"label": "true", "remove": band(0.0)})
    other = with_policy(plain, tmp_path / "other", {"label": "true", "remove": band(0.5)})
    with caplog.at_level("WARNING", logger="kold_span"):
        assert load_predictor([same, same]).tasks[0].decision["remove"]["threshold"] == 0.0
        assert not caplog.records
        mixed = load_predictor([same, other])
    assert mixed.tasks[0].decision is None and "actions" not in mixed.predict(TEXTS)[0]
    # a moderator who asked for actions is told why the rows have none
    assert [r.getMessage() for r in caplog.records] == [
        f"task 'OFF': the members' decision policies differ ({same}, {other}): the ensemble has none, its rows state "
        "no actions"]


TOKENS = ["너", "는", " ", "진짜", "바보", ".", "ㅋㅋ", "  ", "를", "!"]


@pytest.mark.parametrize("snap", ["none", "eojeol", "word"])
def test_a_span_tasks_score_is_the_highest_threshold_that_decodes_a_span(snap):
    """Flagged at t (a span decoded, as the predictor decodes) exactly when the score reaches t: random texts of
    words, spaces and punctuation with random O/B/I rows, cut at every token's score, beside it and on a grid."""
    import dataclasses
    import random

    import numpy as np

    from kold_span.models.kinds import Decoding, MergedExample
    from kold_span.models.kinds.span import span_decision_score, task_spans
    from kold_span.models.tasks import Task

    rng, draw = random.Random(57), np.random.default_rng(57)
    task, decoding = Task("OFF_span", "span", "OFF"), Decoding([], snap=snap)
    nones = 0
    for _ in range(150):
        pieces = [rng.choice(TOKENS) for _ in range(rng.randint(0, 7))]
        text, offsets, at = "".join(pieces), [], 0
        for piece in pieces:
            offsets.append((at, at + len(piece)))
            at += len(piece)
        # float32, as a network gives them: the score must still be the double the threshold is compared as
        probs = draw.dirichlet([1, 1, 1], size=len(pieces)).astype(np.float32).reshape(-1, 3)
        merged = MergedExample(token_offsets=offsets, token_probs={"OFF_span": probs})
        score = span_decision_score(task, merged, text, decoding)
        nones += score is None
        inside = [float(b) + float(i) for _, b, i in probs.astype(np.float64)]
        cuts = {0.0, 1.0, *inside, *(np.nextafter(v, 2.0) for v in inside), *(np.nextafter(v, -1.0) for v in inside),
                *(k / 20 for k in range(21))}
        for t in cuts:
            decoded = bool(task_spans(dataclasses.replace(task, thresholds=(float(t),)), merged, text, decoding))
            assert decoded == (score is not None and score >= t), (text, probs.tolist(), t, score)
    assert 0 < nones < 150  # texts with nothing to mark (empty, spaces) and texts with spans were both drawn


def test_a_gated_off_span_task_has_no_score_and_is_allowed():
    import numpy as np

    from kold_span.models.decoding import prediction
    from kold_span.models.kinds import Decoding, MergedExample
    from kold_span.models.tasks import Task

    off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
    span = Task("OFF_span", "span", "OFF", gate="OFF", decision={"label": None, "remove": {"threshold": 0.1}})
    merged = MergedExample(sequence_probs={"OFF": np.array([0.7, 0.3])}, token_offsets=[(0, 2)],
                           token_probs={"OFF_span": np.array([[0.1, 0.8, 0.1]])})
    row = prediction(Decoding([off, span]), merged, "바보")
    assert row["actions"] == {"OFF_span": "allow"} and row["action_scores"] == {"OFF_span": None}
    merged.sequence_probs["OFF"] = np.array([0.3, 0.7])  # the gate opens
    row = prediction(Decoding([off, span]), merged, "바보")
    assert row["actions"] == {"OFF_span": "remove"} and row["action_scores"] == {"OFF_span": 0.9}


def test_rows_carry_the_scores_their_actions_cut_and_resume_accepts_them(plain, tmp_path):
    from kold_span.data.example import Example
    from kold_span.inference.outputs import prediction_record, row_problem

    model = with_policy(plain, tmp_path / "r", {"label": "true", "remove": band(0.9), "review": band(0.2)},
                        span={"label": None, "remove": band(0.5), "review": band(0.3)})
    predictor = Predictor.from_pretrained(model)
    for text, row in zip(TEXTS, predictor.predict(TEXTS)):
        scores = row["action_scores"]
        assert scores["OFF"] == row["labels"]["OFF"]["probs"]["true"]
        for task, (review, remove) in {"OFF": (0.2, 0.9), "OFF_span": (0.3, 0.5)}.items():
            score = scores[task]
            expected = "remove" if score is not None and score >= remove else \
                "review" if score is not None and score >= review else "allow"
            assert row["actions"][task] == expected
        # a resumed `predict` checks the rows it keeps: a policy's keys are a row's keys
        assert row_problem(prediction_record(Example(id="1", text=text), row), predictor.tasks) is None


def test_a_parquet_output_keeps_the_actions(plain, tmp_path):
    import json

    import pyarrow.parquet as pq

    from kold_span.data.example import Example
    from kold_span.inference.outputs import write_predictions

    model = Predictor.from_pretrained(with_policy(plain, tmp_path / "p", {"label": "true", "remove": band(1.0),
                                                                          "review": band(0.0)}))
    examples = [Example(str(i), text) for i, text in enumerate(TEXTS)]
    write_predictions(model, examples, tmp_path / "out.jsonl")
    write_predictions(model, examples, tmp_path / "out.parquet")
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [row["actions"] for row in rows] == [line["actions"] for line in lines] == [{"OFF": "review"}] * 2
    assert [row["action_scores"] for row in rows] == [line["action_scores"] for line in lines]
    empty = write_predictions(model, iter([]), tmp_path / "empty.parquet")
    assert empty.rows == 0 and "actions" in pq.read_table(tmp_path / "empty.parquet").column_names
    write_predictions(Predictor.from_pretrained(plain), examples, tmp_path / "plain.parquet")
    assert pq.read_table(tmp_path / "plain.parquet").column_names == ["id", "text", "labels", "spans"]  # as before
