"""No input destroyed (issue 44): a second run on an output is refused, an output that is an input is refused before
anything is read, and an input of no rows is an error that keeps the earlier output.

The model is untrained (conftest.untrained_model): what is checked is the plumbing, not the predictions.
"""
import json
import subprocess
import sys
import threading

import pytest

from kold_span.cli import main
from kold_span.data.example import Example
from kold_span.inference.outputs import write_predictions
from kold_span.inference.pipeline import RunOptions
from kold_span.inference.predictor import Predictor

from conftest import FIXTURE, child_env, untrained_model

BATCH = 2


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("untrained") / "model")


def comments(n: int) -> list[dict]:
    return [{"id": f"c{i}", "text": f"좋은 기사 {i}", "title": "제목"} for i in range(n)]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def predict(model, source, out, *extra):
    return main(["predict", "--model", str(model), "--input", str(source), "--output", str(out), "--quiet",
                 "--batch-size", str(BATCH), *extra])


# -- two runs on one output ----------------------------------------------------------------------------------------

def test_a_second_run_on_an_output_being_written_is_refused_and_the_first_finishes_whole(model, tmp_path, capsys):
    rows = comments(40)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out, alone = tmp_path / "out.jsonl", tmp_path / "alone.jsonl"
    assert predict(model, source, alone) == 0
    started, go_on, done = threading.Event(), threading.Event(), []

    def first_row_waits():
        started.set()
        go_on.wait(60)

    def first_run():
        examples = (Example(id=r["id"], text=r["text"], context=r["title"]) for r in rows)
        done.append(write_predictions(Predictor.from_pretrained(model), examples, out, options=RunOptions(BATCH),
                                      on_row=first_row_waits))

    first = threading.Thread(target=first_run)
    first.start()
    try:
        assert started.wait(60)
        capsys.readouterr()
        assert predict(model, source, out) == 2  # the second run, on the same output
        err = capsys.readouterr().err
        assert err.startswith(f"kold-span predict: error: {out} is being written by another run")
        assert "--resume" not in err
        assert (tmp_path / "out.jsonl.partial").exists()  # the first run's rows and options untouched
        assert (tmp_path / "out.jsonl.partial.json").exists()
    finally:
        go_on.set()
        first.join(120)
    assert done and done[0].rows == 40
    assert out.read_bytes() == alone.read_bytes()


@pytest.mark.parametrize("option", ["--output", "--html"])
def test_an_output_another_process_writes_is_refused_before_anything_is_touched(model, tmp_path, capsys, option):
    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    out, html = tmp_path / "out.jsonl", tmp_path / "out.html"
    out.write_text('{"id": "old"}\n', encoding="utf-8")
    (tmp_path / "out.jsonl.partial").write_text('{"id": "c0", "text": "좋은 기사 0"}\n', encoding="utf-8")
    held = out if option == "--output" else html
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom kold_span.data.atomic import output_lock\n"
                               "with output_lock(sys.argv[1]):\n    print('locked', flush=True)\n"
                               "    sys.stdin.readline()\n", str(held)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert holder.stdout.readline() == "locked\n"
        assert predict(model, source, out, "--html", str(html)) == 2
        assert f"error: {held} is being written by another run (process {holder.pid})" in capsys.readouterr().err
        assert out.read_text(encoding="utf-8") == '{"id": "old"}\n' and not html.exists()
        kept = (tmp_path / "out.jsonl.partial").read_text(encoding="utf-8")
        assert kept == '{"id": "c0", "text": "좋은 기사 0"}\n'
    finally:
        holder.communicate("")
    assert predict(model, source, out, "--html", str(html)) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3


def test_convert_refuses_an_output_another_run_writes(tmp_path, capsys):
    out = tmp_path / "kold.jsonl"
    from kold_span.data.atomic import output_lock

    def other_thread_holds():
        with output_lock(out):
            held.set()
            release.wait(30)

    held, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=other_thread_holds)
    thread.start()
    try:
        assert held.wait(30)
        assert main(["convert", "kold", str(FIXTURE), str(out)]) == 2
        assert f"{out} is being written by another run" in capsys.readouterr().err
        assert not out.exists()
    finally:
        release.set()
        thread.join()
    assert main(["convert", "kold", str(FIXTURE), str(out)]) == 0


# -- an output that is an input ------------------------------------------------------------------------------------

def _input_file(tmp_path, suffix):
    path = tmp_path / f"in{suffix}"
    if suffix == ".jsonl":
        write_jsonl(path, comments(3))
    elif suffix == ".csv":
        path.write_text("id,comment\nc0,좋은 기사\nc1,바보\n", encoding="utf-8")
    elif suffix == ".txt":
        path.write_text("좋은 기사\n바보\n", encoding="utf-8")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"id": ["c0"], "text": ["좋은 기사"]}), path)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".txt", ".parquet"])
@pytest.mark.parametrize("how", ["same", "link"])
def test_predict_refuses_an_output_that_is_its_input(model, tmp_path, capsys, suffix, how):
    source = _input_file(tmp_path, suffix)
    before = source.read_bytes()
    out = source
    if how == "link":
        out = tmp_path / f"link{suffix}"
        out.symlink_to(source)
    assert predict(model, source, out) == 2
    assert f"error: --output {out} is the input (--input {source}): writing it would destroy the input" in \
        capsys.readouterr().err
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({source.name, out.name})


def test_predict_refuses_an_html_page_that_is_the_input_or_the_output(model, tmp_path, capsys):
    source = _input_file(tmp_path, ".jsonl")
    before = source.read_bytes()
    assert predict(model, source, tmp_path / "out.jsonl", "--html", str(source)) == 2
    assert f"error: --html {source} is the input" in capsys.readouterr().err
    assert predict(model, source, tmp_path / "out.jsonl", "--html", str(tmp_path / "out.jsonl")) == 2
    assert f"error: --html {tmp_path / 'out.jsonl'} is also --output" in capsys.readouterr().err
    assert source.read_bytes() == before and not (tmp_path / "out.jsonl").exists()


def test_convert_and_evaluate_refuse_to_write_over_their_input(tmp_path, capsys):
    corpus = tmp_path / "kold.json"
    corpus.write_bytes(FIXTURE.read_bytes())
    assert main(["convert", "kold", str(corpus), str(corpus)]) == 2
    assert f"error: OUT {corpus} is the input (SRC {corpus})" in capsys.readouterr().err
    assert corpus.read_bytes() == FIXTURE.read_bytes()
    gold = tmp_path / "gold.jsonl"
    assert main(["convert", "kold", str(corpus), str(gold)]) == 0
    before = gold.read_bytes()
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold), "--out", str(gold)]) == 2
    assert f"error: --out {gold} is the input (--gold {gold})" in capsys.readouterr().err
    assert gold.read_bytes() == before


# -- an input of no rows -------------------------------------------------------------------------------------------

def _empty_parquet(path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}), path)


@pytest.mark.parametrize("name, content", [
    ("in.jsonl", b""), ("in.jsonl", b"\n  \n\n"), ("in.txt", b"\n\r\n \n"), ("in.csv", b"id,comment\n"),
    ("in.tsv", b""), ("in.parquet", None),
])
@pytest.mark.parametrize("out_name", ["out.jsonl", "out.parquet"])
def test_an_input_of_no_rows_is_an_error_and_the_earlier_output_is_kept(model, tmp_path, capsys, name, content,
                                                                       out_name):
    source = tmp_path / name
    if content is None:
        _empty_parquet(source)
    else:
        source.write_bytes(content)
    out, html = tmp_path / out_name, tmp_path / "out.html"
    out.write_bytes(b"earlier output\n")
    html.write_bytes(b"<html>earlier</html>\n")
    assert predict(model, source, out, "--html", str(html)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kold-span predict: error: {source}: no rows, nothing to predict")
    assert out.read_bytes() == b"earlier output\n" and html.read_bytes() == b"<html>earlier</html>\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, out_name, "out.html"])


# -- the Python API and .txt line ends -----------------------------------------------------------------------------

def test_contexts_of_another_length_than_the_texts_are_an_argument_error(model):
    from kold_span.errors import ArgumentError

    with pytest.raises(ArgumentError, match=r"^contexts: 1 contexts for 2 texts; pass one context per text"):
        Predictor.from_pretrained(model).predict(["좋은 기사", "바보"], contexts=["제목"])


def test_a_lone_carriage_return_ends_a_line_of_a_txt_input(tmp_path):
    from kold_span.inference.inputs import iter_inputs

    path = tmp_path / "in.txt"
    path.write_bytes("좋은 기사\r바보\r\n\r너 진짜\n끝\r".encode())
    read = [(ex.id, ex.text) for ex in iter_inputs(path)]
    assert read == [("1", "좋은 기사"), ("2", "바보"), ("4", "너 진짜"), ("5", "끝")]


def test_sigterm_during_predict_keeps_the_rows_so_far_as_ctrl_c_does(model, tmp_path):
    import os
    import signal
    import time

    source = write_jsonl(tmp_path / "in.jsonl", comments(400))
    out, partial = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial"
    argv = [sys.executable, "-m", "kold_span.cli", "predict", "--model", str(model), "--input", str(source),
            "--quiet", "--batch-size", "4", "--output", str(out)]
    child = subprocess.Popen(argv, env=child_env(), stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and child.poll() is None:
        if partial.exists() and partial.stat().st_size > 10_000:
            break
        time.sleep(0.02)
    assert child.poll() is None, "the run ended before it could be stopped: give it more rows"
    os.kill(child.pid, signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 143
    assert err.startswith("kold-span predict: error: terminated (SIGTERM); ")
    assert f"what was written so far is kept in {partial}" in err and "--resume" in err
    assert partial.exists() and not out.exists() and not (tmp_path / ".out.jsonl.lock").exists()
    resumed = subprocess.run(argv + ["--resume"], env=child_env(), capture_output=True, text=True)
    assert resumed.returncode == 0 and "kept from the unfinished run" in resumed.stdout


def test_input_dash_reads_standard_input_in_the_format_given(model, tmp_path, monkeypatch, capsys):
    import io

    out, alone = tmp_path / "out.jsonl", tmp_path / "alone.jsonl"
    source = write_jsonl(tmp_path / "in.jsonl", comments(5))
    assert predict(model, source, alone) == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.read_bytes())))
    assert predict(model, "-", out, "--format", "jsonl") == 0
    assert out.read_bytes() == alone.read_bytes()
    capsys.readouterr()
    assert predict(model, "-", out) == 2
    assert "error: --input - (standard input) needs --format: txt, jsonl" in capsys.readouterr().err
    assert predict(model, source, out, "--format", "csv") == 2
    assert "error: --format is for --input - (standard input)" in capsys.readouterr().err


def test_repeated_ids_and_header_names_are_warned_of(tmp_path, caplog):
    from kold_span.inference.inputs import iter_inputs

    path = tmp_path / "in.csv"
    path.write_text("id,comment,comment\na,x,좋은 기사\nb,y,바보\na,z,또\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="kold_span"):
        examples = list(iter_inputs(path))
    assert [(ex.id, ex.text) for ex in examples] == [("a", "좋은 기사"), ("b", "바보"), ("a", "또")]
    assert f"{path}:1: column(s) 'comment' appear more than once in the header; the last of each is read" in caplog.text
    assert f"{path}:4: id 'a' again (first at line 2); both rows are predicted" in caplog.text


def test_a_task_whose_source_no_example_has_is_warned_of(caplog):
    from kold_span.config.schema import TaskConfig
    from kold_span.models.kinds import build_tasks

    examples = [Example(id="1", text="너 바보냐", labels={"OFF": True}, spans={"OFF": [(2, 4)]}),
                Example(id="2", text="좋은 기사", labels={"OFF": False})]
    configs = [TaskConfig("OFF", "sequence", "OFF"), TaskConfig("OFF_span", "span", "OFF"),
               TaskConfig("TGT_span", "span", "TGT"), TaskConfig("GRP", "sequence", "GRP", labels=["a", "b"])]
    with caplog.at_level("WARNING", logger="kold_span"):
        build_tasks(configs, examples)
    warned = [r.getMessage() for r in caplog.records]
    assert warned == [
        "task 'TGT_span': no training example has spans of 'TGT'; it learns nothing from this corpus (check "
        "tasks[].source against the reader's names)",
        "task 'GRP': no training example has labels of 'GRP'; it learns nothing from this corpus (check "
        "tasks[].source against the reader's names)"]


def test_a_library_warning_is_one_line_naming_the_command(tmp_path, monkeypatch, capsys):
    import warnings

    from kold_span.evaluation import prediction_files as files
    from kold_span.evaluation.prediction_files import EvaluationReport

    def warns(gold, pred, policy, **options):
        warnings.warn("Recall is ill-defined and being set to 0.0\n  in labels with no true samples.", UserWarning)
        return EvaluationReport({"examples": 1})

    monkeypatch.setattr(files, "evaluate_files", warns)
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "1", "text": "a"}])
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold)]) == 0
    assert capsys.readouterr().err == ("kold-span evaluate: warning: Recall is ill-defined and being set to 0.0 in "
                                       "labels with no true samples. (UserWarning)\n")


# -- what a command may write (issue 54) ---------------------------------------------------------------------------

def _copy_of(model, tmp_path):
    import shutil

    return shutil.copytree(model, tmp_path / "model")


def _loads(directory):
    Predictor.from_pretrained(directory)  # raises if any file of it changed
    return True


@pytest.mark.parametrize("option, name", [("--html", "config.json"), ("--output", "model.safetensors"),
                                          ("--output", "manifest.json"), ("--html", "tokenizer/page.html"),
                                          ("--output", "new.jsonl")])
def test_predict_refuses_an_output_inside_the_model_it_reads(model, tmp_path, capsys, option, name):
    copy = _copy_of(model, tmp_path)
    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    outputs = {"--output": str(tmp_path / "out.jsonl"), option: str(copy / name)}
    assert main(["predict", "--model", str(copy), "--input", str(source), "--quiet",
                 *(arg for pair in outputs.items() for arg in pair)]) == 2
    assert f"error: {option} {copy / name} is inside the model directory {copy}: writing it would change the model" \
        in capsys.readouterr().err
    assert _loads(copy) and not (copy / "new.jsonl").exists() and not (copy / "tokenizer" / "page.html").exists()


def test_convert_and_evaluate_refuse_an_output_inside_any_model_directory(model, tmp_path, capsys):
    copy = _copy_of(model, tmp_path)
    assert main(["convert", "kold", str(FIXTURE), str(copy / "config.json")]) == 2
    assert f"is inside the model directory {copy}" in capsys.readouterr().err
    gold = tmp_path / "gold.jsonl"
    assert main(["convert", "kold", str(FIXTURE), str(gold)]) == 0
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold), "--out", str(copy / "scores.json")]) == 2
    assert "is inside the model directory" in capsys.readouterr().err
    assert _loads(copy) and not (copy / "scores.json").exists()


def test_robustness_refuses_a_report_folder_inside_the_model(model, tmp_path, capsys):
    copy = _copy_of(model, tmp_path)
    gold = tmp_path / "gold.jsonl"
    assert main(["convert", "kold", str(FIXTURE), str(gold)]) == 0
    assert main(["robustness", "--model", str(copy), "--input", str(gold), "--out", str(copy)]) == 2
    assert f"error: --out {copy} is inside the model directory {copy}" in capsys.readouterr().err
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in model.iterdir())


@pytest.mark.parametrize("html", ["out.jsonl.partial", "out.jsonl.partial.json", ".out.jsonl.lock",
                                  ".out.jsonl.0123abcd.tmp"])
def test_predict_refuses_an_output_that_is_another_outputs_companion_file(model, tmp_path, capsys, html):
    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    out = tmp_path / "out.jsonl"
    assert predict(model, source, out) == 0
    before = out.read_bytes()
    assert predict(model, source, out, "--html", str(tmp_path / html)) == 2
    assert f"error: --html {tmp_path / html} is the " in capsys.readouterr().err
    assert out.read_bytes() == before and not (tmp_path / html).exists()


def test_predict_refuses_an_input_that_is_the_outputs_partial_file(model, tmp_path, capsys):
    source = write_jsonl(tmp_path / "out.jsonl.partial", comments(3))
    before = source.read_bytes()
    assert predict(model, source, tmp_path / "out.jsonl") == 2
    assert f"error: --input {source} is the unfinished rows of --output" in capsys.readouterr().err
    assert source.read_bytes() == before


def test_predict_refuses_standard_output(model, tmp_path, capsys, monkeypatch):
    """(An empty --output is argparse's error: tests/test_cli.py.)"""
    monkeypatch.chdir(tmp_path)
    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    assert predict(model, source, "-") == 2
    assert capsys.readouterr().err == ("kold-span predict: error: --output -: outputs are written whole and renamed "
                                       "into place, never to standard output: name a file (./- for a file named '-')\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_convert_refuses_a_device_or_a_pipe_and_a_write_protected_file(tmp_path, capsys):
    import os
    import stat

    fifo, protected = tmp_path / "fifo", tmp_path / "protected.jsonl"
    os.mkfifo(fifo)
    assert main(["convert", "kold", str(FIXTURE), str(fifo)]) == 2
    assert f"error: {fifo}: not a regular file but a named pipe" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    protected.write_text("mine\n")
    protected.chmod(0o444)
    assert main(["convert", "kold", str(FIXTURE), str(protected)]) == 2
    assert f"error: {protected}: write-protected (mode 0444)" in capsys.readouterr().err
    assert protected.read_text() == "mine\n"
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        return  # not root: no device node to try
    assert main(["convert", "kold", str(FIXTURE), str(tmp_path / "null")]) == 2
    assert "not a regular file but a character device" in capsys.readouterr().err
    assert stat.S_ISCHR(os.lstat(tmp_path / "null").st_mode)


def test_predict_writes_through_a_link_and_keeps_the_mode_of_what_it_replaces(model, tmp_path):
    import os
    import stat

    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.write_text("old\n")
    real.chmod(0o600)
    link.symlink_to(real.name)
    assert predict(model, source, link, "--html", str(tmp_path / "page.html")) == 0
    assert link.is_symlink() and len(real.read_text().splitlines()) == 3
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "link.jsonl", "page.html", "real.jsonl"]
    assert not os.path.exists(tmp_path / "link.jsonl.partial")


def test_the_ray_engine_refuses_an_output_folder_inside_the_model(model, tmp_path, capsys):
    copy = _copy_of(model, tmp_path)
    write_jsonl(tmp_path / "a.jsonl", comments(2))
    assert main(["predict", "--engine", "ray", "--model", str(copy), "--input", str(tmp_path / "*.jsonl"),
                 "--output", str(copy / "shards"), "--quiet"]) == 2
    assert f"error: --output {copy / 'shards'} is inside the model directory {copy}" in capsys.readouterr().err
    assert not (copy / "shards").exists() and _loads(copy)


def test_serve_refuses_a_feedback_file_inside_the_model_or_that_is_an_input(model, tmp_path, capsys):
    copy = _copy_of(model, tmp_path)
    assert main(["serve", "--model", str(copy), "--feedback", str(copy / "config.json")]) == 2
    assert f"error: --feedback {copy / 'config.json'} is inside the model directory {copy}" in capsys.readouterr().err
    keys = tmp_path / "keys.txt"
    keys.write_text("secret\n")
    assert main(["serve", "--model", str(copy), "--api-keys", str(keys), "--feedback", str(keys)]) == 2
    assert f"error: --feedback {keys} is the input (--api-keys {keys})" in capsys.readouterr().err
    assert keys.read_text() == "secret\n" and _loads(copy)
