"""`kold-span robustness` and `evaluation.robustness`: scores clean and under each evasion kind, benign false positives."""
from __future__ import annotations

import json

import pytest

from kold_span.cli.main import main
from kold_span.data.example import Example
from kold_span.data.jsonl import write_jsonl
from kold_span.errors import DataError
from kold_span.evaluation.robustness import measure, model_predictions, render_markdown

from conftest import untrained_model

GOLD = [
    Example("1", "이 쓰레기 같은 정치인들", labels={"OFF": True}, spans={"OFF": [(2, 5)]}),
    Example("2", "좋은 기사 감사합니다", labels={"OFF": False}, spans={"OFF": []}),
    Example("3", "너 진짜 바보", labels={"OFF": True}, spans={"OFF": [(5, 7)]}),
    Example("4", "오늘 경기 정말 재밌었어요", labels={"OFF": False}, spans={"OFF": []}),
    Example("5", "you stupid idiot", labels={"OFF": True}, spans={"OFF": [(4, 16)]}),
]
WORDS = ("쓰레기", "바보", "stupid idiot")


def keyword_model(examples):
    """A model that knows three insults as written: a span on each, OFF true where one is found."""
    out = {}
    for ex in examples:
        spans = [(ex.text.find(w), ex.text.find(w) + len(w)) for w in WORDS if w in ex.text]
        out[ex.id] = {"labels": {"OFF": bool(spans)}, "spans": {"OFF": spans}}
    return out


def test_measure_scores_each_kind_against_the_mapped_gold():
    seen = []

    def model(examples):
        seen.append([ex.id for ex in examples])
        return keyword_model(examples)

    report = measure(GOLD, model, ["spaced_syllables", "fullwidth"], seeds=2, word_probability=1.0, targets="spans")
    assert report["metrics"] == ["span/OFF/char_f1", "label/OFF/macro_f1"]
    assert report["clean"] == {"span/OFF/char_f1": 1.0, "label/OFF/macro_f1": 1.0}
    assert report["benign"] == {"texts": 2, "negative": ["false"], "clean": 0.0}
    spaced = report["kinds"]["spaced_syllables"]
    # Every insult spaced apart: the keyword model misses all three; the two benign posts still score 1.
    assert spaced["changed"] == 0.6
    assert spaced["perturbed"]["span/OFF/char_f1"]["runs"] == [0.4, 0.4]
    assert spaced["drop"]["span/OFF/char_f1"] == pytest.approx(0.6)
    # All called "false": F1 of false 2·0.4·1/1.4 = 4/7, of true 0: macro 2/7.
    assert spaced["perturbed"]["label/OFF/macro_f1"]["mean"] == pytest.approx(2 / 7)
    # Fullwidth changes only the English post's toxic words.
    full = report["kinds"]["fullwidth"]
    assert full["changed"] == 0.2 and full["drop"]["span/OFF/char_f1"] == pytest.approx(0.2)
    assert full["benign_flagged"] == {"mean": 0.0, "sd": 0.0}
    # Clean once, then only the changed texts: 3 for each spaced seed, 1 for each fullwidth seed.
    assert [len(ids) for ids in seen] == [5, 3, 3, 1, 1]


def test_benign_false_positives_count_spans_and_positive_labels():
    def flag_everything(examples):
        return {ex.id: {"labels": {"OFF": True}, "spans": {"OFF": []}} for ex in examples}
    report = measure(GOLD, flag_everything, ["nfd"])
    assert report["benign"]["clean"] == 1.0 and report["kinds"]["nfd"]["benign_flagged"]["mean"] == 1.0


def test_measure_needs_unique_ids():
    with pytest.raises(DataError, match="unique"):
        measure([GOLD[0], GOLD[0]], keyword_model, ["nfd"])


def test_robustness_command_end_to_end(tmp_path, capsys):
    model = untrained_model(tmp_path / "model")
    gold = tmp_path / "gold.jsonl"
    write_jsonl(GOLD, gold)
    status = main(["robustness", "--model", str(model), "--input", str(gold), "--perturb", "keyboard,leet",
                   "--out", str(tmp_path / "out"), "--seeds", "2"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "| keyboard |" in printed and "robustness.png" in printed
    report = json.loads((tmp_path / "out" / "robustness.json").read_text(encoding="utf-8"))
    assert list(report["kinds"]) == ["keyboard", "leet"] and report["seeds"] == [0, 1]
    assert "label/OFF/macro_f1" in report["metrics"]
    # leet touches only the English post; the Korean posts keep their clean predictions.
    assert report["kinds"]["leet"]["changed"] <= 0.2 and report["kinds"]["keyboard"]["changed"] > 0.2
    # The same model read back through the library gives the same clean scores.
    from kold_span.inference.predictor import Predictor
    again = measure(GOLD, model_predictions(Predictor.from_pretrained(model, precision="fp32")), [])
    assert again["clean"] == report["clean"]
    assert (tmp_path / "out" / "robustness.png").read_bytes()[:4] == b"\x89PNG"
    markdown = (tmp_path / "out" / "robustness.md").read_text(encoding="utf-8")
    assert "| clean | – |" in markdown and "| leet |" in markdown


def test_robustness_command_names_a_bad_kind(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    write_jsonl(GOLD, gold)
    status = main(["robustness", "--model", str(tmp_path / "none"), "--input", str(gold), "--perturb", "nfd,lit",
                   "--out", str(tmp_path / "out")])
    assert status == 2
    assert "--perturb kind must be one of" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_bench_scores_an_experiment_dev_side_and_writes_its_section(tmp_path, monkeypatch):
    import sys

    from conftest import BENCH, DEMO
    sys.path.insert(0, str(BENCH))
    bench = pytest.importorskip("robustness")
    model = untrained_model(tmp_path / "model")
    page = tmp_path / "robustness.md"
    monkeypatch.setattr(bench, "PAGE", page)
    monkeypatch.chdir(tmp_path)  # main() works from the checkout; the original directory comes back after
    monkeypatch.setattr(sys, "argv", ["bench/robustness.py", "--model", str(model), "--config", str(DEMO),
                                      "--side", "dev", "--perturb", "nfd", "--limit", "4", "--name", "demo",
                                      "--out", str(tmp_path / "out")])
    assert bench.main() == 0
    gold = (tmp_path / "out" / "demo" / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(gold) == 4
    text = page.read_text(encoding="utf-8")
    assert "<!-- begin robustness-demo -->" in text and "python bench/robustness.py --model" in text
    assert "kold-span robustness --model" in text and "Machine: " in text and "| nfd |" in text


def test_twins_are_scored_against_their_own_texts_as_given():
    """Dialect rewrites: paired by meta.group; the texts without a twin stay out of that comparison."""
    twins = [Example("1:dialect", "이 쓰레기 겉은 정치인들", labels={"OFF": True}, spans={"OFF": [(2, 5)]},
                     meta={"group": "1"}),
             Example("3:dialect", "니 진짜 바보가", labels={"OFF": True}, spans={"OFF": [(5, 7)]}, meta={"group": "3"}),
             Example("5:dialect", "you stoopid idiot", labels={"OFF": True}, spans={"OFF": [(4, 17)]},
                     meta={"group": "5"})]
    report = measure(GOLD, keyword_model, [], twins=twins, twins_name="dialect")
    dialect = report["twins"]
    assert report["kinds"] == {} and dialect["name"] == "dialect" and dialect["pairs"] == 3
    assert dialect["changed"] == 1.0  # every twin's text differs from its text as given
    # as given, the keyword model finds all three insults; in the rewrites "stoopid idiot" is not found whole
    assert dialect["standard"] == {"span/OFF/char_f1": 1.0, "label/OFF/macro_f1": 1.0}
    assert dialect["twin"]["span/OFF/char_f1"] == pytest.approx(2 / 3)
    assert dialect["drop"]["span/OFF/char_f1"] == pytest.approx(1 / 3)
    # OFF: true, true, false against three true golds: one label seen, F1 of "true" 0.8, of "false" 0
    assert dialect["twin"]["label/OFF/macro_f1"] == pytest.approx(0.4)
    assert dialect["benign_flagged"] is None  # no benign text among the pairs
    markdown = render_markdown(report)
    assert "| dialect (3 twins) | 100% | 0.667 | 0.333 | 0.400 | 0.600 | – |" in markdown
    assert "5 examples; no evasion kind scored; span F1 policy: semeval." in markdown
    assert "| span/OFF/char_f1 | 1.000 | 0.667 | 0.333 |" in markdown
    with pytest.raises(DataError, match="none of the 1 twins shares a group"):
        measure(GOLD, keyword_model, [], twins=[Example("9", "x", meta={"group": "nowhere"})])
    with pytest.raises(DataError, match="two twins share the group '1'"):
        measure(GOLD, keyword_model, [], twins=twins[:1] * 2)


def test_robustness_command_reads_kold_dialect_twins_from_the_same_file(tmp_path, capsys):
    """The kold_gs reader's two sides of one file, --perturb none: the clean row and the dialect row only."""
    from conftest import CORPORA

    valid = CORPORA / "kold_gs" / "valid.json"  # two records: one whose dialect text is the same, one bad
    model = untrained_model(tmp_path / "model")
    status = main(["robustness", "--model", str(model), "--reader", "kold_gs", "--input", str(valid),
                   "--option", "skip_bad=true", "--twins", str(valid), "--twins-option", "side=dialect",
                   "skip_bad=true", "--twins-name", "dialect", "--perturb", "none", "--out", str(tmp_path / "out")])
    assert status == 0
    report = json.loads((tmp_path / "out" / "robustness.json").read_text(encoding="utf-8"))
    assert report["kinds"] == {} and report["twins_input"] == str(valid)
    dialect = report["twins"]
    assert dialect["pairs"] == 1 and dialect["changed"] == 0.0
    # the same text predicted twice by the same model: nothing drops
    assert dialect["standard"] == dialect["twin"] and set(dialect["drop"].values()) == {0.0}
    assert "| dialect (1 twins) | 0% |" in capsys.readouterr().out


@pytest.mark.slow
def test_leave_kinds_out_scores_each_kind_seen_and_left_out(tmp_path, monkeypatch):
    """bench/leave_kinds_out.py: the plan's folds are trained with the others, measure reads them back."""
    import sys

    from conftest import BENCH, DEMO
    from kold_span.config.choices import EvasionKind
    from kold_span.config.loading import load_config
    sys.path.insert(0, str(BENCH))
    bench = pytest.importorskip("leave_kinds_out")
    every = [k.value for k in EvasionKind]
    folds = bench.folds_of(every, 3, 13)
    assert sorted(k for f in folds for k in f) == sorted(every)
    command = bench.train_commands(str(DEMO), folds, [])[1]
    kept = command.split("data.augment.evasion.kinds=", 1)[1].rstrip("'")
    trained = [str(k) for k in load_config(DEMO, [f"data.augment.evasion.kinds={kept}"]).data.augment.evasion.kinds]
    assert sorted(trained + folds[0]) == sorted(every)

    models = {}
    for name, kinds in (("full", every), ("fold", trained)):
        models[name] = untrained_model(tmp_path / name / "model")
        (tmp_path / name / "config.json").write_text(
            json.dumps({"data": {"augment": {"evasion": {"kinds": kinds}}}}), encoding="utf-8")
    assert bench.trained_kinds(models["fold"]) == trained
    page = tmp_path / "robustness.md"
    monkeypatch.setattr(bench, "PAGE", page)
    monkeypatch.setattr(sys, "argv", ["bench/leave_kinds_out.py", "measure", "--config", str(DEMO), "--full",
                                      str(models["full"]), "--fold", str(models["fold"]), "--limit", "3",
                                      "--name", "demo", "--out", str(tmp_path / "out")])
    assert bench.main() == 0
    text = page.read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert all(kind in rows for kind in every)
    assert all(rows[k].split(" | ")[2] != "–" for k in folds[0])  # scored left out by the fold model
    assert all(rows[k].split(" | ")[2] == "–" for k in trained)  # the fold model trained on these
