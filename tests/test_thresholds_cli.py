"""`kold-span thresholds`: a new model directory with the policy, signed anew; a target no threshold meets refused."""
import json

import pytest

from kold_span.cli.main import main
from kold_span.data.example import Example
from kold_span.inference.predictor import Predictor
from kold_span.models.manifest import verify_manifest

from conftest import untrained_model

TEXTS = ["이 쓰레기 같은 정치인들", "너 진짜 한심하다", "좋은 기사 감사합니다", "오늘 경기 정말 재밌었어요"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("model") / "model")


def gold_file(path, off):
    lines = [json.dumps(Example(str(i), text, labels={"OFF": off}, spans={"OFF": [(0, 2)] if off else []}).to_dict(),
                        ensure_ascii=False) for i, text in enumerate(TEXTS * 3)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_policy_is_chosen_written_and_signed(model, tmp_path, capsys):
    dev = gold_file(tmp_path / "dev.jsonl", off=True)  # every text offensive: any threshold is precise
    out = tmp_path / "decided"
    assert main(["thresholds", "--model", str(model), "--dev", str(dev), "--set", "OFF:true", "precision=0.95",
                 "--out", str(out), "--samples", "200"]) == 0
    printed = capsys.readouterr().out
    # 12 texts, all offensive and all flagged: as low as 0.025 ** (1/12) by the exact binomial interval
    assert "OFF:true remove at" in printed and "precision 1.000 [0.735, 1.000], recall 1.000" in printed
    assert verify_manifest(out) is not None  # the new config.json is in the manifest
    policy = Predictor.from_pretrained(out).tasks[0].decision
    assert policy["label"] == "true" and policy["remove"]["target"] == "precision=0.95"
    assert policy["remove"]["data"] == "dev.jsonl" and len(policy["remove"]["data_sha256"]) == 64
    assert policy["remove"]["bootstrap"] == {"samples": 200, "seed": 0, "level": 0.95}
    assert Predictor.from_pretrained(model).tasks[0].decision is None  # the given model is as it was
    # a second run adds the review band and keeps remove
    assert main(["thresholds", "--model", str(out), "--dev", str(dev), "--set", "OFF:true", "recall=1.0",
                 "--in-place", "--samples", "50"]) == 0
    again = Predictor.from_pretrained(out).tasks[0].decision
    assert again["remove"] == policy["remove"] and again["review"]["target"] == "recall=1"


def test_an_unreachable_target_is_refused_naming_the_best(model, tmp_path, capsys):
    dev = gold_file(tmp_path / "dev.jsonl", off=False)  # nothing offensive: no flagged text is right
    out = tmp_path / "never"
    assert main(["thresholds", "--model", str(model), "--dev", str(dev), "--set", "OFF", "precision=0.9",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "kold-span thresholds: error: task OFF:true: no threshold reaches precision=0.9" in err
    assert "highest precision reached is 0.0000" in err and not out.exists()


@pytest.mark.parametrize("words, message", [
    (["NOPE", "f1"], "the model has no task 'NOPE'"),
    (["OFF", "precision"], "'precision' is no target"),
    (["OFF", "precision=0.9", "f1"], "two targets for one band"),
    (["OFF_span:x", "f1"], "span task"),
])
def test_bad_targets_are_named(model, tmp_path, capsys, words, message):
    dev = gold_file(tmp_path / "dev.jsonl", off=True)
    assert main(["thresholds", "--model", str(model), "--dev", str(dev), "--set", *words,
                 "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


def test_the_output_may_not_be_inside_the_model(model, tmp_path, capsys):
    dev = gold_file(tmp_path / "dev.jsonl", off=True)
    assert main(["thresholds", "--model", str(model), "--dev", str(dev), "--set", "OFF", "f1",
                 "--out", str(model / "inner")]) == 2
    assert "error" in capsys.readouterr().err


def test_an_earlier_output_is_replaced_and_a_foreign_folder_refused_first(model, tmp_path, capsys):
    dev = gold_file(tmp_path / "dev.jsonl", off=True)
    out = tmp_path / "decided"
    command = ["thresholds", "--model", str(model), "--dev", str(dev), "--samples", "50", "--out", str(out)]
    assert main([*command, "--set", "OFF", "f1"]) == 0
    # the same command again, another target: the earlier output is a model directory, replaced whole
    assert main([*command, "--set", "OFF", "precision=0.9"]) == 0, capsys.readouterr().err
    assert verify_manifest(out) is not None
    assert Predictor.from_pretrained(out).tasks[0].decision["remove"]["target"] == "precision=0.9"
    capsys.readouterr()
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("mine\n", encoding="utf-8")
    assert main([*command[:-1], str(foreign), "--set", "OFF", "f1"]) == 2
    printed = capsys.readouterr()
    assert "is not a kold-span model directory" in printed.err and printed.out == ""  # refused before choosing
    assert [p.name for p in foreign.iterdir()] == ["todo.txt"]


def test_out_as_the_model_itself_points_to_in_place(model, tmp_path, capsys):
    dev = gold_file(tmp_path / "dev.jsonl", off=True)
    assert main(["thresholds", "--model", str(model), "--dev", str(dev), "--set", "OFF", "f1",
                 "--out", str(model)]) == 2
    assert "pass --in-place instead of --out" in capsys.readouterr().err


def test_a_gold_label_the_model_lacks_names_the_file(model, tmp_path, capsys):
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps(Example("w", TEXTS[0], labels={"OFF": "maybe"}).to_dict(), ensure_ascii=False) + "\n",
                   encoding="utf-8")
    assert main(["thresholds", "--model", str(model), "--dev", str(dev), "--set", "OFF", "f1",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{dev}: example 'w': label 'maybe' of task 'OFF'" in err and err.count("\n") == 1
