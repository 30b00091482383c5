"""`data.augment.evasion`: disguised training copies with their gold spans, dev scored clean and disguised."""
import csv
import json

import pytest

from kold_span.config.loading import load_config
from kold_span.data.example import Example
from kold_span.training.run import DEV_PERTURBED, train, with_evasion

from conftest import FIXTURE, TINY

EVASION = "data.augment.evasion={probability: 0.5, kinds: [keyboard, spaced_syllables], word_probability: 1.0}"


def tiny_config(tmp_path, *overrides):
    return load_config(TINY, [f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r", *overrides])


def splits():
    train = [Example(str(i), f"너 진짜 바보 {i}", labels={"OFF": True}, spans={"OFF": [(5, 7)]}) for i in range(10)]
    dev = [Example("d", "시발 놈", labels={"OFF": True}, spans={"OFF": [(0, 2)]})]
    return {"train": train, "dev": dev, "test": []}


def test_off_leaves_the_splits_as_read(tmp_path):
    original = splits()
    assert with_evasion(tiny_config(tmp_path), original) is original


def test_copies_carry_their_gold_spans_and_dev_is_disguised_beside_clean(tmp_path):
    config = tiny_config(tmp_path, EVASION)
    out = with_evasion(config, splits())
    originals, copies = out["train"][:10], out["train"][10:]
    assert originals == splits()["train"] and len(copies) == 5  # half of 10, every one changed
    for copy in copies:
        source = originals[int(copy.id.split("~")[0])]
        assert copy.id == f"{source.id}~{copy.meta['evasion']}"
        assert copy.span_texts("OFF") in (["qkqh"], ["바 보"])  # 바보 keyboard-typed or spaced
    assert out["dev"] == splits()["dev"]
    [disguised] = out[DEV_PERTURBED]
    assert disguised.id == "d" and disguised.span_texts("OFF") in (["tlqkf"], ["시 발"])
    assert with_evasion(config, splits()) == out  # seeded
    other = with_evasion(tiny_config(tmp_path, EVASION, "seed=8"), splits())
    assert [c.id for c in other["train"][10:]] != [c.id for c in copies]


def test_dev_false_scores_no_disguised_dev(tmp_path):
    out = with_evasion(tiny_config(tmp_path, EVASION, "data.augment.evasion.dev=false"), splits())
    assert DEV_PERTURBED not in out and len(out["train"]) == 15


@pytest.mark.slow
def test_training_logs_the_disguised_dev_score_next_to_the_clean_one(tmp_path):
    config = tiny_config(tmp_path, EVASION, "trainer.max_epochs=2", "data.limit=16", "data.dev_fraction=0.25",
                         "trainer.monitor=dev/OFF/macro_f1", "trainer.monitor_mode=max")
    result = train(config, quiet=True)
    with open(result.run_dir / "logs" / "version_0" / "metrics.csv", newline="", encoding="utf-8") as f:
        columns = set(next(csv.reader(f)))
    assert {"dev/loss", "dev/OFF/macro_f1", "dev_perturbed/loss", "dev_perturbed/OFF/macro_f1",
            "dev_perturbed/OFF_span/char_f1"} <= columns
    assert not any("dataloader_idx" in c for c in columns)
    metrics = json.loads((result.run_dir / "metrics.json").read_text(encoding="utf-8"))
    assert set(metrics["dev_perturbed"]) == set(metrics["dev"])
    assert metrics["sizes"]["dev_perturbed"] == metrics["sizes"]["dev"]
    assert metrics["sizes"]["train"] > 12  # the disguised copies beside the 12 read
    assert metrics["best_dev_score"] is not None  # dev/OFF/macro_f1 still monitored by its name
