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


def test_an_ensemble_keeps_a_policy_only_when_its_members_share_it(plain, tmp_path):
    from kold_span.inference.ensemble import load_predictor

    same = with_policy(plain, tmp_path / "same", {"label": "true", "remove": band(0.0)})
    other = with_policy(plain, tmp_path / "other", {"label": "true", "remove": band(0.5)})
    assert load_predictor([same, same]).tasks[0].decision["remove"]["threshold"] == 0.0
    mixed = load_predictor([same, other])
    assert mixed.tasks[0].decision is None and "actions" not in mixed.predict(TEXTS)[0]
