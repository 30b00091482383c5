"""A model directory this kold-span cannot read is a `ModelFormatError` naming the file and the key, and the
command line reports it in one line.

The directories are an untrained tiny model (a scratch tokenizer and encoder, saved at once) and copies of it
with one thing broken by hand.
"""
import json
import shutil
from pathlib import Path

import pytest

from kold_span.cli import main
from kold_span.errors import ModelFormatError
from kold_span.inference.predictor import Predictor
from kold_span.models.model_dir import CONFIG_NAME, FORMAT_VERSION, read_model_config
from kold_span.models.ngram import NgramScorer

from conftest import FIXTURES, assert_same_predictions, untrained_model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """An untrained model directory: one true/false task and one span task over a 1-layer scratch encoder."""
    return untrained_model(tmp_path_factory.mktemp("model") / "model")


def broken_copy(model_dir: Path, tmp_path: Path, edit) -> Path:
    """A copy of the model directory whose config.json `edit` changed in place."""
    copy = tmp_path / "broken"
    shutil.copytree(model_dir, copy)
    config = json.loads((copy / CONFIG_NAME).read_text(encoding="utf-8"))
    edit(config)
    (copy / CONFIG_NAME).write_text(json.dumps(config), encoding="utf-8")
    return copy


def test_the_tiny_directory_loads_and_predicts(model_dir):
    assert read_model_config(model_dir)["format_version"] == FORMAT_VERSION == 1
    [out] = Predictor.from_pretrained(model_dir).predict(["너 진짜 한심하다"])
    assert set(out["labels"]["OFF"]["probs"]) == {"false", "true"}


def test_an_unknown_format_version_names_the_file_and_the_supported_one(model_dir, tmp_path):
    copy = broken_copy(model_dir, tmp_path, lambda c: c.update(format_version=99))
    message = f"{copy / CONFIG_NAME}: format_version 99 is not supported; this kold-span reads format_version 1 "
    with pytest.raises(ModelFormatError) as caught:
        Predictor.from_pretrained(copy)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("key", ["format_version", "stride", "tasks", "max_length"])
def test_a_missing_top_level_key_is_named(model_dir, tmp_path, key):
    copy = broken_copy(model_dir, tmp_path, lambda c: c.pop(key))
    with pytest.raises(ModelFormatError, match=rf"^{copy / CONFIG_NAME}: missing key '{key}' \("):
        Predictor.from_pretrained(copy)


@pytest.mark.parametrize("section, key", [("context", "mode"), ("align", "snap"), ("encoder", "model_type")])
def test_a_missing_nested_key_is_named_with_its_section(model_dir, tmp_path, section, key):
    copy = broken_copy(model_dir, tmp_path, lambda c: c[section].pop(key))
    with pytest.raises(ModelFormatError, match=rf"config.json: missing key '{section}.{key}' \(format_version 1 needs"):
        Predictor.from_pretrained(copy)


def test_a_task_missing_a_key_or_with_an_unknown_one_is_named(model_dir, tmp_path):
    copy = broken_copy(model_dir, tmp_path, lambda c: c["tasks"][1].pop("kind"))
    with pytest.raises(ModelFormatError, match=r"config.json: tasks\[1\] misses key 'kind'"):
        Predictor.from_pretrained(copy)
    shutil.rmtree(copy)
    copy = broken_copy(model_dir, tmp_path, lambda c: c["tasks"][0].update(colour="red"))
    with pytest.raises(ModelFormatError, match=r"config.json: tasks\[0\] has unknown key\(s\) colour; "):
        Predictor.from_pretrained(copy)


def test_missing_files_and_folders_are_named(model_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="model directory .*nowhere does not exist"):
        Predictor.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(ModelFormatError, match="is not a kold-span model directory \\(no config.json\\)"):
        Predictor.from_pretrained(model_dir.parent)
    copy = tmp_path / "no-weights"
    shutil.copytree(model_dir, copy)
    (copy / "model.safetensors").unlink()
    with pytest.raises(ModelFormatError, match=f"^{copy}: missing model.safetensors"):
        Predictor.from_pretrained(copy)


def test_config_json_that_is_not_json_is_named(model_dir, tmp_path):
    copy = tmp_path / "garbled"
    shutil.copytree(model_dir, copy)
    (copy / CONFIG_NAME).write_text("{format_version: 1", encoding="utf-8")
    with pytest.raises(ModelFormatError, match=f"^{copy / CONFIG_NAME}: not a JSON file"):
        Predictor.from_pretrained(copy)


def test_predict_cli_reports_a_missing_key_in_one_line(model_dir, tmp_path, capsys):
    copy = broken_copy(model_dir, tmp_path, lambda c: c.pop("stride"))
    inputs = tmp_path / "in.txt"
    inputs.write_text("너 진짜 한심하다\n", encoding="utf-8")
    assert main(["predict", "--model", str(copy), "--input", str(inputs), "--output", str(tmp_path / "o.jsonl"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kold-span predict: error: {copy / CONFIG_NAME}: missing key 'stride' (")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_predict_cli_names_a_missing_input_file(model_dir, tmp_path, capsys):
    missing = tmp_path / "x.txt"
    assert main(["predict", "--model", str(model_dir), "--input", str(missing), "--output",
                 str(tmp_path / "o.jsonl"), "--quiet"]) == 2
    assert capsys.readouterr().err == f"kold-span predict: error: no such file: {missing}\n"


def test_an_ngram_state_of_another_version_or_missing_a_key_is_named(tmp_path):
    stem = tmp_path / "ngram" / "OFF"
    stem.parent.mkdir()
    with pytest.raises(ModelFormatError, match=r"missing n-gram file .*OFF\.json"):
        NgramScorer.load(stem)
    stem.with_suffix(".safetensors").write_bytes(b"")
    stem.with_suffix(".json").write_text(json.dumps({"version": 99}), encoding="utf-8")
    with pytest.raises(ModelFormatError, match=r"OFF\.json: n-gram state version 99, this kold-span reads version 1"):
        NgramScorer.load(stem)
    stem.with_suffix(".json").write_text(json.dumps({"version": 1, "label": "OFF"}), encoding="utf-8")
    with pytest.raises(ModelFormatError, match=r"OFF\.json: missing key 'problem' \(version 1 needs label, problem,"):
        NgramScorer.load(stem)


def test_a_model_directory_from_before_the_layers_predicts_the_same(tmp_path):
    """tests/fixtures/model_v1 was trained and predicted by commit 358a6ff (see its README) on an AVX2 CPU, in
    float32 (the CPU default): ids, labels and spans exactly, probabilities to PROB_ATOL on any CPU (the same
    under other kernels: tests/test_portability.py)."""
    fixture = FIXTURES / "model_v1"
    out = tmp_path / "predictions.jsonl"
    assert main(["predict", "--model", str(fixture / "model"), "--input", str(fixture / "inputs.jsonl"),
                 "--output", str(out), "--quiet"]) == 0
    assert_same_predictions(out, fixture / "predictions.jsonl")
