"""bench/kold_snapping.py: gold edges by boundary kind, and every snap mode re-tuned on a run's dev split."""
import dataclasses
import json
import sys

import pytest

from kold_span.config.loading import load_config
from kold_span.data.example import spans_to_offsets
from kold_span import metrics
from kold_span.models.kinds import Decoding
from kold_span.models.tasks import THRESHOLD_GRID

from conftest import BENCH, CONFIGS, CORPORA, untrained_model

sys.path.insert(0, str(BENCH))
kold_snapping = pytest.importorskip("kold_snapping")


def test_edges_are_counted_by_the_unit_that_would_move_them():
    from kold_span.data.example import Example

    # 저런 | 인간 · 은 | 정치 · 하 · 면 | 안 · 되(13-14) · 다(13-15, contracted with 되)
    text = "저런 인간은 정치하면 안된다"
    examples = [Example("1", text, spans={"OFF": [(3, 5), (7, 9), (12, 14)]}), Example("2", "바보", spans={})]
    counts = kold_snapping.edge_counts(examples)
    # starts 3, 7, 12 follow a space; ends: 5 (인간|은) and 9 (정치|하) between morphemes, 14 inside 다 (13-15)
    assert counts["start"] == {"eojeol": 3, "morpheme": 0, "neither": 0}
    assert counts["end"] == {"eojeol": 0, "morpheme": 2, "neither": 1}
    assert counts["all"] == {"eojeol": 3, "morpheme": 2, "neither": 1}


def test_each_snap_mode_gets_its_own_dev_threshold_and_the_test_score_at_it(tmp_path):
    run = tmp_path / "kold_gs-seed13"
    config = load_config(CONFIGS / "experiment" / "quality" / "kold_gs_e5.yaml", [
        f"data.train={CORPORA / 'kold_gs'}", f"data.test={CORPORA / 'kold_gs' / 'valid.json'}",
        "data.reader_options={skip_bad: true}", "data.dev_fraction=0.5", "data.stratify=null"])
    run.mkdir()
    (run / "config.json").write_text(json.dumps(config.to_dict()))
    untrained_model(run / "model", snap="morpheme")
    result = kold_snapping.snap_modes(run, kold_snapping.SNAPS)
    assert result["saved_snap"] == "morpheme" and result["sizes"] == {"dev": 2, "test": 1}
    for snap in ("none", "morpheme", "eojeol", "word"):
        assert result[snap]["threshold"] in THRESHOLD_GRID
        assert 0.0 <= result[snap]["dev"] <= 1.0 and 0.0 <= result[snap]["test"] <= 1.0
    # the chosen threshold is dev's best under that mode: no other threshold of the grid scores dev higher
    from kold_span.corpora.experiment import load_splits
    from kold_span.models.kinds.span import predicted_offsets
    from kold_span.inference.predictor import Predictor

    predictor = Predictor.from_pretrained(run / "model")
    task = next(t for t in predictor.tasks if t.name == "OFF_span")
    dev = load_splits(config)["dev"]
    merged = predictor.merged_outputs([e.text for e in dev], [e.context for e in dev])
    golds = [spans_to_offsets(e.spans["OFF"]) for e in dev]

    def dev_score(threshold, snap):
        tuned = dataclasses.replace(task, thresholds=(threshold,))
        return metrics.mean_char_f1(predicted_offsets(tuned, Decoding(predictor.tasks, snap), dev, merged), golds)

    for snap in ("none", "eojeol"):
        assert result[snap]["dev"] == pytest.approx(max(dev_score(t, snap) for t in THRESHOLD_GRID), abs=5e-5)
    text = kold_snapping.render({"command": "python bench/kold_snapping.py RUN", "machine": "CPU", "cpu_flags": "avx2",
                                 "edges": {"examples": 1, "spans": 1, "counts": {"all": {"eojeol": 2, "morpheme": 0,
                                                                                         "neither": 0}}},
                                 "runs": [result]})
    assert "| word | " in text and "Dev prefers `" in text and "python bench/kold_snapping.py RUN" in text


def test_a_normalizing_models_run_is_probed_on_the_text_it_was_scored_on(tmp_path):
    """decoding_probes.load_run: dev and test normalized by the model's steps, the gold spans moved with the text
    (before, the outputs' token offsets on the normalized text were decoded against the text as written)."""
    from kold_span.data.example import Example
    from kold_span.data.jsonl import write_jsonl
    from kold_span.inference.predictor import Predictor

    decoding_probes = pytest.importorskip("decoding_probes")
    run = tmp_path / "run"
    run.mkdir()
    data = tmp_path / "test.jsonl"
    write_jsonl([Example("1", "너 씨.발 진짜", labels={"OFF": True}, spans={"OFF": [(2, 5)]})], data)
    config = load_config(CONFIGS / "experiment" / "demo.yaml", ["data.reader=jsonl", f"data.train={data}",
                                                                f"data.test={data}", "data.dev_fraction=0"])
    (run / "config.json").write_text(json.dumps(config.to_dict()))
    predictor = Predictor.from_pretrained(untrained_model(tmp_path / "plain"))
    predictor.settings = dataclasses.replace(predictor.settings, normalize=("separators",))
    predictor.save_pretrained(run / "model")
    _, loaded, splits = decoding_probes.load_run(run)
    assert loaded.settings.normalize == ("separators",)
    assert [(e.text, e.spans) for e in splits["test"]] == [("너 씨발 진짜", {"OFF": [(2, 4)]})]
