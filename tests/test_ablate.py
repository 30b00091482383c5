"""Ablation grids: value splitting, cell ids, the summary tables, and one tiny grid end to end."""
import argparse
import csv
import json
from pathlib import Path

import pytest

from kold_span.cli import ablate as ablate_command
from kold_span.cli import main
from kold_span.cli.main import build_parser
from kold_span.errors import ArgumentError, ConfigError
from kold_span.experiments import grid as ablate
from kold_span.experiments import results
from kold_span.experiments.grid import finished_metrics, train_planned
from kold_span.experiments.markdown import render_markdown
from kold_span.experiments.plan import (MAX_ID_CHARS, cell_id, check_saved_config, grid_cells, parse_vary, plan_cell,
                                        plan_grid, split_values)
from kold_span.experiments.plot import value_label
from kold_span.experiments.results import write_results
from kold_span.experiments.summary import MAX_METRIC_COLUMNS, choose_metrics, mean_std, summarize

from conftest import FIXTURE, TINY

TINY_SET = [f"data.train={FIXTURE}", "trainer.max_epochs=2", "data.limit=12", "data.test_fraction=0.25"]


def _never_train(*args, **kwargs):
    raise AssertionError("train() must not be called here")


# --------------------------------------------------------------------------- values and cells


@pytest.mark.parametrize("text, values", [
    ("title,none", ["title", "none"]),
    ("0,1,2,null", ["0", "1", "2", "null"]),
    ("[a, b],{x: 1, y: 2}, c", ["[a, b]", "{x: 1, y: 2}", "c"]),
    ("'a,b',don't", ["'a,b'", "don't"]),
    ("[[1, 2], [3]],x", ["[[1, 2], [3]]", "x"]),
])
def test_split_values_only_at_top_level_commas(text, values):
    assert split_values(text) == values


@pytest.mark.parametrize("text, message", [("a,,b", "empty value"), ("a,", "empty value"),
                                           ("[1, 2", "unclosed"), ("a]", "unbalanced"), ("[a}", "unbalanced"),
                                           ("'a,b", "unclosed")])
def test_split_values_rejects_malformed_lists(text, message):
    with pytest.raises(ArgumentError, match=message):
        split_values(text)


def test_parse_vary_keeps_key_order_and_rejects_repeats():
    assert parse_vary(["context=title,none", "context.max_turns=0,null"]) == {
        "context": ["title", "none"], "context.max_turns": ["0", "null"]}
    with pytest.raises(ArgumentError, match="given twice"):
        parse_vary(["context=auto", "context=none"])
    with pytest.raises(ArgumentError, match="KEY=v1,v2"):
        parse_vary(["context"])


def test_cell_ids_are_readable_safe_and_distinct():
    assert cell_id({"context": "none", "trainer.max_epochs": "3"}) == "context=none__trainer.max_epochs=3"
    assert cell_id({"trainer.lr": "1e-3"}) == "trainer.lr=1e-3"
    unsafe = [cell_id({"data.train": v}) for v in ("a/b", "a_b", "a b", "[1, 2]")]
    assert unsafe[1] == "data.train=a_b"
    assert len(set(unsafe)) == 4
    assert all(c.startswith("data.train=a_b-") for c in unsafe[::2])
    assert all(set(c) <= set("abcdefghijklmnopqrstuvwxyz0123456789._=+-_") for c in unsafe)
    long = cell_id({"data.filter": "x" * 300})
    assert len(long) == MAX_ID_CHARS and long != cell_id({"data.filter": "x" * 301})


def test_grid_is_the_product_with_the_reference_first():
    cells = grid_cells({"context": ["auto", "none"], "context.max_turns": [0, None]})
    assert cells == [{"context": "auto", "context.max_turns": "0"}, {"context": "auto", "context.max_turns": "null"},
                     {"context": "none", "context.max_turns": "0"}, {"context": "none", "context.max_turns": "null"}]
    with pytest.raises(ArgumentError, match="--seeds"):
        grid_cells({"seed": [1, 2]})
    with pytest.raises(ArgumentError, match="repeated"):
        grid_cells({"context": ["none", "none"]})
    with pytest.raises(ArgumentError, match=r"--vary model.dropout: a value is repeated in \['0.0', '0'\]"):
        grid_cells({"model.dropout": ["0.0", "0"]})  # one value written twice


def test_plan_validates_every_cell_before_training(tmp_path, monkeypatch):
    monkeypatch.setattr(ablate, "train", _never_train)
    planned = plan_grid(TINY, parse_vary(["context=title,none", "context.max_turns=0,1,2,null"]), 2, tmp_path,
                        TINY_SET)
    assert len(planned) == 2 * 4 * 2
    assert [r.seed for r in planned[:2]] == [7, 8]  # tiny.yaml: seed 7
    first, last = planned[0].config, planned[-1].config
    assert (first.context.mode, first.context.max_turns) == ("title", 0)
    assert (last.context.mode, last.context.max_turns) == ("none", None)
    assert planned[-1].run_dir == tmp_path / "runs" / "tiny" / "context=none__context.max_turns=null-seed8"
    with pytest.raises(ConfigError, match="unknown key 'trainer.max_epoch'"):
        plan_grid(TINY, {"context": ["none"], "trainer.max_epoch": ["1", "2"]}, 1, tmp_path, TINY_SET)
    with pytest.raises(ConfigError, match="context.mode"):
        plan_grid(TINY, {"context": ["auto", "nowhere"]}, 1, tmp_path, TINY_SET)
    with pytest.raises(ConfigError, match="no test split"):
        plan_grid(TINY, {"context": ["auto"]}, 1, tmp_path, [f"data.train={FIXTURE}"])


def test_plan_cell_runs_the_given_seeds_under_the_given_name(tmp_path, monkeypatch):
    monkeypatch.setattr(ablate, "train", _never_train)
    planned = plan_cell(TINY, {"context": "none"}, [13, 15], tmp_path / "runs", "kold-x", TINY_SET)
    assert [(r.seed, r.config.seed, r.cell_id, r.cell) for r in planned] == [
        (13, 13, "kold-x", {"context": "none"}), (15, 15, "kold-x", {"context": "none"})]
    assert planned[0].config.context.mode == "none"  # the cell's value, applied after the overrides
    assert planned[1].run_dir == tmp_path / "runs" / "tiny" / "kold-x-seed15"
    assert planned[1].last_checkpoint == planned[1].run_dir / "checkpoints" / "last.ckpt"
    with pytest.raises(ArgumentError, match="kold-x: no seeds"):
        plan_cell(TINY, {}, [], tmp_path / "runs", "kold-x", TINY_SET)
    with pytest.raises(ConfigError, match="no test split"):
        plan_cell(TINY, {}, [1], tmp_path / "runs", "kold-x", [f"data.train={FIXTURE}"])


def test_a_planned_run_is_reused_when_finished_resumed_when_interrupted_and_retrained_on_request(tmp_path,
                                                                                                   monkeypatch):
    calls = []

    def fake_train(config, resume=False, quiet=False, overwrite=False):
        calls.append((config.run, resume, quiet, overwrite))
        return argparse.Namespace(metrics={"test": {"OFF/macro_f1": 0.5}, "seconds": 3})

    monkeypatch.setattr(ablate, "train", fake_train)
    [run] = plan_cell(TINY, {}, [7], tmp_path / "runs", "cell", TINY_SET)
    assert finished_metrics(run) is None
    assert train_planned(run) == {"test": {"OFF/macro_f1": 0.5}, "seconds": 3}
    run.last_checkpoint.parent.mkdir(parents=True)
    run.last_checkpoint.write_bytes(b"")
    train_planned(run)
    train_planned(run, retrain=True)
    # retrained on request: started over, told to overwrite the unfinished run's checkpoint
    assert calls == [("cell-seed7", False, True, False), ("cell-seed7", True, True, False),
                     ("cell-seed7", False, True, True)]
    (run.run_dir / "metrics.json").write_text(json.dumps({"test": {"OFF/macro_f1": 0.25}}))
    assert finished_metrics(run) == {"test": {"OFF/macro_f1": 0.25}}
    check_saved_config(run)  # no config.json: nothing to compare
    (run.run_dir / "config.json").write_text(json.dumps(run.config.to_dict()))
    check_saved_config(run)
    [other] = plan_cell(TINY, {}, [7], tmp_path / "runs", "cell", [*TINY_SET, "trainer.lr=0.5"])
    with pytest.raises(ValueError, match=r"cell-seed7 was trained with other settings \(trainer.lr differ\)"):
        check_saved_config(other)


# --------------------------------------------------------------------------- summaries


ROWS = [  # two cells × two seeds, hand-made
    {"cell": "context=auto", "context": "auto", "seed": 7, "OFF/macro_f1": 0.5, "OFF/weighted_f1": 0.9,
     "OFF_span/char_f1": 0.2, "seconds": 1.0},
    {"cell": "context=auto", "context": "auto", "seed": 8, "OFF/macro_f1": 0.7, "OFF/weighted_f1": 0.9,
     "OFF_span/char_f1": 0.4, "seconds": 1.0},
    {"cell": "context=none", "context": "none", "seed": 7, "OFF/macro_f1": 0.8, "OFF/weighted_f1": 0.9,
     "OFF_span/char_f1": 0.1, "seconds": 1.0},
    {"cell": "context=none", "context": "none", "seed": 8, "OFF/macro_f1": 0.9, "OFF/weighted_f1": 0.9,
     "seconds": 1.0},  # no span score in this run
]


def test_mean_std_is_the_sample_std():
    mean, std, n = mean_std([0.5, 0.7])
    assert (mean, n) == (pytest.approx(0.6), 2)
    assert std == pytest.approx(0.1414213, abs=1e-6)  # sqrt((0.1² + 0.1²) / 1)
    assert mean_std([0.3, None]) == (0.3, None, 1)
    assert mean_std([]) == (None, None, 0)


def test_default_metrics_are_headline_scores_capped():
    names = ["A/accuracy", "A/macro_f1", "A/weighted_f1", "A/f1", "S/char_f1", "S/char_micro_f1"]
    assert choose_metrics(names) == ["A/macro_f1", "S/char_f1", "A/f1", "A/accuracy"]
    many = [f"T{i}/macro_f1" for i in range(9)]
    assert choose_metrics(many) == many[:MAX_METRIC_COLUMNS]
    assert choose_metrics(names, ["S/char_micro_f1", "A/f1"]) == ["S/char_micro_f1", "A/f1"]
    with pytest.raises(ArgumentError, match="A/f2"):
        choose_metrics(names, ["A/f2"])


def test_summary_means_stds_and_differences_by_hand():
    summary = summarize(ROWS, ["context"], ["OFF/macro_f1", "OFF_span/char_f1"])
    auto, none = summary
    assert (auto["values"], auto["runs"], none["runs"]) == ({"context": "auto"}, 2, 2)
    assert auto["mean"]["OFF/macro_f1"] == pytest.approx(0.6)
    assert none["mean"]["OFF/macro_f1"] == pytest.approx(0.85)
    assert none["std"]["OFF/macro_f1"] == pytest.approx(0.0707107, abs=1e-6)
    assert none["diff"]["OFF/macro_f1"] == pytest.approx(0.25)
    assert auto["diff"]["OFF/macro_f1"] == 0
    # One span score in the `none` cell: its mean is that score, without a std.
    assert (none["mean"]["OFF_span/char_f1"], none["std"]["OFF_span/char_f1"]) == (0.1, None)
    assert none["diff"]["OFF_span/char_f1"] == pytest.approx(-0.2)

    md = render_markdown(summary, ["context"], ["OFF/macro_f1", "OFF_span/char_f1"], "kold-span ablate x")
    lines = md.splitlines()
    assert "kold-span ablate x" in lines[:5]
    assert "| auto | 2 | 0.600 ± 0.141 | 0.300 ± 0.141 |" in lines
    assert "| none | 2 | 0.850 ± 0.071 | 0.100 |" in lines
    assert "| context | runs | Δ OFF/macro_f1 | Δ OFF_span/char_f1 |" in lines
    assert "| auto | 2 | ref | ref |" in lines
    assert "| none | 2 | +0.250 | -0.200 |" in lines


def test_write_results_two_keys(tmp_path):
    rows = [{**row, "cell": f"{row['cell']}__trainer.lr={lr}", "trainer.lr": lr}
            for lr in ("1e-3", "3e-4") for row in ROWS]
    paths = write_results(rows, ["context", "trainer.lr"], tmp_path, command="kold-span ablate y")
    assert [p.name for p in paths] == ["results.csv", "results.md", "results.png"]
    with open(paths[0], newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 8
    assert list(table[0])[:3] == ["cell", "context", "trainer.lr"] and list(table[0])[-1] == "seconds"
    assert table[3]["OFF_span/char_f1"] == ""
    md = paths[1].read_text(encoding="utf-8")
    assert "| context | trainer.lr | runs | OFF/macro_f1 | OFF_span/char_f1 |" in md  # weighted_f1: not a default
    assert paths[2].stat().st_size > 1000


def test_results_that_fail_leave_the_previous_ones_as_they_were(tmp_path, monkeypatch):
    paths = write_results(ROWS, ["context"], tmp_path, command="kold-span ablate x")
    before = [p.read_bytes() for p in paths]

    def broken(summary, keys, metric, target, **options):
        raise OSError("no space left on device")

    monkeypatch.setattr(results, "plot_main_metric", broken)  # the plot is the last file: the table is rendered first
    with pytest.raises(OSError, match="no space"):
        write_results(ROWS[:1], ["context"], tmp_path, command="kold-span ablate y")
    assert [p.read_bytes() for p in paths] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "results.md", "results.png"]


# --------------------------------------------------------------------------- end to end


def _ablate_argv(out: Path, *extra: str) -> list[str]:
    return ["ablate", str(TINY), "--vary", "context=auto,none", "--seeds", "1", "--out", str(out),
            "--set", *TINY_SET, *extra]


def _run_ablate(out: Path, *extra: str) -> int:
    """`kold-span ablate` on the tiny grid, without the command line's error handling and logging set-up."""
    return ablate_command.run(build_parser().parse_args(_ablate_argv(out, *extra)))


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """A 2-cell × 1-seed grid on the tiny fixture config (shared by the tests below)."""
    out = tmp_path_factory.mktemp("ablate")
    assert _run_ablate(out) == 0
    return out


@pytest.mark.slow
def test_grid_writes_csv_markdown_and_plot(grid):
    with open(grid / "results.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["cell"], r["context"], r["seed"]) for r in rows] == [("context=auto", "auto", "7"),
                                                                    ("context=none", "none", "7")]
    assert 0 <= float(rows[0]["OFF/accuracy"]) <= 1 and "OFF_span/char_f1" in rows[0]
    md = (grid / "results.md").read_text(encoding="utf-8")
    assert "--vary context=auto,none --seeds 1" in md
    assert "| auto | 1 |" in md and "| none | 1 |" in md
    assert "Δ OFF/macro_f1" in md
    assert (grid / "results.png").read_bytes()[:4] == b"\x89PNG"
    saved = json.loads((grid / "runs" / "tiny" / "context=none-seed7" / "config.json").read_text())
    assert saved["context"]["mode"] == "none" and saved["seed"] == 7


@pytest.mark.slow
def test_rerun_reuses_finished_runs(grid, monkeypatch, capsys):
    """The command prints the results table; the progress lines are logged to stderr, unless --quiet or -q."""
    monkeypatch.setattr(ablate, "train", _never_train)
    before = (grid / "results.csv").read_text(encoding="utf-8")
    assert main(_ablate_argv(grid)) == 0
    captured = capsys.readouterr()
    assert "[2/2] context=none seed 7: reused" in captured.err and "reused" not in captured.out
    assert captured.out.startswith("# Ablation results") and f"wrote {grid / 'results.csv'}" in captured.out
    assert (grid / "results.csv").read_text(encoding="utf-8") == before
    for argv in (_ablate_argv(grid, "--quiet"), ["-q", *_ablate_argv(grid)]):
        assert main(argv) == 0
        captured = capsys.readouterr()
        assert "reused" not in captured.err and captured.out.startswith("# Ablation results")


@pytest.mark.slow
def test_rerun_with_other_settings_is_refused(grid, monkeypatch, capsys):
    monkeypatch.setattr(ablate, "train", _never_train)
    with pytest.raises(ConfigError, match="trainer.max_epochs"):
        _run_ablate(grid, "trainer.max_epochs=3")
    assert main(_ablate_argv(grid, "trainer.max_epochs=3")) == 2
    assert capsys.readouterr().err.startswith(f"kold-span ablate: error: {grid / 'runs'}")


@pytest.mark.slow
def test_rerun_with_another_thread_count_reuses_the_runs(grid, monkeypatch, caplog):
    """Threads, the progress bar and where the runs folder is named change how a run executes, not what it computes."""
    monkeypatch.setattr(ablate, "train", _never_train)
    with caplog.at_level("INFO", logger="kold_span"):
        assert _run_ablate(grid, "trainer.threads=2", "trainer.progress_bar=true") == 0
    assert "context=auto seed 7: reused" in caplog.text


@pytest.mark.slow
def test_run_saved_before_a_key_existed_is_reused(tmp_path, monkeypatch, caplog):
    """A config.json without a key added since (at its default) is the same config, not 'other settings'."""
    out = tmp_path / "grid"
    assert _run_ablate(out) == 0
    saved_path = out / "runs" / "tiny" / "context=none-seed7" / "config.json"
    saved = json.loads(saved_path.read_text())
    for task in saved["tasks"]:
        assert task.pop("class_weight") is None  # as written before tasks[].class_weight existed
    del saved["context"]["max_turns"]
    saved_path.write_text(json.dumps(saved))
    monkeypatch.setattr(ablate, "train", _never_train)
    with caplog.at_level("INFO", logger="kold_span"):
        assert _run_ablate(out) == 0
    assert "context=none seed 7: reused" in caplog.text
    saved["context"]["mode"] = "auto"  # a real difference is still refused
    saved_path.write_text(json.dumps(saved))
    with pytest.raises(ConfigError, match="context.mode"):
        _run_ablate(out)


@pytest.mark.parametrize("key, text, label", [
    ("tasks", "[{name: A, kind: sequence, source: OFF}, {name: B, kind: span, source: OFF, gate: A}]", "A + B (gate=A)"),
    ("tasks", "[{name: T, kind: sequence, source: T, class_weight: balanced}]", "T (class_weight=balanced)"),
    ("tasks", "[not, a, task, list]", "tasks=[not, a, task, list]"),
    ("tasks", "[{unclosed", "tasks=[{unclosed"),
    ("context.max_turns", "null", "context.max_turns=null"),
])
def test_plot_labels_of_task_lists_name_the_heads(key, text, label):
    assert value_label(key, text) == label
