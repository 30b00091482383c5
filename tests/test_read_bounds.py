"""Bounded reading (issue 54): every file read whole has a size bound, every line of a line format a length bound,
each raised with an environment variable the error names; long comments below the bound are read whole."""
import io
import json
import re
import sys

import pytest

from kold_span import corpora
from kold_span.cli import main
from kold_span.errors import DataError, ModelFormatError
from kold_span.inference.inputs import iter_inputs

from conftest import FIXTURE, TINY, untrained_model

LINE_HINT = "set KOLD_SPAN_MAX_LINE_BYTES (bytes) to read longer ones"
FILE_HINT = "set KOLD_SPAN_MAX_FILE_BYTES (bytes) to read longer ones"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("untrained") / "model")


def zero_named(folder, name):
    """A link named `name` to /dev/zero: an input that never ends."""
    link = folder / name
    link.symlink_to("/dev/zero")
    return link


@pytest.mark.parametrize("suffix", [".txt", ".jsonl", ".csv", ".tsv"])
def test_dev_zero_as_a_predict_input_is_a_clear_error(model, tmp_path, capsys, suffix):
    source = zero_named(tmp_path, f"in{suffix}")
    assert main(["predict", "--model", str(model), "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kold-span predict: error: {source}:1: a line longer than 16 MiB; {LINE_HINT}"), err
    assert not (tmp_path / "o.jsonl").exists()


def test_dev_zero_on_standard_input_stops_at_the_line_bound(model, tmp_path, capsys, monkeypatch):
    with open("/dev/zero", "rb") as zero:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(zero))
        code = main(["predict", "--model", str(model), "--input", "-", "--format", "txt", "--output",
                     str(tmp_path / "o.jsonl"), "--quiet"])
    assert code == 2
    assert f"error: standard input:1: a line longer than 16 MiB; {LINE_HINT}" in capsys.readouterr().err


@pytest.mark.parametrize("fmt, line", [("txt", b"good comment\n"), ("parquet", b"P" * 13)])
def test_an_endless_standard_input_stops_at_the_stream_bound(model, tmp_path, capsys, monkeypatch, fmt, line):
    # lines with their newlines (or Parquet's bytes) that never end: the spool is bounded as a whole
    monkeypatch.setenv("KOLD_SPAN_MAX_STDIN_BYTES", "1000")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    stream = io.BytesIO(line * 200)  # 2,600 bytes: past the bound, as an endless stream would be
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stream))
    code = main(["predict", "--model", str(model), "--input", "-", "--format", fmt, "--output",
                 str(tmp_path / "o.jsonl"), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert "error: standard input: a stream longer than 1000 bytes; set KOLD_SPAN_MAX_STDIN_BYTES (bytes)" in err
    assert not (tmp_path / "o.jsonl").exists() and not list(tmp_path.glob("kold-span-stdin-*"))  # spool removed


def test_a_stream_within_the_bound_is_predicted(model, tmp_path, monkeypatch):
    monkeypatch.setenv("KOLD_SPAN_MAX_STDIN_BYTES", str(len(b"good comment\n" * 3)))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"good comment\n" * 3)))
    assert main(["predict", "--model", str(model), "--input", "-", "--format", "txt", "--output",
                 str(tmp_path / "o.jsonl"), "--quiet"]) == 0
    assert len((tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()) == 3


def test_dev_zero_as_data_train_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KOLD_SPAN_MAX_FILE_BYTES", str(1 << 20))  # the default, 256 MiB, takes as long to reach
    source = zero_named(tmp_path, "train.json")
    assert main(["train", str(TINY), "--set", f"data.train={source}", f"output_dir={tmp_path}"]) == 2
    assert capsys.readouterr().err.startswith(f"kold-span train: error: {source}: a file longer than 1 MiB; "
                                              f"{FILE_HINT}")


def test_dev_zero_as_a_corpus_read_whole_is_refused_at_the_default_bound(tmp_path):
    with pytest.raises(DataError, match=f"zero.json: a file longer than 256 MiB; {re.escape(FILE_HINT)}"):
        corpora.read("kold", zero_named(tmp_path, "zero.json"))


def test_the_line_bound_is_raised_by_its_variable(tmp_path, monkeypatch):
    source = tmp_path / "in.jsonl"
    long_row = json.dumps({"id": "2", "text": "바" * 2000}, ensure_ascii=False)  # 6,000 bytes
    source.write_text('{"id": "1", "text": "a"}\n' + long_row + "\n", encoding="utf-8")
    monkeypatch.setenv("KOLD_SPAN_MAX_LINE_BYTES", "1000")
    with pytest.raises(DataError, match=f"^{source}:2: a line longer than 1000 bytes; {re.escape(LINE_HINT)}$"):
        list(iter_inputs(source))
    monkeypatch.setenv("KOLD_SPAN_MAX_LINE_BYTES", "10000")
    assert [len(ex.text) for ex in iter_inputs(source)] == [1, 2000]


FIVE_MB = "바보 같은 말 " * 350_000  # 6.3 MB of UTF-8 on one line


@pytest.mark.parametrize("suffix", [".txt", ".jsonl", ".csv", ".tsv"])
def test_a_five_megabyte_comment_is_read_whole(tmp_path, suffix):
    # issue 54: CSV cut a field at 128 KiB (csv's own limit); every format now reads up to the line bound
    source = tmp_path / f"in{suffix}"
    if suffix == ".txt":
        source.write_text(FIVE_MB + "\n", encoding="utf-8")
    elif suffix == ".jsonl":
        source.write_text(json.dumps({"text": FIVE_MB}, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        source.write_text(f"id{suffix == '.csv' and ',' or chr(9)}text\n1{suffix == '.csv' and ',' or chr(9)}"
                          f"{FIVE_MB}\n", encoding="utf-8")
    [example] = list(iter_inputs(source))
    assert example.text == FIVE_MB and len(FIVE_MB.encode("utf-8")) > 5_000_000


def test_a_csv_field_past_the_line_bound_names_the_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("KOLD_SPAN_MAX_LINE_BYTES", "1000")
    source = tmp_path / "in.csv"
    source.write_text('id,text\n1,"' + "a\n" * 600 + '"\n', encoding="utf-8")  # short lines, one long field
    with pytest.raises(DataError, match=f"^{source}:2: a field longer than 1000 bytes; {re.escape(LINE_HINT)}$"):
        list(iter_inputs(source))


@pytest.mark.slow
def test_predict_labels_a_five_megabyte_comment(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(FIVE_MB + "\n", encoding="utf-8")
    assert main(["predict", "--model", str(model), "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
                 "--quiet"]) == 0
    [row] = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["text"] == FIVE_MB


def test_a_model_json_file_past_the_file_bound_is_refused(model, tmp_path, monkeypatch):
    from kold_span.inference.predictor import Predictor

    monkeypatch.setenv("KOLD_SPAN_MAX_FILE_BYTES", "100")
    with pytest.raises(ModelFormatError, match=f"config.json: a file longer than 100 bytes; "
                                               f"{re.escape(FILE_HINT)}"):
        Predictor.from_pretrained(model)


class CountedName(str):
    """A column name that counts how often it is compared (the cost of the duplicate check)."""

    comparisons = 0

    def __eq__(self, other):
        CountedName.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_the_duplicate_column_check_is_linear():
    # issue 54: 100,000 header columns took 148 s (a list.count per name: n² comparisons)
    from kold_span.inference.inputs import repeated_names

    header = [CountedName(f"c{i}") for i in range(2000)] + [CountedName("c7")]
    CountedName.comparisons = 0
    assert repeated_names(header) == ["c7"]
    assert CountedName.comparisons < 10 * len(header)


def test_a_csv_of_a_hundred_thousand_columns_is_read(tmp_path):
    source = tmp_path / "wide.csv"
    names = ["id", "text"] + [f"c{i}" for i in range(100_000)] + ["c7"]
    source.write_text(",".join(names) + "\n" + ",".join(["1", "바보"] + ["x"] * 100_001) + "\n", encoding="utf-8")
    assert [(ex.id, ex.text) for ex in iter_inputs(source)] == [("1", "바보")]


def test_a_jsonl_corpus_line_past_the_bound_names_file_and_line(tmp_path, monkeypatch):
    source = tmp_path / "gold.jsonl"
    lines = [json.dumps(ex.to_dict(), ensure_ascii=False) for ex in corpora.read("kold", FIXTURE)[:3]]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("KOLD_SPAN_MAX_LINE_BYTES", str(min(len(line.encode()) for line in lines) + 1))
    with pytest.raises(DataError, match=rf"^{source}:\d: a line longer than \d+ bytes; {re.escape(LINE_HINT)}$"):
        corpora.read("jsonl", source)
