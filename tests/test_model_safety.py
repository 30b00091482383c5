"""A model directory is data, never code (issue 44): its files are checked against the manifest written at save,
nothing in it runs code or reads outside it, its config.json values are checked, and every fault is a
`ModelFormatError` naming the file. A resumed `predict` refuses the rows of another model.

The directories are an untrained tiny model (conftest.untrained_model) and copies of it with one thing broken.
"""
import json
import logging
import shutil
from pathlib import Path

import pytest

from kold_span.cli import main
from kold_span.errors import ModelFormatError
from kold_span.inference.predictor import CONFIG_NAME, Predictor
from kold_span.models.manifest import MANIFEST_NAME, model_files, write_manifest

from conftest import untrained_model

BATCH = 2


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return untrained_model(tmp_path_factory.mktemp("model") / "model")


def copy_of(model_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    return copy


def edited_config(model_dir: Path, tmp_path: Path, edit) -> Path:
    """A copy whose config.json `edit` changed, the manifest written again (as a hand edit that also rehashed)."""
    copy = copy_of(model_dir, tmp_path)
    config = json.loads((copy / CONFIG_NAME).read_text(encoding="utf-8"))
    edit(config)
    (copy / CONFIG_NAME).write_text(json.dumps(config), encoding="utf-8")
    write_manifest(copy)
    return copy


def load_error(directory: Path, **kwargs) -> str:
    with pytest.raises(ModelFormatError) as caught:
        Predictor.from_pretrained(directory, **kwargs)
    return str(caught.value)


# -- the manifest --------------------------------------------------------------------------------------------------

def test_the_manifest_lists_every_file_save_wrote(model_dir):
    manifest = json.loads((model_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert sorted(manifest["files"]) == list(model_files(model_dir))
    assert {"config.json", "model.safetensors", "tokenizer/tokenizer.json"} <= set(manifest["files"])
    assert manifest["files"]["model.safetensors"]["bytes"] == (model_dir / "model.safetensors").stat().st_size


def test_truncated_weights_are_named_checked_or_not(model_dir, tmp_path):
    copy = copy_of(model_dir, tmp_path)
    weights = copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    assert load_error(copy).startswith(f"{weights}: 1000 bytes where the model was saved with ")
    assert load_error(copy, verify=False).startswith(f"{weights}: not a readable safetensors file")


def test_flipped_bytes_in_the_weights_are_found_and_verify_false_skips_the_check(model_dir, tmp_path):
    copy = copy_of(model_dir, tmp_path)
    weights = copy / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    for i in range(len(raw) - 40, len(raw) - 30):  # inside the last tensor's numbers
        raw[i] ^= 0x55
    weights.write_bytes(bytes(raw))
    assert load_error(copy).startswith(f"{weights}: its SHA-256 differs from the one in manifest.json")
    Predictor.from_pretrained(copy, verify=False)  # the user's choice: loads what is there


def test_a_missing_listed_file_and_a_bad_manifest_are_named(model_dir, tmp_path):
    copy = copy_of(model_dir, tmp_path)
    (copy / "tokenizer" / "tokenizer_config.json").unlink()
    assert load_error(copy).startswith(f"{copy / 'tokenizer' / 'tokenizer_config.json'}: missing, though")
    (copy / MANIFEST_NAME).write_text('{"version": 1, "files": {"../x": {"sha256": "' + "0" * 64 + '", "bytes": 1}}}')
    assert "'../x' is outside the model directory" in load_error(copy)
    (copy / MANIFEST_NAME).write_text("[1")
    assert load_error(copy).startswith(f"{copy / MANIFEST_NAME}: not a JSON file")


def test_a_directory_without_a_manifest_loads_with_a_warning(model_dir, tmp_path, caplog):
    copy = copy_of(model_dir, tmp_path)
    (copy / MANIFEST_NAME).unlink()
    with caplog.at_level(logging.WARNING, logger="kold_span"):
        Predictor.from_pretrained(copy)
    assert "no manifest.json" in caplog.text


def test_a_corrupt_tokenizer_or_an_empty_tokenizer_folder_is_named(model_dir, tmp_path):
    copy = copy_of(model_dir, tmp_path)
    tokenizer_json = copy / "tokenizer" / "tokenizer.json"
    tokenizer_json.write_bytes(tokenizer_json.read_bytes()[:200])
    assert load_error(copy).startswith(f"{tokenizer_json}: ")
    assert load_error(copy, verify=False).startswith(f"{tokenizer_json}: the tokenizer cannot be loaded")
    for path in (copy / "tokenizer").iterdir():
        path.unlink()
    assert load_error(copy, verify=False) == f"{copy / 'tokenizer'}: not a saved tokenizer (missing or empty folder)"


def test_predict_cli_reports_a_corrupt_model_in_one_line_and_no_verify_skips_the_hashing(model_dir, tmp_path, capsys):
    copy = copy_of(model_dir, tmp_path)
    config = copy / CONFIG_NAME
    config.write_text(config.read_text(encoding="utf-8").replace('"stride": 8', '"stride": 7'), encoding="utf-8")
    source = tmp_path / "in.txt"
    source.write_text("좋은 기사\n", encoding="utf-8")
    args = ["predict", "--model", str(copy), "--input", str(source), "--output", str(tmp_path / "o.jsonl"), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kold-span predict: error: {config}: its SHA-256 differs") and err.count("\n") == 1
    assert main(args + ["--no-verify"]) == 0


# -- no code, nothing outside ----------------------------------------------------------------------------------

CUSTOM_CODE = "import pathlib\npathlib.Path(__file__).with_name('RAN').write_text('ran')\n"


@pytest.mark.parametrize("name", ["tokenizer_config.json", "config.json"])
def test_custom_code_named_by_the_tokenizer_is_refused_and_never_runs(model_dir, tmp_path, name):
    copy = copy_of(model_dir, tmp_path)
    folder = copy / "tokenizer"
    (folder / "evil.py").write_text(CUSTOM_CODE)
    path = folder / name
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config["auto_map"] = {"AutoTokenizer": ["evil.EvilTokenizer", "evil.EvilTokenizer"]}
    path.write_text(json.dumps(config), encoding="utf-8")
    write_manifest(copy)
    message = load_error(copy)
    assert message == (f"{path}: names custom code ('auto_map'); a kold-span model directory is data and never runs "
                       "code from it")
    assert not (folder / "RAN").exists()


def test_custom_code_named_by_the_encoder_config_is_refused(model_dir, tmp_path):
    copy = edited_config(model_dir, tmp_path, lambda c: c["encoder"].update(auto_map={"AutoModel": "evil.Model"}))
    assert "key 'encoder' names custom code ('auto_map')" in load_error(copy)


def test_a_link_out_of_the_directory_is_refused(model_dir, tmp_path):
    copy = copy_of(model_dir, tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    (copy / "tokenizer" / "special_tokens_map.json").unlink(missing_ok=True)
    (copy / "tokenizer" / "special_tokens_map.json").symlink_to(outside)
    assert "outside the model directory" in load_error(copy, verify=False)


def test_ngram_files_named_outside_the_directory_are_refused(model_dir, tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    copy = edited_config(model_dir, tmp_path, lambda c: c.update(ngram=["../../secret/x"]))
    assert "'../../secret/x'" in load_error(copy)


# -- config.json values --------------------------------------------------------------------------------------------

def _gate_on(name):
    def edit(config):
        config["tasks"][1]["gate"] = name
    return edit


@pytest.mark.parametrize("edit, message", [
    (lambda c: c.update(max_length="128"), "key 'max_length' must be an integer of at least 8, got '128'"),
    (lambda c: c.update(max_length=31.5), "key 'max_length' must be an integer of at least 8, got 31.5"),
    (lambda c: c.update(stride=40), "key 'stride' must be an integer from 0 to below max_length, got 40"),
    (lambda c: c["context"].update(mode="sideways"), "key 'context.mode' must be one of auto, title, topic"),
    (lambda c: c["context"].update(max_turns=-1), "key 'context.max_turns' must be null or an integer"),
    (lambda c: c["align"].update(snap="glue"), "key 'align.snap' must be one of none, morpheme"),
    (lambda c: c["align"].update(trim="yes"), "key 'align.trim' must be true or false"),
    (lambda c: c.update(pooling="max"), "key 'pooling' must be one of first, mean"),
    (_gate_on("ABUSE"), "tasks[1]: gate 'ABUSE' is no task of the model (its tasks: OFF, OFF_span)"),
    (_gate_on("OFF_span"), "task 'OFF_span': gate 'OFF_span' must be a true/false task"),
    (lambda c: c["tasks"][0].update(kind="regression"), "tasks[0]: kind 'regression' must be one of"),
    (lambda c: c["tasks"][1].update(name="OFF"), "tasks[1]: name 'OFF' must be a non-empty string without '.' that no other task has"),
])
def test_config_values_a_model_cannot_run_with_are_named(model_dir, tmp_path, edit, message):
    copy = edited_config(model_dir, tmp_path, edit)
    assert message in load_error(copy)


# -- a resumed run and the model -----------------------------------------------------------------------------------

def _comments(n):
    return [{"id": f"c{i}", "text": f"좋은 기사 {i}"} for i in range(n)]


def _unfinished_run(model_dir, tmp_path, capsys):
    """A run that failed at its 41st row: 32 complete rows (two chunks) kept in out.jsonl.partial."""
    rows = _comments(60)
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines[:40] + ["{bad"] + lines[41:]) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert predict(model_dir, source, out) == 2
    capsys.readouterr()
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return source, out


def predict(model, source, out, *extra):
    return main(["predict", "--model", str(model), "--input", str(source), "--output", str(out), "--quiet",
                 "--batch-size", str(BATCH), *extra])


def test_resume_refuses_the_rows_of_another_model(model_dir, tmp_path, capsys):
    import torch

    source, out = _unfinished_run(model_dir, tmp_path, capsys)
    other = Predictor.from_pretrained(model_dir)
    with torch.no_grad():
        next(other.model.parameters()).add_(0.01)  # same tasks, other weights
    other_dir = other.save_pretrained(tmp_path / "other")
    partial = tmp_path / "out.jsonl.partial"
    before = partial.read_bytes()
    assert predict(other_dir, source, out, "--resume") == 2
    err = capsys.readouterr().err
    assert "out.jsonl.partial holds 32 complete rows predicted with other options (model " in err
    assert partial.read_bytes() == before and not out.exists()
    assert predict(model_dir, source, out, "--resume") == 0  # the model that wrote them
    assert "(32 kept from the unfinished run)" in capsys.readouterr().out


@pytest.mark.parametrize("options", [None, "{not json", "[]"])
def test_resume_refuses_rows_whose_options_file_is_missing_or_unreadable(model_dir, tmp_path, capsys, options):
    source, out = _unfinished_run(model_dir, tmp_path, capsys)
    options_file = tmp_path / "out.jsonl.partial.json"
    if options is None:
        options_file.unlink()
    else:
        options_file.write_text(options, encoding="utf-8")
    assert predict(model_dir, source, out, "--resume") == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'out.jsonl.partial'} holds 32 complete rows but " in err
    assert "the model and options that wrote them are unknown" in err
    assert predict(model_dir, source, out) == 0  # without --resume: started over


def test_a_directory_that_is_no_path_is_an_argument_error():
    from kold_span.errors import ArgumentError

    with pytest.raises(ArgumentError, match="^directory must be a path \\(str or Path\\), got int$"):
        Predictor.from_pretrained(5)
