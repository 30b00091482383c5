"""The quality benchmark's logic without training: IroSvA average, tagged rows, reuse of finished runs."""
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from kold_span.config import load_config
from kold_span.models.kinds import Decoding, MergedExample
from kold_span.models.tasks import Task
from kold_span.training import calibration

from conftest import BENCH, CORPORA

sys.path.insert(0, str(BENCH))
quality = pytest.importorskip("quality")


def run_dir_of(config):
    """Where a run of `config` trains: <output_dir>/<experiment>/<run>."""
    return Path(config.output_dir) / config.experiment / config.run


def corpus_result(seeds_scores, ngram, command="cmd"):
    return {"n_train": 10, "n_test": 5, "command": command,
            "baselines": {kind: {"macro_f1": ngram} for kind in ("ngram", "ngram_context", "majority")},
            "runs": [{"seed": seed, "seconds": 60, "test": {"irony/macro_f1": score},
                      "hybrid": {"macro_f1": score + 0.1}} for seed, score in seeds_scores]}


def test_irosva_average_is_the_mean_of_the_three_variants_per_seed():
    results = {"irosva_es": corpus_result([(1, 0.6), (2, 0.7)], 0.5),
               "irosva_mx": corpus_result([(1, 0.3), (2, 0.4)], 0.6),
               "irosva_cu": corpus_result([(1, 0.9), (2, 0.1), (3, 0.5)], 0.7)}
    average = quality.irosva_average(results)
    # seed 1: (0.6 + 0.3 + 0.9) / 3 = 0.6; seed 2: (0.7 + 0.4 + 0.1) / 3 = 0.4; seed 3 is not in every variant
    assert average["toolkit"] == pytest.approx([0.6, 0.4])
    assert average["hybrid"] == pytest.approx([0.7, 0.5])
    assert average["ngram"] == pytest.approx(0.6)
    assert average["seeds"] == 2 and average["n_train"] == 30
    assert quality.irosva_average({"irosva_es": results["irosva_es"]}) is None


def test_each_configuration_with_all_three_variants_gets_its_own_irosva_average_row():
    results = {f"irosva_{v}{tag}": corpus_result([(1, score)], 0.5)
               for tag, scores in (("", (0.6, 0.3, 0.9)), (":minilm", (0.7, 0.4, 1.0)))
               for v, score in zip(("es", "mx", "cu"), scores)}
    results["irosva_es:topic-off"] = corpus_result([(1, 0.2)], 0.5)  # one variant only: no average
    table = quality.render(results)
    assert "| irosva average (30/15) | macro_f1 | 0.6000 |" in table
    assert "| irosva average [minilm] (30/15) | macro_f1 | 0.7000 |" in table
    assert "irosva average [topic-off]" not in table


def test_tagged_rows_render_beside_untagged_ones_with_their_commands():
    results = {"irosva_es": corpus_result([(1, 0.6)], 0.5, "python bench/quality.py A"),
               "irosva_es:mlm": corpus_result([(1, 0.8)], 0.5, "python bench/quality.py B")}
    table = quality.render(results)
    assert "| irosva_es (10/5) | macro_f1 | 0.6000 |" in table
    assert "| irosva_es [mlm] (10/5) | macro_f1 | 0.8000 |" in table
    assert "- irosva_es: `python bench/quality.py A`" in table
    assert "- irosva_es [mlm]: `python bench/quality.py B`" in table


def test_ensemble_rows_render_after_their_configuration_and_average_over_irosva():
    results = {f"irosva_{v}:minilm": corpus_result([(1, 0.5), (2, 0.6)], 0.5, "python bench/quality.py --ensemble")
               for v in ("es", "mx", "cu")}
    for v, score in zip(("es", "mx", "cu"), (0.7, 0.4, 0.85)):
        results[f"irosva_{v}:minilm"]["ensemble"] = {"seeds": [1, 2], "test": {"irony/macro_f1": score},
                                                     "hybrid": {"macro_f1": score + 0.01}}
    table = quality.render(results)
    lines = table.splitlines()
    row = lines.index(next(line for line in lines if line.startswith("| irosva_es [minilm] ")))
    assert lines[row + 1].startswith("| irosva_es [minilm, ensemble] (10/5) | macro_f1 | 0.7000 | 0.7100 | 0.5000 |")
    assert "| 2 averaged | 2.0 |" in lines[row + 1]  # two models; training minutes of both seeds
    # (0.7 + 0.4 + 0.85) / 3 = 0.65, next to the per-seed average (0.55 ± 0.0707)
    assert "| irosva average [minilm] (30/15) | macro_f1 | 0.5500 ± 0.0707 |" in table
    assert "| irosva average [minilm, ensemble] (30/15) | macro_f1 | 0.6500 | 0.6600 |" in table
    assert "- irosva_es [minilm], irosva_es [minilm, ensemble]" in table


class UninformedPredictor:
    """A stand-in encoder that always says 50/50."""

    tasks = [Task("irony", "sequence", "irony", labels=("false", "true"))]
    companions: dict = {}

    def merged_outputs(self, texts, contexts, batch_size=32):
        return [MergedExample({"irony": np.array([0.5, 0.5])}) for _ in texts]


def test_hybrid_picks_the_context_ngram_on_dev_when_only_the_context_tells_the_label():
    from kold_span.data.example import Example

    def make(i, ironic):
        topic = "sarcastic topic" if ironic else "plain topic"
        return Example(str(i), "the same message", context=topic, labels={"irony": ironic})

    splits = {"train": [make(i, i % 2 == 0) for i in range(40)], "dev": [make(i, i % 2 == 0) for i in range(40, 60)]}
    test = [make(i, i % 2 == 0) for i in range(60, 80)]
    row = quality.hybrid_row(quality.CORPORA["irosva_es"], UninformedPredictor(), splits, test, "irony")
    assert row["ngram_context"] is True
    assert row["macro_f1"] == 1.0 and row["dev_score"] == 1.0
    assert row["weight"] < 0.5  # the uninformed encoder gets the smaller share
    # Every weight's dev score is kept: the 50/50 encoder alone (weight 1) cannot tell the labels
    # apart, any share of the context n-gram reads them all, so the tie goes to the smallest weight.
    assert sorted(row["dev_scores"], key=float) == [str(i / 10) for i in range(11)]
    assert row["dev_scores"]["1.0"] < 1.0
    assert all(row["dev_scores"][str(i / 10)] == 1.0 for i in range(10)) and row["weight"] == 0.0


class ConstantNgram:
    """A stand-in n-gram that gives every label the same probability."""

    use_context = False

    def __init__(self, p):
        self.p = p

    def predict_proba(self, texts, contexts):
        return [{"a": self.p, "b": self.p} for _ in texts]


class GoldReadingPredictor:
    """A stand-in multi-label encoder: the text names the gold labels; positives 0.62 (a) and 0.32 (b)."""

    tasks = [Task("groups", "sequence", "groups", problem="multi", labels=("a", "b"))]
    companions: dict = {}
    decoding = Decoding(tasks)

    def merged_outputs(self, texts, contexts, batch_size=32):
        return [MergedExample({"groups": np.array([0.62 if "a" in t else 0.2, 0.32 if "b" in t else 0.08])})
                for t in texts]


def test_hybrid_tunes_multi_label_thresholds_on_dev_with_the_train_only_ngram_then_refits(monkeypatch):
    from dataclasses import replace

    from kold_span.data.example import Example
    from kold_span.models.ngram import Companion

    def make(i, labels):
        return Example(str(i), "".join(labels) or "none", labels={"groups": labels})

    golds = [["a"], ["b"], ["a", "b"], []]
    splits = {"train": [make(i, g) for i, g in enumerate(golds * 3)],
              "dev": [make(100 + i, g) for i, g in enumerate(golds)]}
    test = [make(200 + i, g) for i, g in enumerate(golds)]
    refitted_on = []

    def choose(task, label, problem, train, dev, dev_probs, metric, allow_context, extra, refit):
        assert refit is False  # dev is scored before the n-gram sees it
        return Companion(task, 0.5, ConstantNgram(0.2), dev_score=0.9)

    def refit(companion, examples):
        refitted_on.append(len(examples))
        return replace(companion, scorer=ConstantNgram(0.3))

    monkeypatch.setattr(calibration, "choose_companion", choose)
    monkeypatch.setattr(calibration, "refit_companion", refit)
    spec = quality.CORPORA["unsmile"]
    row = quality.hybrid_row(spec, GoldReadingPredictor(), splits, test, "groups", thresholds=True)
    assert refitted_on == [16]  # train (12) + dev (4)
    # dev fused with the train-only n-gram (0.2), weight 0.5: a 0.41 / 0.20, b 0.26 / 0.14, so the F1-best
    # thresholds nearest 0.5 are 0.40 and 0.25 (with the refitted n-gram, 0.3, they would be 0.45 and 0.30)
    assert row["tuned"]["thresholds"] == pytest.approx({"a": 0.40, "b": 0.25})
    # test, with the refitted n-gram: a 0.46 / 0.25, b 0.31 / 0.19: all right at the tuned thresholds,
    # nothing reaches 0.5
    assert row["tuned"]["macro_f1"] == 1.0 and row["macro_f1"] == 0.0 and row["dev_score"] == 0.9
    assert "tuned" not in quality.hybrid_row(spec, GoldReadingPredictor(), splits, test, "groups")
    # the rule ships the fusion as dev scored it, at 0.5; the tuned figure is shown beside it
    recorded = {"runs": [{"seed": 1, "hybrid": row}, {"seed": 2, "hybrid": {"macro_f1": 0.3}}]}
    assert quality.shipped_scores(spec, recorded) == {1: 0.0, 2: 0.3}


def test_recorded_runs_are_reused_only_for_the_same_setup():
    setup = quality.setup_of(["trainer.max_epochs=3", "trainer.threads=1"], None, 0.2, 42, None)
    # threads and the progress bar change how a run executes, not what it computes
    assert setup == quality.setup_of(["trainer.progress_bar=false", "trainer.max_epochs=3"], None, 0.2, 42, None)
    previous = {"setup": setup, "runs": [{"seed": 13, "test": {"x": 0.5}}, {"seed": 14, "test": {"x": 0.6}}]}
    assert sorted(quality.recorded_runs(previous, setup)) == [13, 14]
    assert quality.recorded_runs(previous, quality.setup_of(["trainer.max_epochs=2"], None, 0.2, 42, None)) == {}
    assert quality.recorded_runs(previous, quality.setup_of(["trainer.max_epochs=3"], None, 0.3, 42, None)) == {}
    assert quality.recorded_runs({"runs": previous["runs"]}, setup) == {}  # no setup recorded: nothing to trust
    assert quality.recorded_runs({}, setup) == {}


def test_a_setting_given_twice_is_recorded_with_its_last_value_as_training_applied_it():
    # `--set model.pooling=mean ... model.pooling=first` trains at the first token; sorting both
    # overrides would put `first` before `mean` and a reload of the recorded setup would read mean
    later = quality.setup_of(["model.pooling=mean", "trainer.max_epochs=5", "model.pooling=first"], None, 0.2, 42, None)
    assert later["set"] == ["model.pooling=first", "trainer.max_epochs=5"]
    assert later != quality.setup_of(["model.pooling=first", "model.pooling=mean"], None, 0.2, 42, None)
    assert load_config(quality.EXPERIMENTS / "kocosa.yaml", later["set"]).model.pooling == "first"


def test_extra_training_files_change_the_setup_and_leave_out_texts_of_the_test_part(tmp_path):
    base = quality.setup_of([], None, 0.2, 42, None)
    assert quality.setup_of([], None, 0.2, 42, None, []) == base  # setups recorded before the option still match
    assert quality.setup_of([], None, 0.2, 42, None, [Path("trial.csv")])["extra_train"] == ["trial.csv"]
    trial = tmp_path / "tsd_trial.csv"
    trial.write_text('spans,text\n"[0, 1, 2, 3]",Dumb take.\n[],Nice one.\n"[0, 1, 2, 3]",Dumb idea.\n',
                     encoding="utf-8")
    test = quality.corpora.read("toxic_spans", trial)[1:2]  # "Nice one." is in the test part
    spec = quality.CORPORA["toxic_spans"]
    extra, dropped = quality.extra_training(spec, [trial], test)
    assert [e.text for e in extra] == ["Dumb take.", "Dumb idea."] and dropped == 1
    assert extra[0].spans["OFF"] == [(0, 4)]


def test_extra_training_for_one_irosva_variant_takes_the_other_variants_files():
    fixtures = CORPORA / "irosva"
    spec = quality.CORPORA["irosva_es"]
    test = quality.corpora.read("irosva", fixtures, **spec.options)
    extra, dropped = quality.extra_training(spec, [fixtures / "irosva.mx.training.csv"], test)
    assert extra and {e.meta["variant"] for e in extra} == {"mx"} and dropped == 0


def test_cross_variant_reuses_recorded_seeds_whose_models_are_gone(tmp_path):
    cross_variant = pytest.importorskip("cross_variant")
    from kold_span.data.example import Example
    from kold_span.data.jsonl import write_jsonl

    for variant in cross_variant.VARIANTS:
        rows = [Example(id=f"{variant}{i}", text=f"{w} tweet", labels={"irony": i % 2 == 0})
                for i, w in enumerate(["oh great", "rain today", "oh great", "bus late"] * 3)]
        write_jsonl(rows, tmp_path / f"irosva_{variant}" / "train.jsonl")
        write_jsonl(rows[:4], tmp_path / f"irosva_{variant}" / "test.jsonl")
    previous = {"seeds": [13], "tag": "", "encoder": {tr: {te: [0.5 + 0.1 * (tr == te)] for te in ("es", "mx", "cu")}
                                                      for tr in ("es", "mx", "cu")}}
    result = cross_variant.matrices(tmp_path, [13], "", cross_variant.recorded_scores(previous))
    assert result["encoder"]["es"] == {"es": [0.6], "mx": [0.5], "cu": [0.5]}
    assert result["reused_seeds"] == [13]
    with pytest.raises(SystemExit, match="no trained model"):
        cross_variant.matrices(tmp_path, [13, 14], "", cross_variant.recorded_scores(previous))
    assert cross_variant.recorded_scores({**previous, "tag": "topic-off"}) == {}


def test_finished_run_is_reused_only_with_the_settings_it_was_trained_with(tmp_path):
    import argparse

    from kold_span.experiments.grid import finished_metrics

    def planned(*overrides, retrain=False):
        args = argparse.Namespace(set=list(overrides), seeds=[13], out=tmp_path, tag=None, runs_from=None,
                                  retrain=retrain)
        [run] = quality.planned_runs("beep", quality.CORPORA["beep"], args, tmp_path / "beep")
        return run

    run = planned()
    run_dir = tmp_path / "runs" / run.config.experiment / "beep-seed13"
    assert run.run_dir == run_dir and run.seed == run.config.seed == 13
    assert run.config.data.train == str(tmp_path / "beep" / "train.jsonl") and run.config.data.reader == "jsonl"
    assert finished_metrics(run) is None  # nothing there yet: train
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(run.config.to_dict()))
    assert finished_metrics(planned()) is None  # trained, not finished (no metrics.json)
    (run_dir / "metrics.json").write_text(json.dumps({"test": {"hate/macro_f1": 0.5}, "seconds": 9}))
    assert finished_metrics(planned()) == {"test": {"hate/macro_f1": 0.5}, "seconds": 9}
    # executing with another thread count is the same run
    assert finished_metrics(planned("trainer.threads=1"))["seconds"] == 9
    # the experiment file edited since (here: another learning rate) must not hand back stale scores
    with pytest.raises(SystemExit, match=r"beep-seed13 was trained with other settings \(trainer.lr differ\).*"
                                         r"or pass --retrain"):
        planned("trainer.lr=0.1")
    assert planned("trainer.lr=0.1", retrain=True).config.trainer.lr == 0.1  # --retrain trains it again


plot_quality = pytest.importorskip("plot_quality")


def test_plot_summary_has_each_row_and_each_corpus_baseline_in_corpus_order(tmp_path):
    results = {"irosva_es": corpus_result([(1, 0.6), (2, 0.8)], 0.5),
               "irosva_mx": corpus_result([(1, 0.3)], 0.6),
               "irosva_es:topic-off": corpus_result([(1, 0.4), (2, 0.5)], 0.5)}
    summary = plot_quality.summary_of(results, ["irosva_es", "irosva_mx", "irosva_es:topic-off"], ["ngram"])
    seen = [(e["values"]["corpus"], e["values"]["model"], e["runs"]) for e in summary]
    assert seen == [("irosva_es", "toolkit", 2), ("irosva_es", "toolkit [topic-off]", 2), ("irosva_es", "n-gram", 1),
                    ("irosva_mx", "toolkit", 1), ("irosva_mx", "n-gram", 1)]
    # mean of 0.6 and 0.8 is 0.7, sample std sqrt(0.02) = 0.1414; a single run has no std
    assert summary[0]["mean"]["macro_f1"] == pytest.approx(0.7)
    assert summary[0]["std"]["macro_f1"] == pytest.approx(0.1414, abs=1e-4)
    assert summary[3]["std"]["macro_f1"] is None
    assert summary[2]["mean"]["macro_f1"] == 0.5 and summary[2]["std"]["macro_f1"] is None

    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    assert plot_quality.main(["irosva_es", "irosva_es:topic-off", "--baselines", "ngram",
                              "--results", str(path), "--out", str(tmp_path / "plot.png")]) == 0
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_names_a_missing_row_and_refuses_rows_with_different_metrics():
    results = {"irosva_es": corpus_result([(1, 0.6)], 0.5), "kocosa": corpus_result([(1, 0.6)], 0.5)}
    with pytest.raises(SystemExit, match="no row 'irosva_cu'"):
        plot_quality.summary_of(results, ["irosva_cu"])
    with pytest.raises(SystemExit, match="different metrics"):
        plot_quality.summary_of(results, ["irosva_es", "kocosa"])


def test_extra_ngram_data_and_runs_from_are_recorded_in_the_setup_only_when_given():
    base = quality.setup_of([], None, 0.2, 42, None)
    assert quality.setup_of([], None, 0.2, 42, None, None, None, None) == base
    setup = quality.setup_of([], None, 0.2, 42, None, None, [Path("mx.csv")], "minilm")
    assert setup == {**base, "extra_ngram_train": ["mx.csv"], "runs_from": "minilm"}


def test_hybrid_offers_extra_ngram_data_without_dev_texts_and_takes_it_when_dev_prefers():
    from kold_span.data.example import Example

    def make(i, text, ironic):
        return Example(str(i), text, labels={"irony": ironic})

    # The training side never shows "claro"; dev and test do, and so does the extra data. (Test alone
    # would not tell: the chosen n-gram is refitted on train + dev, which shows "claro" either way.)
    train = [make(i, f"{'oh sure' if i % 2 else 'rain'} today {i}", i % 2 == 1) for i in range(40)]
    dev = [make(100 + i, f"{'claro' if i % 2 else 'bus'} ya {i}", i % 2 == 1) for i in range(20)]
    test = [make(200 + i, f"{'claro' if i % 2 else 'bus'} hoy {i}", i % 2 == 1) for i in range(20)]
    extra = [make(300 + i, f"{'claro' if i % 2 else 'tren'} si {i}", i % 2 == 1) for i in range(40)]
    spec = quality.CORPORA["irosva_mx"]
    plain = quality.hybrid_row(spec, UninformedPredictor(), {"train": train, "dev": dev}, test, "irony")
    assert "extra_examples" not in plain and plain["dev_score"] < 0.8
    row = quality.hybrid_row(spec, UninformedPredictor(), {"train": train, "dev": dev}, test, "irony",
                             extra + dev[:5])  # dev texts in the extra data are left out
    assert row["extra_examples"] == 40 and row["dev_score"] == 1.0 and row["macro_f1"] == 1.0


def test_extra_ngram_cells_show_both_ngram_scores_and_the_irosva_average_does_too():
    results = {f"irosva_{v}:pooled": corpus_result([(1, 0.6)], 0.5) for v in ("es", "mx", "cu")}
    for v, score in zip(("es", "mx", "cu"), (0.6, 0.7, 0.8)):
        results[f"irosva_{v}:pooled"]["baselines_extra_ngram"] = {"ngram": {"macro_f1": score},
                                                                  "ngram_context": {"macro_f1": score - 0.1}}
    table = quality.render(results)
    assert "| 0.5000 (0.6000 with extra) | 0.5000 (0.5000 with extra) |" in table
    assert "| irosva average [pooled] (30/15) | macro_f1 | 0.6000 | 0.7000 | 0.5000 (0.7000 with extra) |" in table


def test_runs_from_scores_another_tags_finished_runs_without_training(tmp_path, monkeypatch):
    import argparse
    from types import SimpleNamespace

    import kold_span.experiments.grid as grid

    data = tmp_path / "data"
    (data / "toxic_spans").mkdir(parents=True)
    rows = [f'"[0, 1, 2, 3]",Dumb take number {i}.' if i % 2 else f"[],Nice one number {i}." for i in range(20)]
    (data / "toxic_spans" / "tsd_train.csv").write_text("spans,text\n" + "\n".join(rows) + "\n", encoding="utf-8")

    def fake_train(config, resume=False, quiet=False, overwrite=False):
        run_dir = run_dir_of(config)
        run_dir.mkdir(parents=True)
        (run_dir / "config.json").write_text(json.dumps(config.to_dict()))
        metrics = {"test": {"OFF_span/char_f1": 0.42}, "dev": {"toxic/balanced_accuracy": 0.81}, "seconds": 7}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        return SimpleNamespace(metrics=metrics)

    def args(tag, runs_from=None):
        return argparse.Namespace(data=data, test=None, test_fraction=0.2, split_seed=42, limit=None, extra_train=None,
                                  extra_ngram_train=None, runs_from=runs_from, tag=tag, out=tmp_path / "out",
                                  set=[], seeds=[13], retrain=False, ensemble=False)

    monkeypatch.setattr(grid, "train", fake_train)
    first = quality.run_corpus("toxic_spans", quality.CORPORA["toxic_spans"], args("old"))
    assert first["runs"][0]["test"]["OFF_span/char_f1"] == 0.42
    # A span corpus records dev: the gating head's balanced accuracy, listed under the table.
    assert first["runs"][0]["dev"] == {"toxic/balanced_accuracy": 0.81}
    assert "- toxic_spans [old]: `toxic` 0.8100 (1 seeds)" in quality.render({"toxic_spans:old": first})

    def no_training(config, resume=False, quiet=False, overwrite=False):
        raise AssertionError(f"trained {config.run}")

    monkeypatch.setattr(grid, "train", no_training)
    again = quality.run_corpus("toxic_spans", quality.CORPORA["toxic_spans"], args("new", runs_from="old"))
    assert again["runs"] == first["runs"]
    with pytest.raises(AssertionError, match="trained toxic_spans-new-seed13"):
        quality.run_corpus("toxic_spans", quality.CORPORA["toxic_spans"], args("new"))


def test_ensemble_companions_must_share_the_split_and_their_row_counts_every_member(tmp_path):
    import argparse

    spec = quality.CORPORA["unsmile"]
    out = tmp_path / "out"
    work, other = out / "unsmile-a", out / "unsmile-b"
    for folder in (work, other):
        folder.mkdir(parents=True)
        (folder / "train.jsonl").write_text('{"text": "x"}\n')
        (folder / "test.jsonl").write_text('{"text": "y"}\n')

    def saved_run(tag, seed, *overrides):
        config = load_config(quality.EXPERIMENTS / spec.experiment, [
            "data.reader=jsonl", f"data.train={out / f'unsmile-{tag}' / 'train.jsonl'}", f"seed={seed}",
            f"output_dir={out / 'runs'}", f"run=unsmile-{tag}-seed{seed}", *overrides])
        run_dir = run_dir_of(config)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(json.dumps(config.to_dict()))
        return config

    reference = saved_run("a", 13)
    for seed in (13, 14):
        saved_run("b", seed, "trainer.lr=0.0001")  # another configuration, the same split
    args = argparse.Namespace(out=out, seeds=[13, 14])
    assert quality.companion_models("unsmile", ["b"], args, work, reference) == [
        out / "runs" / reference.experiment / f"unsmile-b-seed{seed}" / "model" for seed in (13, 14)]

    saved_run("b", 14, "data.dev_fraction=0.2")
    with pytest.raises(SystemExit, match=r"unsmile-b-seed14/config.json split its data otherwise \(data.dev_fraction"):
        quality.companion_models("unsmile", ["b"], args, work, reference)
    saved_run("b", 14)
    (other / "test.jsonl").write_text('{"text": "z"}\n')
    with pytest.raises(SystemExit, match="unsmile-b/test.jsonl is missing or differs"):
        quality.companion_models("unsmile", ["b"], args, work, reference)

    results = {f"irosva_{v}:mix": corpus_result([(1, 0.5), (2, 0.6)], 0.5) for v in ("es", "mx", "cu")}
    for result in results.values():
        result["ensemble"] = {"seeds": [1, 2], "members": ["a-1", "a-2", "b-1", "b-2"],
                              "test": {"irony/macro_f1": 0.7}, "hybrid": {"macro_f1": 0.71}}
    lines = quality.render(results).splitlines()
    assert next(line for line in lines if line.startswith("| irosva_es [mix, ensemble] (10/5) | macro_f1 | 0.7000 | "
                                                          "0.7100 | 0.5000 |")).endswith("| 4 averaged | 2.0 |")
    assert next(line for line in lines if line.startswith("| irosva average [mix, ensemble] (30/15) | macro_f1 | "
                                                          "0.7000 | 0.7100 |")).endswith("| 4 averaged | 6.0 |")


def dev_scored(runs, ngram=0.5, ngram_context=0.55, **setup):
    """A kocosa result whose runs are (seed, dev score, encoder test, fused test)."""
    return {"n_train": 10, "n_test": 5, "command": "cmd",
            "setup": {"set": [], "test": None, "test_fraction": 0.2, "split_seed": 42, "limit": None, **setup},
            "baselines": {"ngram": {"balanced_accuracy": ngram}, "ngram_context": {"balanced_accuracy": ngram_context},
                          "majority": {"balanced_accuracy": 0.5}},
            "runs": [{"seed": seed, "seconds": 600 + 60 * seed, "test": {"sarcasm/balanced_accuracy": encoder},
                      "hybrid": {"dev_score": dev, "balanced_accuracy": fused}}
                     for seed, dev, encoder, fused in runs]}


def test_dev_chooses_the_best_mean_dev_among_three_seed_rows_on_the_same_split():
    results = {
        "kocosa": dev_scored([(1, 0.60, 0.5, 0.6), (2, 0.70, 0.5, 0.6), (3, 0.80, 0.5, 0.6)]),  # mean dev 0.70
        "kocosa:a": dev_scored([(1, 0.72, 0.5, 0.6), (2, 0.70, 0.5, 0.6), (3, 0.71, 0.5, 0.6)]),  # 0.71: chosen
        "kocosa:one-seed": dev_scored([(1, 0.99, 0.9, 0.9)]),
        "kocosa:rescored": dev_scored([(s, 0.98, 0.9, 0.9) for s in (1, 2, 3)], runs_from="a"),
        "kocosa:more-data": dev_scored([(s, 0.97, 0.9, 0.9) for s in (1, 2, 3)], extra_train=["x.json"]),
        "beep": dev_scored([(s, 0.99, 0.9, 0.9) for s in (1, 2, 3)]),  # another corpus
    }
    assert quality.dev_candidates(results, "kocosa") == pytest.approx({"kocosa": 0.70, "kocosa:a": 0.71})
    assert quality.dev_choice(results, "kocosa") == "kocosa:a"
    results["kocosa:b"] = dev_scored([(1, 0.71, 0.5, 0.6), (2, 0.71, 0.5, 0.6), (3, 0.71, 0.5, 0.6)])
    assert quality.dev_choice(results, "kocosa") == "kocosa:a"  # a tie keeps the row recorded first
    assert quality.dev_choice(results, "unsmile") is None
    # a span corpus records no dev score: its untagged row (the experiment file) once it has three seeds
    spans = {"toxic_spans": {"runs": [{"seed": s, "test": {"OFF_span/char_f1": 0.6}} for s in (1, 2, 3)]}}
    assert quality.dev_choice(spans, "toxic_spans") == "toxic_spans"
    assert quality.dev_choice({"toxic_spans": {"runs": spans["toxic_spans"]["runs"][:2]}}, "toxic_spans") is None


def test_headline_scores_the_fused_model_of_the_dev_choice_against_the_stronger_ngram_and_the_aim():
    results = {
        "kocosa": dev_scored([(1, 0.60, 0.50, 0.90), (2, 0.60, 0.50, 0.90), (3, 0.60, 0.50, 0.90)]),
        "kocosa:a": dev_scored([(1, 0.70, 0.60, 0.54), (2, 0.70, 0.62, 0.56), (3, 0.70, 0.64, 0.76)]),
    }
    lines = quality.render_headline(results)
    # fused 0.54 / 0.56 / 0.76: mean 0.62, std 0.1217; 0.56 and 0.76 beat the n-gram with context (0.55);
    # the aim is 0.72; the longest run is seed 3's, 600 + 180 seconds = 13.0 minutes
    assert ("| kocosa | balanced_accuracy | kocosa [a] (2) | 0.7000 | 0.6200 ± 0.0200 | 0.6200 ± 0.1217 | "
            "0.540 / 0.560 / 0.760 | 0.5500 | 2 / 3 | 0.72: missed | 13.0 |") in lines
    assert not any(line.startswith("| beep") or line.startswith("| irosva average") for line in lines)
    table = quality.render(results)
    assert table.index("### The configuration dev would ship") < table.index("### Every configuration measured")


def test_headline_averages_the_three_irosva_choices_per_seed_and_reads_the_lexicon_for_spans():
    def irony(fused, ngram):
        return {"setup": {}, "baselines": {"ngram": {"macro_f1": ngram}, "ngram_context": {"macro_f1": ngram - 0.1}},
                "runs": [{"seed": s, "seconds": 60, "test": {"irony/macro_f1": f - 0.1},
                          "hybrid": {"dev_score": 0.5, "macro_f1": f}} for s, f in zip((1, 2, 3), fused)]}

    results = {"irosva_es": irony((0.70, 0.80, 0.90), 0.70), "irosva_mx": irony((0.60, 0.60, 0.60), 0.60),
               "irosva_cu": irony((0.80, 0.70, 0.60), 0.80),
               "toxic_spans": {"baselines": {"lexicon": {"char_f1": 0.58}},
                               "runs": [{"seed": s, "seconds": 120, "test": {"OFF_span/char_f1": v}}
                                        for s, v in ((1, 0.66), (2, 0.68), (3, 0.70))]}}
    lines = quality.render_headline(results)
    # per seed (0.7 + 0.6 + 0.8) / 3 = 0.70, (0.8 + 0.6 + 0.7) / 3 = 0.70, (0.9 + 0.6 + 0.6) / 3 = 0.70,
    # against the stronger n-gram row of the average, the text-only one: (0.7 + 0.6 + 0.8) / 3 = 0.70
    assert ("| irosva average | macro_f1 | the three above | — | — | 0.7000 ± 0.0000 | 0.700 / 0.700 / 0.700 | "
            "0.7000 | 0 / 3 | 0.70: met | — |") in lines
    assert ("| toxic_spans | char_f1 | toxic_spans (1) | — | 0.6800 ± 0.0200 | 0.6800 ± 0.0200 | "
            "0.660 / 0.680 / 0.700 | 0.5800 | 3 / 3 | 0.70: missed | 2.0 |") in lines


# Each experiment file of a model dev chose, the quality rows it was measured as, and their base file.
SHIPPED = {"kocosa_e5.yaml": (["kocosa:e5-balanced-swap"], "kocosa.yaml"),
           "beep_e5.yaml": (["beep:e5-lr1e-4-mean"], "beep.yaml"),
           "unsmile_e5.yaml": (["unsmile:e5-4ep-mean-bf16"], "unsmile.yaml"),
           "irosva_e5.yaml": ([f"irosva_{v}:e5-mean" for v in ("es", "mx", "cu")], "irosva.yaml")}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_experiment_file_is_the_configuration_dev_chose_and_fuses_the_ngram(name):
    """The file a user trains is the recorded row dev would ship, with the fusion switched on."""
    results = json.loads((Path(quality.ROOT) / "bench" / "results" / "quality.json").read_text())
    keys, base = SHIPPED[name]

    def settings(config):
        d = config.to_dict()
        for key in ("train", "dev", "test"):  # bench/quality.py names its own split files
            d["data"].pop(key)
        # chosen by the robustness runs (docs/benchmarks/robustness.md), where it left the clean dev score as it was
        d.pop("normalize")
        for task in d["tasks"]:
            # the fused model is decoded at 0.5 as the hybrid column is, so the encoder's thresholds
            # (`threshold: dev` in a measured row) do not reach what the shipped file predicts
            task.pop("fuse_ngram"), task.pop("fuse_metric"), task.pop("threshold")
        return d

    shipped = load_config(quality.EXPERIMENTS / name)
    assert shipped.tasks[0].fuse_ngram
    assert shipped.tasks[0].threshold != "dev"  # the fusion decoded at 0.5, as dev scored it
    for key in keys:
        corpus = key.split(":")[0]
        assert quality.dev_choice(results, corpus) == key
        assert shipped.tasks[0].fuse_metric == quality.CORPORA[corpus].baseline_metric  # what the hybrid tuned on
        measured = load_config(quality.EXPERIMENTS / base, results[key]["setup"]["set"])
        assert settings(shipped) == settings(measured)


def test_machines_line_lists_each_recorded_machine_once():
    results = {"_command": "cmd",
               "kocosa": {"runs": [{"seed": 1, "machine": "CPU B"}, {"seed": 2, "machine": "CPU A"}, {"seed": 3}]},
               "beep": {"runs": [{"seed": 1, "machine": "CPU B"}]}}
    assert "(recorded per run since 2026-12-02: CPU A; CPU B)" in quality.machines_line(results)
    assert "none yet" in quality.machines_line({"beep": {"runs": [{"seed": 1}]}})


def test_annotation_scores_count_every_annotators_label_against_the_posts_prediction():
    from kold_span.data.example import Annotation, Example

    def post(i, votes):
        return Example(str(i), f"post {i}", labels={"irony": sum(votes) * 2 > len(votes)},
                       annotations=[Annotation(f"A{j}", {"irony": v}) for j, v in enumerate(votes)])

    examples = [post(1, [True, True, False]), post(2, [False, True]), post(3, [])]
    scores = quality.annotation_scores("irony", examples, ["true", "false", "true"])
    # pairs: gold t t f | f t against predicted t t t | f f: "true" P = R = 2/3, "false" P = R = 1/2
    assert scores["pairs"] == 5 and scores["accuracy"] == pytest.approx(0.6)
    assert scores["f1"] == pytest.approx(2 / 3) and scores["macro_f1"] == pytest.approx((2 / 3 + 0.5) / 2)
    splits = {"train": [post(10 + i, [i % 2 == 0] * 3) for i in range(20)], "dev": [post(40 + i, [i % 2 == 0] * 3)
                                                                                    for i in range(10)]}
    row = quality.hybrid_row(quality.CORPORA["multipico"], UninformedPredictor(), splits, examples[:2], "irony")
    assert row["all_annotations"]["fused"]["pairs"] == 5 and row["all_annotations"]["encoder"]["pairs"] == 5
    assert "all_annotations" not in quality.hybrid_row(quality.CORPORA["multipico"], UninformedPredictor(), splits,
                                                       [Example("9", "post 9", labels={"irony": True})], "irony")


def test_annotation_rows_render_only_for_rows_whose_every_run_recorded_them():
    def run(seed, encoder, fused):
        scores = {"encoder": {"pairs": 7, "macro_f1": encoder, "f1": encoder - 0.2},
                  "fused": {"pairs": 7, "macro_f1": fused, "f1": fused - 0.2}}
        return {"seed": seed, "hybrid": {"all_annotations": scores}}

    results = {"multipico:e5": {"runs": [run(1, 0.6, 0.7), run(2, 0.8, 0.7)]},
               "multipico": {"runs": [run(1, 0.5, 0.5), {"seed": 2, "hybrid": {}}]}}
    lines = quality.render_annotation_rows(results)
    # encoder 0.6 / 0.8: 0.70 ± 0.1414; fused 0.7 / 0.7; "true" F1 0.2 lower
    assert "| multipico [e5] | 7 | 0.7000 ± 0.1414 | 0.7000 ± 0.0000 | 0.5000 ± 0.1414 | 0.5000 ± 0.0000 | 2 |" in lines
    assert not any(line.startswith("| multipico |") for line in lines)
    assert quality.render_annotation_rows({"multipico": results["multipico"]}) == []


ROOT = Path(__file__).resolve().parents[1]


def test_render_only_rebuilds_the_committed_docs_section_from_the_results_and_the_corpus_table(monkeypatch):
    """bench/quality.py --render-only must leave docs/benchmarks/quality.md as it is (the rendering machine aside)."""
    doc = (ROOT / "docs" / "benchmarks" / "quality.md").read_text(encoding="utf-8")
    section = doc.split("<!-- begin quality -->\n", 1)[1].split("\n<!-- end quality -->", 1)[0]
    machine = re.search(r"; rendered on (.*?); the command of each row", section).group(1)
    monkeypatch.setattr(quality, "machine_line", lambda: machine)
    results = json.loads((ROOT / "bench" / "results" / "quality.json").read_text(encoding="utf-8"))
    assert quality.render(results, results.get("_command", "python bench/quality.py")).rstrip() == section


def test_the_corpus_table_is_read_from_its_data_file_in_its_order():
    assert list(quality.CORPORA) == ["toxic_spans", "kold_gs", "irosva_es", "irosva_mx", "irosva_cu", "kocosa",
                                     "beep", "unsmile", "multipico"]
    # KOLD, a span corpus with a joint label, has a section of its own
    assert quality.HEADLINE == tuple(name for name in quality.CORPORA if name != "kold_gs")
    assert quality.JOINT == ("kold_gs",)
    kold = quality.CORPORA["kold_gs"]
    assert (kold.joint.label, kold.joint.metric, kold.joint.aim, kold.aim) == ("TGT", "TGT/macro_f1", 0.60, 0.75)
    assert kold.span_baselines == ["whole_text", "non_space", "lexicon", "token_ngram"]
    assert quality.CORPORA["toxic_spans"].span_baselines == ["lexicon"] and quality.CORPORA["toxic_spans"].joint is None
    irosva_mx, unsmile, toxic = (quality.CORPORA[n] for n in ("irosva_mx", "unsmile", "toxic_spans"))
    assert (irosva_mx.reader, irosva_mx.options, irosva_mx.label, irosva_mx.aim) == ("irosva", {"variant": "mx"},
                                                                                     "irony", None)
    assert (unsmile.problem, unsmile.metric, unsmile.aim) == ("multi", "groups/macro_f1", 0.74)
    assert (toxic.label, toxic.span_type, toxic.experiment) == (None, "OFF", "toxic_spans_minilm.yaml")
    assert quality.TABLE.aim("irosva average") == 0.70 and quality.TABLE.aim("multipico") is None


def _set(*keys_and_value):
    """An edit of the raw table: set the value at the path of keys."""
    *keys, last, value = keys_and_value

    def edit(table):
        for key in keys:
            table = table[key]
        table[last] = value
    return edit


def _drop(*keys):
    def edit(table):
        for key in keys[:-1]:
            table = table[key]
        del table[keys[-1]]
    return edit


def _rename(old, new):
    def edit(table):
        table["corpora"] = {new if name == old else name: entry for name, entry in table["corpora"].items()}
    return edit


@pytest.mark.parametrize("edit, message", [
    (_set("corpora", "beep", "lable", "hate"), "unknown key 'corpora.beep.lable'; allowed keys here: reader, path"),
    (_drop("corpora", "beep", "metric"), "missing key 'corpora.beep.metric'$"),
    (_set("corpora", "beep", "reader", "bepp"), "key 'corpora.beep.reader': unknown reader 'bepp'; known readers: "),
    (_set("corpora", "beep", "experiment", "nope.yaml"), "key 'corpora.beep.experiment': no file 'nope.yaml' in "),
    (_set("corpora", "beep", "problem", "soft"), "key 'corpora.beep.problem' must be one of single, multi"),
    (_set("corpora", "beep", "metric", "macro_f1"), "key 'corpora.beep.metric' must be TASK/METRIC"),
    (_set("corpora", "beep", "aim", 62), "key 'corpora.beep.aim' must be a score between 0 and 1"),
    (_set("corpora", "beep", "aim", "high"), "key 'corpora.beep.aim' must be float, got 'high'"),
    (_set("corpora", "beep", "options", "variant=es"), "key 'corpora.beep.options' must be a mapping"),
    (_set("corpora", "beep", "label", None), "corpus 'beep' needs a label .* or a span_type"),
    (_set("corpora", "beep", ["reader", "beep"]), "'corpora.beep' must be a mapping"),
    (_rename("beep", "beep:e5"), "corpus name 'beep:e5': ':' separates a tag"),
    (_set("corpora", {}), "'corpora' must map each corpus name to its entry"),
    (_set("targets", {}), "unknown key 'targets'; allowed keys here: corpora, irosva_average"),
    (_drop("irosva_average"), "missing key 'irosva_average'"),
    (_drop("irosva_average", "anchor"), "missing key 'irosva_average.anchor'"),
    (_set("corpora", "kold_gs", "span_baselines", ["whole"]), "key 'corpora.kold_gs.span_baselines': unknown "
                                                               "baseline 'whole'"),
    (_set("corpora", "beep", "joint", {"label": "x", "metric": "x/macro_f1", "baseline_metric": "macro_f1"}),
     "key 'corpora.beep.joint' is a label learnt beside a span corpus's spans"),
    (_set("corpora", "kold_gs", "joint", "metric", "macro_f1"), "key 'corpora.kold_gs.joint.metric' must be TASK/"),
    (_set("corpora", "kold_gs", "joint", "aim", 60), "key 'corpora.kold_gs.joint.aim' must be a score between 0"),
])
def test_a_bad_corpus_table_entry_is_an_error_naming_the_file_and_the_key(tmp_path, edit, message):
    import yaml

    from kold_span.config import read_yaml
    from kold_span.errors import ConfigError

    quality_corpora = pytest.importorskip("quality_corpora")
    table = read_yaml(quality_corpora.CORPORA_FILE)
    edit(table)
    path = tmp_path / "corpora.yaml"
    path.write_text(yaml.safe_dump(table, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {message}"):
        quality_corpora.load_corpora(path)


def bench_imports(path):
    """(line, module, name) of every `kold_span` import of a script, at any depth."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kold_span":
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names if alias.name.startswith("kold_span")]
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "bench").glob("*.py")), ids=lambda p: p.name)
def test_bench_scripts_use_the_packages_public_homes(path):
    """No private module or name, and the training layer only through `kold_span.training` (train through the grid)."""
    private = [f"{path.name}:{line} {module}.{name}" for line, module, name in bench_imports(path)
               if any(part.startswith("_") for part in [*module.split("."), name] if part)]
    internal = [f"{path.name}:{line} {module}" for line, module, _ in bench_imports(path)
                if module.startswith("kold_span.training.")]
    assert private == [] and internal == []


def test_the_public_home_check_sees_function_level_imports(tmp_path):
    script = tmp_path / "x.py"
    script.write_text("def f():\n    from kold_span.training.run import train\n"
                      "    from kold_span.corpora._common import find_file\n")
    assert bench_imports(script) == [(2, "kold_span.training.run", "train"),
                                     (3, "kold_span.corpora._common", "find_file")]


def kold_result(seeds_scores, command="python bench/quality.py --corpora kold_gs", benign=None):
    """A kold_gs result: runs of (seed, span char-F1, snapped char-F1, TGT macro-F1, TGT accuracy)."""
    base = {"whole_text": {"char_f1": 0.68}, "non_space": {"char_f1": 0.63}, "lexicon": {"char_f1": 0.31},
            "token_ngram": {"char_f1": 0.59}, "majority": {"accuracy": 0.61, "macro_f1": 0.19},
            "ngram": {"accuracy": 0.64, "macro_f1": 0.46}}
    runs = [{"seed": seed, "seconds": 3000 + 600 * i, "machine": "CPU K",
             "test": {"OFF_span/char_f1": span, "OFF_span/char_f1_morpheme": snapped, "TGT/macro_f1": macro,
                      "TGT/accuracy": accuracy}}
            for i, (seed, span, snapped, macro, accuracy) in enumerate(seeds_scores)]
    for run, flagged in zip(runs, benign or []):
        run["benign"] = {"examples": 10, "flagged": flagged}
    return {"n_train": 10812, "n_test": 1352, "command": command, "baselines": base, "runs": runs}


def test_kold_rows_render_in_their_own_section_with_both_metrics_every_baseline_and_the_aims():
    results = {"kold_gs": kold_result([(13, 0.70, 0.71, 0.50, 0.70), (14, 0.72, 0.73, 0.60, 0.72)]),
               "kold_gs:negatives": kold_result([(13, 0.66, 0.67, 0.58, 0.71)], "python bench/quality.py N",
                                                benign=[0.05]),
               "irosva_es": corpus_result([(1, 0.6)], 0.5)}
    section = quality.render_joint("kold_gs", results)
    lines = section.splitlines()
    # span 0.70 / 0.72: 0.71 ± 0.0141; snapped 0.72 ± 0.0141; TGT 0.55 ± 0.0707; the longest run 3,600 s
    assert ("| kold_gs (10812/1352) | 2 | 0.7100 ± 0.0141 | 0.7200 ± 0.0141 | 0.5500 ± 0.0707 | 0.7100 ± 0.0141 | — "
            "| 60.0 |") in lines
    assert "| kold_gs [negatives] (10812/1352) | 1 | 0.6600 | 0.6700 | 0.5800 | 0.7100 | 5.0% | 50.0 |" in lines
    assert "| baseline: the whole comment | — | 0.6800 | — | — | — | — | — |" in lines
    assert "| baseline: TF-IDF n-gram target type | — | — | — | 0.4600 | 0.6400 | — | — |" in lines
    assert ("- OFF_span/char_f1: 0.7100 ± 0.0141; aim 0.75: missed; the strongest baseline (the whole comment) "
            "0.6800, beaten by 2 / 2 seeds.") in lines
    assert ("- TGT/macro_f1: 0.5500 ± 0.0707; aim 0.60: missed; the TF-IDF n-gram 0.4600, beaten by 2 / 2 seeds."
            in lines)
    assert "45.4" in section and "62.5" in section and "not the same measure" in section.lower()
    assert "- kold_gs [negatives]: `python bench/quality.py N`" in lines
    # the tables every other corpus shares leave KOLD out
    table = quality.render(results)
    assert "| irosva_es (10/5) | macro_f1 | 0.6000 |" in table and "kold_gs" not in table
    assert not any(line.startswith("| kold_gs") for line in quality.render_headline(
        {"kold_gs": kold_result([(s, 0.8, 0.8, 0.7, 0.7) for s in (13, 14, 15)])}))


def test_the_kold_section_shows_the_published_figures_before_any_run():
    section = quality.render_joint("kold_gs", {})
    assert "no run recorded yet" in section and "Against the aims" not in section
    assert "| published (not the same measure: below) | — | KOLD paper: 0.454" in section


def test_another_experiment_file_reads_the_training_side_with_its_reader_options(tmp_path, monkeypatch):
    """--experiment kold_gs_e5_dialect.yaml: both sides of each training comment, the standard test side."""
    import argparse
    from types import SimpleNamespace

    import kold_span.experiments.grid as grid
    from kold_span.data.jsonl import read_jsonl

    def fake_train(config, resume=False, quiet=False, overwrite=False):
        run_dir = run_dir_of(config)
        run_dir.mkdir(parents=True)
        (run_dir / "config.json").write_text(json.dumps(config.to_dict()))
        metrics = {"test": {"OFF_span/char_f1": 0.5, "TGT/macro_f1": 0.4}, "dev": {"OFF_span/char_f1": 0.6},
                   "seconds": 7}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        return SimpleNamespace(metrics=metrics)

    monkeypatch.setattr(grid, "train", fake_train)
    data = tmp_path / "data"
    (data / "kold_gs").mkdir(parents=True)
    for name in ("detection_easy.jsonl", "detection_medium.jsonl", "detection_hard.jsonl"):
        (data / "kold_gs" / name).write_text((CORPORA / "kold_gs" / name).read_text(encoding="utf-8"),
                                             encoding="utf-8")
    test = data / "valid.jsonl"  # the fixture's first valid record, which has both sides
    test.write_text(json.dumps(json.loads((CORPORA / "kold_gs" / "valid.json").read_text(encoding="utf-8"))[0],
                               ensure_ascii=False) + "\n", encoding="utf-8")

    def args(experiment, test_file=str(test)):
        return argparse.Namespace(data=data, test=test_file, test_fraction=0.2, split_seed=42, limit=None,
                                  extra_train=None, extra_ngram_train=None, runs_from=None, tag="dialect",
                                  experiment=experiment, out=tmp_path / "out", set=[], seeds=[13], retrain=False,
                                  ensemble=False)

    spec = quality.CORPORA["kold_gs"]
    with pytest.raises(SystemExit, match="reads the training side with its own reader options"):
        quality.run_corpus("kold_gs", spec, args("kold_gs_e5_dialect.yaml", None))
    # two fixture records have no dialect span: the experiment's skip_bad keeps their standard side
    result = quality.run_corpus("kold_gs", spec, args("kold_gs_e5_dialect.yaml"))
    work = tmp_path / "out" / "kold_gs-dialect"
    trained = list(read_jsonl(work / "train.jsonl"))
    # four comments, two with a dialect span: six examples, each twin in its comment's group
    assert len(trained) == 6 and sum(e.id.endswith(":dialect") for e in trained) == 2
    assert {e.meta["group"] for e in trained} == {e.id for e in trained if not e.id.endswith(":dialect")}
    assert [e.meta["side"] for e in read_jsonl(work / "test.jsonl")] == ["standard"]
    run_dir = tmp_path / "out" / "runs" / "quality-kold_gs" / "kold_gs-dialect-seed13"
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["data"]["reader"] == "jsonl" and saved["data"]["reader_options"] == {}  # spent on train.jsonl
    assert result["runs"][0]["dev"] == {"OFF_span/char_f1": 0.6}  # a joint corpus's section shows dev
    assert {"whole_text", "non_space", "lexicon", "token_ngram", "majority", "ngram"} <= set(result["baselines"])
    assert quality.setup_of([], str(test), 0.2, 42, None, experiment="kold_gs_e5_dialect.yaml")["experiment"] == \
        "kold_gs_e5_dialect.yaml"
    assert "experiment" not in quality.setup_of([], str(test), 0.2, 42, None)  # rows recorded before still match


def test_render_only_rebuilds_the_committed_kold_section(monkeypatch):
    doc = (ROOT / "docs" / "benchmarks" / "quality.md").read_text(encoding="utf-8")
    section = doc.split("<!-- begin quality-kold-gs -->\n", 1)[1].split("\n<!-- end quality-kold-gs -->", 1)[0]
    machine = re.search(r"; rendered on (.*?)\. The command of each row", section).group(1)
    monkeypatch.setattr(quality, "machine_line", lambda: machine)
    results = json.loads((ROOT / "bench" / "results" / "quality.json").read_text(encoding="utf-8"))
    assert quality.render_joint("kold_gs", results).rstrip() == section
