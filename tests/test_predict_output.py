"""`kold-span predict`'s outputs: never destroyed by a failing run, resumed after a kill byte for byte, and the
Python API's bad arguments as typed errors.

The model is untrained (conftest.untrained_model): what is checked is the plumbing, not the predictions.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kold_span.cli import main
from kold_span.data.example import Example
from kold_span.errors import ArgumentError, DataError
from kold_span.inference.outputs import complete_rows, run_options, write_predictions
from kold_span.inference.pipeline import CHUNK_BATCHES, RunOptions
from kold_span.inference.predictor import Predictor

from conftest import child_env, untrained_model

BATCH = 2


def torch_has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()

CHUNK = BATCH * CHUNK_BATCHES  # rows predicted (and flushed) together at --batch-size 2


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("untrained") / "model")


def comments(n: int) -> list[dict]:
    words = ["좋은 기사", "너 진짜 한심하다", "이 쓰레기 같은 정치인들", "오늘 경기 정말 재밌었어요"]
    return [{"id": f"c{i}", "text": f"{words[i % 4]} {i}", "title": f"제목 {i // 3}"} for i in range(n)]


def write_jsonl(path, rows, bad_line=None):
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    if bad_line is not None:
        lines[bad_line - 1] = lines[bad_line - 1][:-1]  # the closing brace cut off
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def predict(model, source, out, *extra):
    return main(["predict", "--model", str(model), "--input", str(source), "--output", str(out), "--quiet",
                 "--batch-size", str(BATCH), *extra])


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("name, content, message", [
    ("missing.jsonl", None, "no such file: {source}"),
    ("in.xml", "<a/>", "{source}: unsupported input type '.xml'"),
    ("in.jsonl", '{"text": "a"\n{"text": "b"}\n', "{source}:1: invalid JSON (Expecting ',' delimiter at column 13, "
                                                   "the end of the line)"),
])
def test_a_bad_input_leaves_the_previous_outputs_as_they_were(model, tmp_path, capsys, name, content, message):
    out, html = tmp_path / "out.jsonl", tmp_path / "out.html"
    out.write_text('{"id": "old"}\n', encoding="utf-8")
    html.write_text("<html>old</html>\n", encoding="utf-8")
    source = tmp_path / name
    if content is not None:
        source.write_text(content, encoding="utf-8")
    assert predict(model, source, out, "--html", str(html)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kold-span predict: error: {message.format(source=source)}")
    assert out.read_text(encoding="utf-8") == '{"id": "old"}\n'
    assert html.read_text(encoding="utf-8") == "<html>old</html>\n"
    assert not (tmp_path / "out.jsonl.partial").exists()  # nothing was predicted: nothing to keep
    assert "out.jsonl" in listing(tmp_path) and not [n for n in listing(tmp_path) if n.endswith(".tmp")]


def test_an_error_midway_keeps_the_rows_so_far_apart_and_resume_finishes_the_same_file(model, tmp_path, capsys):
    rows = comments(60)
    source = write_jsonl(tmp_path / "in.jsonl", rows, bad_line=41)
    out, html = tmp_path / "out.jsonl", tmp_path / "pages" / "out.html"
    out.write_text('{"id": "old"}\n', encoding="utf-8")
    assert predict(model, source, out, "--html", str(html)) == 2
    err = capsys.readouterr().err
    partial = tmp_path / "out.jsonl.partial"
    assert f"{source}:41: invalid JSON" in err
    assert (f"{html} not written; {out} left as it was; what was written so far is kept in {partial}; "
            "kold-span predict --resume with the same input and options continues from it") in err
    assert out.read_text(encoding="utf-8") == '{"id": "old"}\n' and not html.exists()
    assert len(list(complete_rows(partial))) == 2 * CHUNK  # the chunk holding line 41 was never predicted

    write_jsonl(source, rows)  # the line repaired
    assert predict(model, source, out, "--html", str(html), "--resume") == 0
    assert capsys.readouterr().out == (f"wrote 60 predictions ({2 * CHUNK} kept from the unfinished run) to {out} "
                                       f"and {html}\n")
    assert not partial.exists()
    whole, whole_html = tmp_path / "whole.jsonl", tmp_path / "whole.html"
    assert predict(model, source, whole, "--html", str(whole_html)) == 0
    assert out.read_bytes() == whole.read_bytes()
    assert html.read_bytes() == whole_html.read_bytes()
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == [r["id"] for r in rows]


def test_resume_refuses_a_finished_or_half_written_output_it_cannot_check(model, tmp_path, capsys):
    """No OUTPUT.partial and no options beside it: neither the options nor the model can be checked, so the
    rows are never kept (a finished output of another model was once resumed into a mix of two models)."""
    rows = comments(40)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    whole = tmp_path / "whole.jsonl"
    assert predict(model, source, whole) == 0
    capsys.readouterr()
    lines = whole.read_bytes().splitlines(keepends=True)
    out = tmp_path / "out.jsonl"  # as a writer that is not atomic leaves it: 21 rows and half of the 22nd
    out.write_bytes(b"".join(lines[:21]) + lines[21][:30])
    before = out.read_bytes()
    for target in (out, whole):  # half-written, and finished
        kept = target.read_bytes()
        assert predict(model, source, target, "--resume") == 2
        assert "nothing here can be resumed and checked; predict without --resume" in capsys.readouterr().err
        assert target.read_bytes() == kept
    assert out.read_bytes() == before
    assert listing(tmp_path) == ["in.jsonl", "out.jsonl", "whole.jsonl"]


def test_resume_without_an_unfinished_output_predicts_every_row(model, tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    out = tmp_path / "out.jsonl"
    assert predict(model, source, out, "--resume") == 0
    captured = capsys.readouterr()
    assert captured.out == f"wrote 3 predictions to {out}\n"
    assert f"{out}: no unfinished output to resume" in captured.err


def test_resume_refuses_the_unfinished_output_of_another_input(model, tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", comments(40))
    out = tmp_path / "out.jsonl"
    assert predict(model, source, out) == 0
    partial = tmp_path / "out.jsonl.partial"
    os.replace(out, partial)
    # with the options a run killed at its end would have left beside it
    from kold_span.inference.inputs import ReadOptions

    options = run_options(Predictor.from_pretrained(model), RunOptions(BATCH), ReadOptions())  # as predict reads it
    (tmp_path / "out.jsonl.partial.json").write_text(json.dumps(options), encoding="utf-8")
    before = partial.read_bytes()
    other = comments(40)
    other[5]["text"] = "다른 댓글"
    write_jsonl(source, other)
    assert predict(model, source, out, "--resume") == 2
    err = capsys.readouterr().err
    assert f"{partial}:6: row 'c5' ('너 진짜 한심하다 5') where the input has 'c5' ('다른 댓글')" in err
    assert "--resume with the same input" not in err  # that is what was just refused
    assert partial.read_bytes() == before and not out.exists()
    write_jsonl(source, comments(20))
    assert predict(model, source, out, "--resume") == 2
    assert f"{partial}: holds 32 rows but the input has only 20" in capsys.readouterr().err
    assert partial.read_bytes() == before


def test_a_partial_file_that_is_no_prediction_output_is_named(model, tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.partial").write_text('{"id": "c0", "text": "좋은 기사 0"}\n[1, 2]\n', encoding="utf-8")
    assert predict(model, source, out, "--resume") == 2
    assert "out.jsonl.partial:2: not a row of kold-span predict output" in capsys.readouterr().err


def test_a_run_without_resume_starts_an_unfinished_output_over(model, tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", comments(3))
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.partial").write_text('{"id": "x", "text": "y"}\n', encoding="utf-8")
    assert predict(model, source, out) == 0
    assert "out.jsonl.partial: starting over" in capsys.readouterr().err
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["c0", "c1", "c2"]
    assert listing(tmp_path) == ["in.jsonl", "out.jsonl"]


def test_skip_bad_does_not_hide_a_missing_text_column_or_a_file_of_bad_rows(model, tmp_path, capsys):
    table = tmp_path / "in.csv"
    table.write_text("id,body\n1,좋은 기사\n2,바보\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert predict(model, table, out, "--skip-bad") == 2
    assert f"kold-span predict: error: {table}:1: no text column" in capsys.readouterr().err
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"body": "좋은 기사"}\n{"body": "바보"}\n', encoding="utf-8")
    assert predict(model, lines, out, "--skip-bad") == 2
    assert (f"kold-span predict: error: {lines}: every row was bad (2 skipped), nothing to predict; the first: "
            f"{lines}:1: no text column") in capsys.readouterr().err
    assert not out.exists()


def test_an_empty_text_is_predicted_as_the_python_api_predicts_it(model, tmp_path):
    table = tmp_path / "in.csv"
    table.write_text("id,title,comment\n1,제목,\n2,,좋은 기사\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert predict(model, table, out) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    api = Predictor.from_pretrained(model).predict(["", "좋은 기사"], ["제목", None])
    assert [r["text"] for r in rows] == ["", "좋은 기사"]
    assert [{"labels": r["labels"], "spans": r["spans"]} for r in rows] == api


@pytest.mark.parametrize("call, message", [
    (lambda p: p.predict([None]), r"^texts\[0\]: expected a string, got None$"),
    (lambda p: p.predict(["좋은 기사", 3]), r"^texts\[1\]: expected a string, got int$"),
    (lambda p: p.predict("좋은 기사"), r"^texts must be a list of strings; for one text pass \[text\]$"),
    (lambda p: p.predict(7), r"^texts must be an iterable of strings, got int$"),
    (lambda p: p.predict(["a", "b"], contexts=["제목", 3]),
     r"^contexts\[1\]: expected None, a string or a list of strings, got int$"),
    (lambda p: p.predict(["a"], contexts=[["A: 안녕", None]]), r"^contexts\[0\]: turn 1: expected a string, got None$"),
    (lambda p: p.predict(["a"], batch_size=0), r"^batch_size must be a whole number of at least 1, got 0$"),
    (lambda p: p.predict(["a"], batch_size=2.5), r"^batch_size must be a whole number of at least 1, got 2.5$"),
    (lambda p: p.predict(["ok", "bad \ud800"]),
     r"^texts\[1\]: holds a lone surrogate \(U\+D800\) at character 4, which is not Unicode text$"),
    (lambda p: list(p.predict_examples([Example(id="e1", text="a")], batch_size=0)),
     r"^batch_size must be a whole number of at least 1, got 0$"),
    (lambda p: list(p.predict_examples([Example(id="e1", text=None)])), r"^example 'e1': text expected a string"),
])
def test_bad_arguments_to_the_python_api_are_typed_errors_naming_the_argument(model, call, message):
    predictor = Predictor.from_pretrained(model)
    with pytest.raises(ArgumentError, match=message):
        call(predictor)


def test_any_iterable_of_texts_is_taken(model):
    predictor = Predictor.from_pretrained(model)
    texts = ["좋은 기사", "너 진짜 한심하다", ""]
    expected = predictor.predict(texts, contexts=["제목", None, ["A: 안녕"]])
    assert predictor.predict(t for t in texts) == predictor.predict(texts)
    assert predictor.predict(tuple(texts), contexts=iter(["제목", None, ["A: 안녕"]])) == expected
    assert expected[2]["spans"] == []


def test_write_predictions_reports_rows_and_kept_rows(model, tmp_path):
    predictor = Predictor.from_pretrained(model)
    examples = [Example(id=str(i), text=f"댓글 {i}") for i in range(5)]
    out = tmp_path / "p.jsonl"
    assert write_predictions(predictor, examples, out, options=RunOptions(1)).rows == 5
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == list("01234")
    with pytest.raises(DataError, match="boom"):
        def failing():
            yield from examples
            raise DataError("in.jsonl:6: boom")
        write_predictions(predictor, failing(), out, options=RunOptions(1))
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == list("01234")


@pytest.mark.slow
def test_a_run_killed_midway_resumes_to_the_bytes_of_an_uninterrupted_run(model, tmp_path):
    rows = comments(400)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    whole, out = tmp_path / "whole.jsonl", tmp_path / "out.jsonl"
    partial = tmp_path / "out.jsonl.partial"
    # Batches of 4: chunks of 32 rows, each flushed as it is done. Every run is a process of its own, so each
    # has the same number of threads (another thread count may change the last digit of a probability).
    argv = [sys.executable, "-m", "kold_span.cli", "predict", "--model", str(model), "--input", str(source),
            "--quiet", "--batch-size", "4"]
    child = subprocess.Popen(argv + ["--output", str(out)], env=child_env())
    deadline = time.time() + 300
    while time.time() < deadline and child.poll() is None:
        if partial.exists() and partial.stat().st_size > 30_000:  # about three chunks in
            break
        time.sleep(0.02)
    assert child.poll() is None, "the run ended before it could be killed: give it more rows"
    child.send_signal(signal.SIGKILL)
    child.wait()
    done = len(list(complete_rows(partial)))
    assert 32 <= done < len(rows) and not out.exists()
    resumed = subprocess.run(argv + ["--output", str(out), "--resume"], env=child_env(), check=True,
                             capture_output=True, encoding="utf-8")
    assert f"wrote 400 predictions ({done - done % 32} kept from the unfinished run)" in resumed.stdout
    subprocess.run(argv + ["--output", str(whole)], env=child_env(), check=True, capture_output=True)
    assert out.read_bytes() == whole.read_bytes()
    assert not partial.exists()


@pytest.mark.slow
def test_sigterm_while_standard_input_is_spooled_removes_the_spool(model, tmp_path):
    spools = tmp_path / "tmp"
    spools.mkdir()
    argv = [sys.executable, "-m", "kold_span.cli", "predict", "--model", str(model), "--input", "-", "--format",
            "jsonl", "--output", str(tmp_path / "out.jsonl"), "--quiet"]
    child = subprocess.Popen(argv, env={**child_env(), "TMPDIR": str(spools)}, stdin=subprocess.PIPE,
                             stderr=subprocess.PIPE, encoding="utf-8")
    child.stdin.write(json.dumps({"id": "1", "text": "좋은 기사"}) + "\n")
    child.stdin.flush()  # and the stream left open: the spool waits for more
    deadline = time.time() + 120
    while time.time() < deadline and not any(spools.glob("kold-span-stdin-*/stdin.jsonl")):
        time.sleep(0.02)
    assert child.poll() is None and any(spools.glob("kold-span-stdin-*"))
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 143 and "terminated (SIGTERM)" in stderr
    assert list(spools.iterdir()) == [] and not (tmp_path / "out.jsonl").exists()


def test_a_parquet_output_holds_the_rows_of_the_jsonl_output(model, tmp_path, capsys):
    import pyarrow.parquet as pq

    source = write_jsonl(tmp_path / "in.jsonl", comments(CHUNK + 3))
    assert predict(model, source, tmp_path / "out.jsonl") == 0
    assert predict(model, source, tmp_path / "out.parquet", "--html", str(tmp_path / "page.html")) == 0
    assert listing(tmp_path) == ["in.jsonl", "out.jsonl", "out.parquet", "page.html"]
    from_jsonl = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column_names == ["id", "text", "labels", "spans"]
    assert str(table.schema.field("spans").type) == ("list<element: struct<type: string, start: int64, end: int64, "
                                                     "text: string, score: double>>")
    from_parquet = [{**row, "labels": json.loads(row["labels"])} for row in table.to_pylist()]
    assert from_parquet == from_jsonl
    assert [row["id"] for row in from_jsonl] == [f"c{i}" for i in range(CHUNK + 3)]


def test_a_parquet_output_is_resumed_and_an_empty_one_has_its_columns(model, tmp_path, capsys):
    import pyarrow.parquet as pq

    rows = comments(CHUNK + 3)
    assert predict(model, write_jsonl(tmp_path / "whole.jsonl", rows), tmp_path / "whole.parquet") == 0
    source = write_jsonl(tmp_path / "in.jsonl", rows, bad_line=CHUNK + 2)
    assert predict(model, source, tmp_path / "out.parquet") == 2
    assert "kept in" in capsys.readouterr().err and not (tmp_path / "out.parquet").exists()
    write_jsonl(source, rows)
    assert predict(model, source, tmp_path / "out.parquet", "--resume") == 0
    assert f"({CHUNK} kept from the unfinished run)" in capsys.readouterr().out
    assert pq.read_table(tmp_path / "out.parquet").equals(pq.read_table(tmp_path / "whole.parquet"))
    assert not (tmp_path / "out.parquet.partial").exists()
    examples = iter([])
    assert write_predictions(Predictor.from_pretrained(model), examples, tmp_path / "empty.parquet").rows == 0
    assert pq.read_table(tmp_path / "empty.parquet").column_names == ["id", "text", "labels", "spans"]



@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc, where no file can be made")
def test_an_output_that_cannot_be_written_is_named_not_its_temporary_file(model, tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", comments(2))
    assert predict(model, source, "/proc/kold-span-out.jsonl") == 2
    assert "error: cannot write /proc/kold-span-out.jsonl: " in capsys.readouterr().err
    assert predict(model, source, "/proc/kold-span-out.parquet") == 2
    assert "error: cannot write /proc/kold-span-out.parquet: " in capsys.readouterr().err


def test_ids_that_are_not_strings_are_written_as_their_json_text(model, tmp_path):
    rows = [{"id": True, "text": "좋은 기사"}, {"id": 1.5, "text": "바보"}, {"id": 7, "text": "ㅋㅋ"},
            {"id": {"a": 1}, "text": "너 진짜"}]
    assert predict(model, write_jsonl(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl") == 0
    out = [json.loads(line)["id"] for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert out == ["true", "1.5", "7", '{"a": 1}']


def test_a_pattern_as_the_input_points_to_the_ray_engine(model, tmp_path, capsys):
    assert predict(model, tmp_path / "shards" / "*.jsonl", tmp_path / "out.jsonl") == 2
    assert "a pattern of many files is for `kold-span predict --engine ray`" in capsys.readouterr().err


@pytest.mark.skipif(torch_has_cuda(), reason="a CUDA device is there")
def test_a_cuda_device_without_cuda_is_an_error_not_a_traceback(model, tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", comments(2))
    assert predict(model, source, tmp_path / "out.jsonl", "--device", "cuda") == 2
    assert "error: device cuda: torch sees no CUDA device here" in capsys.readouterr().err
    assert predict(model, source, tmp_path / "out.jsonl", "--device", "gpu0") == 2
    assert "device must be cpu, cuda or cuda:N, got 'gpu0'" in capsys.readouterr().err


def test_resume_refuses_an_unfinished_output_of_other_options(model, tmp_path, capsys):
    rows = comments(CHUNK + 3)
    source = write_jsonl(tmp_path / "in.jsonl", rows, bad_line=CHUNK + 2)
    out = tmp_path / "out.jsonl"
    assert predict(model, source, out) == 2
    assert listing(tmp_path) == ["in.jsonl", "out.jsonl.partial", "out.jsonl.partial.json"]
    write_jsonl(source, rows)
    capsys.readouterr()
    assert main(["predict", "--model", str(model), "--input", str(source), "--output", str(out), "--quiet",
                 "--batch-size", str(BATCH + 1), "--resume"]) == 2
    assert f"batch_size {BATCH} then, {BATCH + 1} now" in capsys.readouterr().err
    assert predict(model, source, out, "--resume") == 0
    assert listing(tmp_path) == ["in.jsonl", "out.jsonl"]
    assert predict(model, write_jsonl(tmp_path / "bad.jsonl", rows, bad_line=1), tmp_path / "o2.jsonl") == 2
    assert "o2.jsonl.partial.json" not in listing(tmp_path)  # nothing written: nothing left behind


@pytest.mark.parametrize("name", ["out.csv", "out.TSV", "out.txt"])
def test_an_output_named_as_another_input_format_is_refused(tmp_path, capsys, name):
    # JSON lines in out.csv would be read back as CSV: refused before the model loads (no model needed here)
    source = tmp_path / "in.txt"
    source.write_text("좋은 기사\n", encoding="utf-8")
    assert main(["predict", "--model", str(tmp_path / "no-model"), "--input", str(source), "--output",
                 str(tmp_path / name), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "predict writes JSON lines or Parquet" in err and "name it .jsonl or .parquet" in err
    assert not (tmp_path / name).exists()
