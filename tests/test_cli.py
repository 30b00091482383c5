"""The command line: one module per command, errors reported in one line, library logs on stderr, no print elsewhere."""
import ast
import json
import logging
import os
from pathlib import Path

import pytest

from kold_span.cli import main
from kold_span.cli.main import COMMANDS, build_parser, log_level
from conftest import FIXTURE, TINY
from kold_span.evaluation import prediction_files as files
from kold_span.evaluation.prediction_files import EvaluationReport

PACKAGE = Path(__file__).resolve().parents[1] / "kold_span"
GOLD = {"id": "1", "text": "you idiot", "spans": {"OFF": [[4, 9]]}}


def print_calls(path: Path) -> list[int]:
    """The lines of a module that call the built-in `print` (a name called, not a word in a string)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]


def test_no_module_outside_cli_prints():
    found = {str(p.relative_to(PACKAGE)): print_calls(p) for p in sorted(PACKAGE.rglob("*.py"))
             if p.relative_to(PACKAGE).parts[0] != "cli"}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_print_check_sees_calls_not_strings(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""print(x) in a docstring."""\nlog = "print(1)"\n\n\ndef f():\n    print("hi")\n',
                      encoding="utf-8")
    assert print_calls(module) == [6]


def test_every_command_module_registers_one_subcommand():
    names = list(COMMANDS)
    assert names == ["train", "configs", "predict", "evaluate", "thresholds", "robustness", "functional", "convert",
                     "agreement", "pretrain", "import-encoder", "ablate", "serve", "export"]
    choices = build_parser()._subparsers._group_actions[0].choices
    assert list(choices) == names
    assert all(choices[name].get_default("run") is COMMANDS.get(name).run for name in names)


@pytest.mark.parametrize("argv, level", [
    (["evaluate", "--gold", "g", "--pred", "p"], logging.INFO),
    (["-v", "evaluate", "--gold", "g", "--pred", "p"], logging.DEBUG),
    (["--quiet", "evaluate", "--gold", "g", "--pred", "p"], logging.WARNING),
    (["predict", "--model", "m", "--input", "i", "--output", "o", "--quiet"], logging.WARNING),
    (["-v", "predict", "--model", "m", "--input", "i", "--output", "o", "--quiet"], logging.DEBUG),
])
def test_log_level_of_the_global_and_command_flags(argv, level):
    assert log_level(build_parser().parse_args(argv)) == level


def test_verbose_and_quiet_exclude_each_other(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["-v", "-q", "evaluate", "--gold", "g", "--pred", "p"])
    assert "not allowed with argument" in capsys.readouterr().err


def _write_gold(tmp_path: Path) -> Path:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps(GOLD) + "\n", encoding="utf-8")
    return gold


@pytest.mark.parametrize("flag, logged", [(None, "info\nwarning\n"), ("-v", "debug\ninfo\nwarning\n"),
                                          ("-q", "warning\n")])
def test_library_records_go_to_stderr_as_bare_messages(tmp_path, monkeypatch, capsys, flag, logged):
    def scored(gold, pred, policy, **options):
        log = logging.getLogger("kold_span.evaluation.prediction_files")
        log.debug("debug")
        log.info("info")
        log.warning("warning")
        return EvaluationReport({"examples": 1})

    monkeypatch.setattr(files, "evaluate_files", scored)
    gold = _write_gold(tmp_path)
    assert main([*([flag] if flag else []), "evaluate", "--gold", str(gold), "--pred", str(gold)]) == 0
    captured = capsys.readouterr()
    assert captured.err == logged
    assert captured.out == "metric    value\n--------  ------\nexamples  1\n"  # stdout keeps the table only
    assert not logging.getLogger("kold_span").handlers  # the command's handler is gone again


def test_a_kold_span_error_is_one_line_naming_the_command(tmp_path, capsys):
    gold = _write_gold(tmp_path)
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"id": "1", "spans": [{"type": "OFF", "start": 4}]}\n', encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--pred", str(pred)]) == 2
    assert capsys.readouterr().err == (f"kold-span evaluate: error: {pred}:1: field 'spans': each span needs type, "
                                       "start, end\n")


def test_a_missing_file_is_named_without_errno(tmp_path, capsys):
    missing = tmp_path / "x.jsonl"
    assert main(["evaluate", "--gold", str(missing), "--pred", str(missing)]) == 2
    assert capsys.readouterr().err == f"kold-span evaluate: error: no such file: {missing}\n"


def test_an_empty_gold_file_is_an_error_naming_it(tmp_path, capsys):
    pred = _write_gold(tmp_path)
    gold = tmp_path / "empty.jsonl"
    gold.write_text("\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--pred", str(pred)]) == 2
    assert capsys.readouterr().err == f"kold-span evaluate: error: {gold}: no gold examples to score against\n"


@pytest.mark.parametrize("error", [KeyError("stride"), ValueError("a bug"), TypeError("a bug")])
def test_any_other_error_is_a_bug_and_keeps_its_traceback(tmp_path, monkeypatch, error):
    def broken(gold, pred, policy, **options):
        raise error

    monkeypatch.setattr(files, "evaluate_files", broken)
    gold = _write_gold(tmp_path)
    with pytest.raises(type(error)):
        main(["evaluate", "--gold", str(gold), "--pred", str(gold)])
    assert not logging.getLogger("kold_span").handlers


def test_an_error_prints_its_notes_and_evaluate_keeps_the_previous_scores(tmp_path, monkeypatch, capsys):
    gold = _write_gold(tmp_path)
    out = tmp_path / "scores" / "s.json"  # the directory is created
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold), "--out", str(out)]) == 0
    before = out.read_bytes()
    capsys.readouterr()

    def disk_full(handle):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # the new scores cannot be made to last
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"kold-span evaluate: error: no space left on device; {out} left as it was\n")
    assert out.read_bytes() == before and sorted(p.name for p in out.parent.iterdir()) == ["s.json"]


def test_notes_follow_the_message_and_an_interrupt_exits_130(tmp_path, monkeypatch, capsys):
    from kold_span.data.atomic import atomic_write

    def interrupted(gold, pred, policy, **options):
        with atomic_write(tmp_path / "x.json") as f:
            f.write("{")
            raise KeyboardInterrupt

    monkeypatch.setattr(files, "evaluate_files", interrupted)
    gold = _write_gold(tmp_path)
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold)]) == 130
    assert capsys.readouterr().err == f"kold-span evaluate: error: interrupted; {tmp_path / 'x.json'} not written\n"


# issue 54: `train CONFIG --set run=X --set trainer.max_epochs=1` dropped the first --set (nargs="*").
@pytest.mark.parametrize("argv, dest, expected", [
    (["train", "c.yaml", "--set", "run=X", "--set", "trainer.max_epochs=1", "seed=2"], "set",
     ["run=X", "trainer.max_epochs=1", "seed=2"]),
    (["pretrain", "c.yaml", "--set", "max_steps=3", "--set", "seed=2"], "set", ["max_steps=3", "seed=2"]),
    (["ablate", "c.yaml", "--vary", "seed=1,2", "--out", "o", "--set", "a=1", "--set", "b=2"], "set", ["a=1", "b=2"]),
    (["convert", "kold", "in.json", "out.jsonl", "--option", "a=1", "--option", "b=2"], "option", ["a=1", "b=2"]),
    (["agreement", "in.json", "--format", "kold", "--out", "o", "--option", "a=1", "--option", "b=2"], "option",
     ["a=1", "b=2"]),
    (["predict", "--model", "a", "--model", "b", "--input", "i.txt", "--output", "o.jsonl"], "model", ["a", "b"]),
    (["serve", "--model", "a", "--model", "b", "c"], "model", ["a", "b", "c"]),
    (["robustness", "--model", "m", "--input", "g.jsonl", "--out", "o", "--negative", "false", "--negative", "none"],
     "negative", ["false", "none"]),
])
def test_a_repeated_option_keeps_every_value_in_every_command(argv, dest, expected):
    assert getattr(build_parser().parse_args(argv), dest) == expected


EMPTY = "expected a file name, got an empty one"


@pytest.mark.parametrize("argv, message", [
    (["predict", "--model", "m", "--input", "in.txt", "--output", ""], f"argument --output: {EMPTY}"),
    (["predict", "--model", "m", "--input", "in.txt", "--output", "o.jsonl", "--html", ""], f"argument --html: {EMPTY}"),
    (["convert", "kold", "in.json", ""], f"argument out: {EMPTY}"),
    (["evaluate", "--gold", "g.jsonl", "--pred", "p.jsonl", "--out", ""], f"argument --out: {EMPTY}"),
    (["agreement", "in.json", "--format", "kold", "--out", ""], f"argument --out: {EMPTY}"),
    (["agreement", "in.json", "--format", "kold", "--out", "o", "--n-boot", "1000000000"],
     "argument --n-boot: must be in [1, 100000], got 1000000000"),
    (["agreement", "in.json", "--format", "kold", "--out", "o", "--seed", "-1"],
     "argument --seed: must be in [0, 4294967295], got -1"),
])
def test_an_empty_output_name_and_an_unbounded_count_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(message)


def test_an_agreement_group_by_field_nobody_has_names_the_fields(tmp_path, capsys):
    from conftest import FIXTURE

    assert main(["agreement", str(FIXTURE), "--format", "kold", "--out", str(tmp_path / "a"), "--group-by",
                 "nope", "--n-boot", "10"]) == 2
    assert capsys.readouterr().err.startswith("kold-span agreement: error: group_by 'nope': no example has this meta "
                                              "field; the fields present: ")
    assert not (tmp_path / "a").exists()


def test_a_device_that_computes_nothing_is_refused(tmp_path, capsys):
    from conftest import untrained_model

    model = untrained_model(tmp_path / "model")
    (tmp_path / "in.txt").write_text("바보\n", encoding="utf-8")
    assert main(["predict", "--model", str(model), "--input", str(tmp_path / "in.txt"), "--output",
                 str(tmp_path / "o.jsonl"), "--device", "meta"]) == 2
    assert "device must be cpu, cuda or cuda:N, got 'meta'" in capsys.readouterr().err


@pytest.mark.parametrize("override, message", [
    ("trainer.devices=[99]", "trainer.devices=[99]: Lightning cannot train with it"),
    ("trainer.precision=bogus", "trainer.precision='bogus': Lightning cannot train with it"),
    ("trainer.accelerator=bogus", "trainer.accelerator='bogus': Lightning cannot train with it"),
    ("trainer.devices=4096", "trainer.devices=4096: 4096 training processes on a machine of"),
])
def test_trainer_settings_lightning_refuses_are_one_line_before_any_data_is_read(tmp_path, capsys, override,
                                                                                   message):
    from conftest import TINY

    argv = ["train", str(TINY), "--set", "data.train=no/such/file.json", f"output_dir={tmp_path}", override]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kold-span train: error: {message}") and err.count("\n") == 1, err


@pytest.mark.slow
def test_quiet_training_prints_no_library_chatter(tmp_path):
    # -q: warnings only. Run as a user runs it, in a process of its own: under pytest the root logger has
    # handlers, and Lightning's device lines and tips would go to them rather than to stderr.
    import subprocess
    import sys

    from conftest import child_env

    argv = ["-q", "train", str(TINY), "--set", f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=q",
            "trainer.max_epochs=1", "data.limit=8"]
    done = subprocess.run([sys.executable, "-m", "kold_span.cli", *argv], capture_output=True, text=True,
                          env=child_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    for chatter in ("GPU available", "TPU available", "Tip:", "Map:", "LOCAL_RANK", "Trainable params"):
        assert chatter not in done.stderr + done.stdout, done.stderr + done.stdout
    assert done.stdout.strip().startswith(("Test metrics", "Model:")), done.stdout  # what train itself prints
