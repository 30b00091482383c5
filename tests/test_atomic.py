"""Output files are written whole or not at all (`kold_span.data.atomic`), by every writer of the package."""
import json
import os
import stat

import pytest

from kold_span.data.atomic import atomic_write, error_notes, partial_path, write_text_atomic
from kold_span.data.example import Example
from kold_span.data.jsonl import write_jsonl
from kold_span.errors import DataError


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_success_replaces_the_target_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n", encoding="utf-8")
    with atomic_write(target) as f:
        f.write("new\n")
        assert target.read_text(encoding="utf-8") == "old\n"  # untouched until the block ends
    assert target.read_text(encoding="utf-8") == "new\n"
    assert listing(tmp_path) == ["out.txt"]


def test_an_error_leaves_the_previous_file_and_says_so(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        with atomic_write(target) as f:
            f.write("half")
            raise DataError("in.jsonl:401: invalid JSON")
    assert str(caught.value) == "in.jsonl:401: invalid JSON"
    assert error_notes(caught.value) == [f"{target} left as it was"]
    assert target.read_text(encoding="utf-8") == "old\n"
    assert listing(tmp_path) == ["out.txt"]


def test_an_interrupt_also_leaves_the_previous_file(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(target) as f:
            f.write("half")
            raise KeyboardInterrupt
    assert listing(tmp_path) == []


def test_a_named_partial_file_is_kept_on_error_and_appended_to(tmp_path):
    target = tmp_path / "p.jsonl"
    partial = partial_path(target)
    assert partial == tmp_path / "p.jsonl.partial"
    with pytest.raises(DataError) as caught:
        with atomic_write(target, partial=partial) as f:
            f.write("row 1\n")
            raise DataError("boom")
    assert error_notes(caught.value) == [f"{target} not written; what was written so far is kept in {partial}"]
    assert partial.read_text(encoding="utf-8") == "row 1\n" and not target.exists()
    with atomic_write(target, "a", partial=partial) as f:
        f.write("row 2\n")
    assert target.read_text(encoding="utf-8") == "row 1\nrow 2\n"
    assert listing(tmp_path) == ["p.jsonl"]


def test_an_empty_partial_file_is_not_kept(tmp_path):
    target = tmp_path / "p.jsonl"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        with atomic_write(target, partial=partial_path(target)):
            raise DataError("no such column")
    assert error_notes(caught.value) == [f"{target} left as it was"]
    assert listing(tmp_path) == ["p.jsonl"]


def test_parent_directories_are_created_and_bytes_can_be_written(tmp_path):
    target = tmp_path / "a" / "b" / "x.png"
    with atomic_write(target, "wb") as f:
        f.write(b"\x89PNG")
    assert target.read_bytes() == b"\x89PNG"


def test_the_file_gets_the_permissions_of_any_new_file(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x", encoding="utf-8")
    written = write_text_atomic(tmp_path / "atomic.txt", "x")
    assert stat.S_IMODE(os.stat(written).st_mode) == stat.S_IMODE(os.stat(plain).st_mode)


def test_a_directory_as_target_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(IsADirectoryError) as caught:
        with atomic_write(tmp_path / "out", partial=partial_path(tmp_path / "out")):
            raise AssertionError("the block must not run")
    assert caught.value.filename == str(tmp_path / "out")
    assert listing(tmp_path) == ["out"]


def test_appending_needs_a_named_partial_file(tmp_path):
    with pytest.raises(ValueError, match="pass partial="):
        with atomic_write(tmp_path / "x", "a"):
            pass


def test_write_jsonl_keeps_the_previous_file_when_an_example_fails(tmp_path):
    target = tmp_path / "gold.jsonl"
    write_jsonl([Example(id="1", text="좋은 기사")], target)
    before = target.read_bytes()

    def examples():
        yield Example(id="2", text="새 기사")
        raise DataError("corpus.json: record 1: field 'comment': expected a non-empty string")

    with pytest.raises(DataError, match="record 1"):
        write_jsonl(examples(), target)
    assert target.read_bytes() == before
    assert listing(tmp_path) == ["gold.jsonl"]
    assert [json.loads(line)["id"] for line in before.decode().splitlines()] == ["1"]
