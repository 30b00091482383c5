"""A model directory is data, never code (issue 44): its files are checked against the manifest written at save,
nothing in it runs code or reads outside it, its config.json values are checked, and every fault is a
`ModelFormatError` naming the file. A resumed `predict` refuses the rows of another model.

The directories are an untrained tiny model (conftest.untrained_model) and copies of it with one thing broken.
"""
import dataclasses
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


def test_a_model_saves_to_a_path_given_as_text(model_dir, tmp_path):
    saved = Predictor.from_pretrained(model_dir).save_pretrained(str(tmp_path / "again"))  # as README's users type it
    assert saved == tmp_path / "again" and Predictor.from_pretrained(str(saved)).tasks


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


def test_a_training_run_folder_given_as_the_model_names_its_model_folder(model_dir, tmp_path):
    run = tmp_path / "run"  # checkpoints/<experiment>/<run>: the run's config.json beside its model/
    run.mkdir()
    (run / CONFIG_NAME).write_text(json.dumps({"experiment": "demo", "tasks": []}), encoding="utf-8")
    shutil.copytree(model_dir, run / "model")
    assert load_error(run) == (f"{run} is a training run's folder, not a model directory: pass its model folder, "
                               f"{run / 'model'}")


# -- a model directory is replaced whole, never edited in place (issue 54) -----------------------------------------

def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _other_weights(model_dir: Path) -> Predictor:
    import torch

    other = Predictor.from_pretrained(model_dir)
    with torch.no_grad():
        next(other.model.parameters()).add_(0.01)
    return other


def test_an_interrupted_save_over_a_model_leaves_the_old_one_loading(model_dir, tmp_path, monkeypatch):
    from kold_span.models import model_dir as format_module

    copy = copy_of(model_dir, tmp_path)
    before = _files(copy)

    def interrupted(*args, **kwargs):  # Ctrl-C after config.json and the weights were written
        raise KeyboardInterrupt

    monkeypatch.setattr(format_module, "save_tokenizer", interrupted)
    with pytest.raises(KeyboardInterrupt) as caught:
        _other_weights(model_dir).save_pretrained(copy)
    assert f"{copy} left as it was" in " ".join(getattr(caught.value, "__notes__", []))
    assert _files(copy) == before and Predictor.from_pretrained(copy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy"]
    monkeypatch.undo()
    _other_weights(model_dir).save_pretrained(copy)  # not interrupted: replaced whole, old files gone
    assert _files(copy)["model.safetensors"] != before["model.safetensors"] and Predictor.from_pretrained(copy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy"]


def test_saving_refuses_a_folder_of_other_files_unless_overwrite(model_dir, tmp_path):
    from kold_span.errors import OutputTargetError

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    predictor = Predictor.from_pretrained(model_dir)
    with pytest.raises(OutputTargetError, match="already exists and is not empty, and is not a kold-span model "
                                                "directory: nothing was written; .* pass --overwrite"):
        predictor.save_pretrained(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    predictor.save_pretrained(folder, overwrite=True)
    assert not (folder / "notes.txt").exists() and Predictor.from_pretrained(folder)


def _with_graph_entry(model_dir: Path, tmp_path: Path, name: str) -> Path:
    def name_graph(config):
        config["onnx"] = {"file": name, "quantize": "none", "calibration": "none"}
    return edited_config(model_dir, tmp_path, name_graph)


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "manifest.json"])
def test_export_refuses_a_graph_name_that_is_another_file_of_the_model(model_dir, tmp_path, name):
    from kold_span.inference.export import export_onnx

    copy = _with_graph_entry(model_dir, tmp_path, name)
    before = _files(copy)
    with pytest.raises(ModelFormatError, match=f"onnx.file must be the name of an .onnx file inside the model "
                                               f"directory, got '{name}'"):
        export_onnx(copy, quantize="int8")
    assert _files(copy) == before


def test_an_export_stopped_before_its_manifest_leaves_the_model_as_it_was(model_dir, tmp_path, monkeypatch):
    from kold_span.inference import export

    copy = copy_of(model_dir, tmp_path)
    export.export_onnx(copy)  # a model with a float32 graph, then an int8 export that is stopped
    before = _files(copy)

    def stopped(directory):
        raise KeyboardInterrupt

    monkeypatch.setattr(export, "write_manifest", stopped)
    with pytest.raises(KeyboardInterrupt):
        export.export_onnx(copy, quantize="int8")
    assert _files(copy) == before
    assert Predictor.from_pretrained(copy).precision == "onnx-fp32"


def test_a_killed_export_leaves_the_model_and_the_next_export_clears_what_it_left(model_dir, tmp_path):
    import subprocess
    import sys

    from conftest import child_env

    copy = copy_of(model_dir, tmp_path)
    (copy / ".export-stale1").mkdir()  # what an export killed by an earlier version left inside
    (copy / ".export-stale1" / "model.onnx").write_bytes(b"half")
    (copy / ".gitattributes").write_text("*.safetensors filter=lfs\n")  # the user's: carried over
    before = _files(copy)
    killed = subprocess.run([sys.executable, "-c", "import os, signal, sys\nfrom kold_span.inference import export\n"
                             "export.write_manifest = lambda d: os.kill(os.getpid(), signal.SIGKILL)\n"
                             "export.export_onnx(sys.argv[1])\n", str(copy)], env=child_env(), capture_output=True)
    assert killed.returncode == -9
    assert _files(copy) == before and Predictor.from_pretrained(copy)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".copy.new-")]  # the killed run's folder
    from kold_span.inference.export import export_onnx

    export_onnx(copy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy"]
    assert not (copy / ".export-stale1").exists() and Predictor.from_pretrained(copy).precision == "onnx-fp32"
    assert (copy / ".gitattributes").read_text() == "*.safetensors filter=lfs\n"


def test_a_second_export_of_a_model_being_replaced_is_refused(model_dir, tmp_path):
    import subprocess
    import sys

    from conftest import child_env
    from kold_span.errors import OutputInUseError
    from kold_span.inference.export import export_onnx

    copy = copy_of(model_dir, tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom kold_span.data.atomic import output_lock\n"
                               "with output_lock(sys.argv[1]):\n    print('locked', flush=True)\n"
                               "    sys.stdin.readline()\n", str(copy)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(OutputInUseError, match=f"{copy} is being written by another run"):
            export_onnx(copy)
    finally:
        holder.communicate("")
    assert not (copy / "model.onnx").exists()


def _holding_lock(path: Path):
    import subprocess
    import sys

    from conftest import child_env

    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom kold_span.data.atomic import output_lock\n"
                               "with output_lock(sys.argv[1]):\n    print('locked', flush=True)\n"
                               "    sys.stdin.readline()\n", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
    assert holder.stdout.readline() == "locked\n"
    return holder


def test_a_second_train_into_a_run_folder_in_use_is_refused_before_it_reads(tmp_path, capsys):
    from conftest import FIXTURE, TINY

    run_dir = tmp_path / "tiny" / "r"
    holder = _holding_lock(run_dir)
    try:
        assert main(["train", str(TINY), "--set", f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r"]) == 2
        err = capsys.readouterr().err
        assert f"error: {run_dir} is being written by another run (process {holder.pid})" in err
        assert not run_dir.exists()
    finally:
        holder.communicate("")


def test_train_refuses_a_model_folder_of_other_files_before_training(tmp_path, capsys):
    from conftest import FIXTURE, TINY

    model = tmp_path / "tiny" / "r" / "model"
    model.mkdir(parents=True)
    (model / "notes.txt").write_text("mine")
    assert main(["train", str(TINY), "--set", f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r"]) == 2
    assert f"error: {model} already exists and is not empty, and is not a kold-span model directory" in \
        capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "tiny" / "r").iterdir()) == ["model"]


def test_pretrain_refuses_to_write_its_encoder_over_a_trained_model(model_dir, tmp_path, capsys):
    copy = copy_of(model_dir, tmp_path)
    before = _files(copy)
    texts = tmp_path / "texts.txt"
    texts.write_text("좋은 기사\n바보 같은 소리\n", encoding="utf-8")
    config = tmp_path / "pretrain.yaml"
    config.write_text(f"texts:\n  - {{file: {texts}}}\nencoder: {{vocab_size: 100, hidden_size: 32, layers: 1, "
                      "heads: 2, intermediate_size: 64, max_position: 32, morpheme_pretokenize: false}\n"
                      f"max_length: 24\nmax_steps: 1\noutput: {tmp_path / 'elsewhere'}\n", encoding="utf-8")
    assert main(["pretrain", str(config), "--quiet", "--set", f"output={copy}"]) == 2
    assert f"error: {copy} already exists and is not empty, and is not an encoder directory of kold-span " \
           "pretrain" in capsys.readouterr().err
    assert _files(copy) == before and not (tmp_path / "copy-run").exists()


# -- a resumed run compares every option that changes a row, and checks each kept row (issue 54) -----------------

def _titled_run(model_dir, tmp_path, capsys):
    """A run of rows with a title and a topic that failed at its 41st row: 32 complete rows kept."""
    rows = [{"id": f"c{i}", "text": f"좋은 기사 {i}", "title": f"제목 {i}", "topic": "정치"} for i in range(60)]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines[:40] + ["{bad"] + lines[41:]) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert predict(model_dir, source, out) == 2
    capsys.readouterr()
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return source, out


def test_resume_refuses_rows_read_with_another_context_column(model_dir, tmp_path, capsys):
    source, out = _titled_run(model_dir, tmp_path, capsys)
    partial = tmp_path / "out.jsonl.partial"
    before = partial.read_bytes()
    assert predict(model_dir, source, out, "--resume", "--context-column", "topic") == 2
    err = capsys.readouterr().err
    assert "out.jsonl.partial holds 32 complete rows predicted with other options (input.context_column None then, " \
           "'topic' now)" in err
    assert partial.read_bytes() == before and not out.exists()
    assert predict(model_dir, source, out, "--resume") == 0
    assert "(32 kept from the unfinished run)" in capsys.readouterr().out


def _edit_kept_row(partial: Path, number: int, edit) -> None:
    lines = partial.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[number - 1])
    edit(row)
    lines[number - 1] = json.dumps(row, ensure_ascii=False) + "\n"
    partial.write_text("".join(lines), encoding="utf-8")


def _hacked_label(row):
    row["labels"]["OFF"]["label"] = "HACKED"


def _span_out_of_the_text(row):
    row["spans"] = [{"type": "OFF", "start": -5, "end": 99999, "text": row["text"], "score": 0.5}]


def _unknown_type(row):
    row["spans"] = [{"type": "TGT", "start": 0, "end": 2, "text": row["text"][:2], "score": 0.5}]


def _extra_key(row):
    row["note"] = "added"


@pytest.mark.parametrize("edit, message", [
    (_hacked_label, "labels.OFF.label 'HACKED' is none of the task's labels (false, true)"),
    (_span_out_of_the_text, "spans[0] runs from -5 to 99999, outside the text (0 to 7)"),
    (_unknown_type, "spans[0] has type 'TGT', none of the model's (OFF)"),
    (_extra_key, "unknown key(s) 'note'"),
])
def test_resume_checks_each_kept_row_before_keeping_it(model_dir, tmp_path, capsys, edit, message):
    source, out = _unfinished_run(model_dir, tmp_path, capsys)
    partial = tmp_path / "out.jsonl.partial"
    _edit_kept_row(partial, 7, edit)
    before = partial.read_bytes()
    assert predict(model_dir, source, out, "--resume") == 2
    err = capsys.readouterr().err
    assert f"{partial}:7: row 'c6': {message}; not a row this model writes" in err
    assert partial.read_bytes() == before and not out.exists()


@pytest.mark.parametrize("change, option", [
    (lambda p: setattr(p, "tasks", [dataclasses.replace(t, thresholds=(0.3,)) for t in p.tasks]), "thresholds"),
    (lambda p: setattr(p, "settings", dataclasses.replace(p.settings, normalize=("separators",))), "normalize"),
    (lambda p: setattr(p, "settings", dataclasses.replace(p.settings, trim=False)), "trim"),
])
def test_resume_refuses_rows_of_the_same_model_with_other_thresholds_or_normalization(model_dir, tmp_path, change,
                                                                                      option):
    from kold_span.data.example import Example
    from kold_span.errors import DataError, UnfinishedOutputError
    from kold_span.inference.outputs import write_predictions
    from kold_span.inference.pipeline import RunOptions

    rows = [Example(id=f"c{i}", text=f"좋은 기사 {i}") for i in range(40)]
    out = tmp_path / "out.jsonl"

    def failing():
        yield from rows[:36]
        raise DataError("in.jsonl:37: bad row")

    with pytest.raises(DataError):
        write_predictions(Predictor.from_pretrained(model_dir), failing(), out, options=RunOptions(BATCH))
    other = Predictor.from_pretrained(model_dir)
    change(other)
    with pytest.raises(UnfinishedOutputError, match=f"predicted with other options \\({option}"):
        write_predictions(other, iter(rows), out, options=RunOptions(BATCH), resume=True)
    done = write_predictions(Predictor.from_pretrained(model_dir), iter(rows), out, options=RunOptions(BATCH),
                             resume=True)
    assert (done.rows, done.kept) == (40, 32)


def test_a_fresh_train_into_an_unfinished_run_is_refused(tmp_path, capsys):
    # a run killed before it exported: its last.ckpt is the work so far; a fresh train would start it over
    from conftest import FIXTURE, TINY

    from kold_span.cli import main

    run = tmp_path / "tiny" / "r"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"epoch 2 of 3")
    argv = ["train", str(TINY), "--set", f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r",
            "trainer.max_epochs=1", "data.limit=8"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "holds an unfinished run" in err and "--resume continues it" in err and "--overwrite" in err
    assert (run / "checkpoints" / "last.ckpt").read_bytes() == b"epoch 2 of 3"  # nothing was touched
    assert main(argv + ["--overwrite"]) == 0  # told to: it starts over
    assert (run / "model" / "config.json").exists()
