"""Canonical examples: offsets, JSONL round trip, errors that name file and line."""
import json

import pytest

from kold_span.data.example import Annotation, Example, merge_spans, normalize_spans, offsets_to_spans, spans_to_offsets
from kold_span.data.jsonl import parse_json_document, read_jsonl, read_utf8, to_hf_dataset, write_jsonl
from kold_span.errors import ArgumentError, DataError

from conftest import FIXTURE


def test_offsets_to_spans_groups_consecutive_characters():
    assert offsets_to_spans([15, 16, 17, 18, 19, 27, 28, 29, 30, 31]) == [(15, 20), (27, 32)]
    assert offsets_to_spans([]) == []
    assert offsets_to_spans([3, 1, 2, 2]) == [(1, 4)]
    assert spans_to_offsets([(1, 4), (6, 7)]) == {1, 2, 3, 6}


def test_spans_are_sorted_and_merged():
    assert merge_spans([(5, 8), (0, 2), (7, 10), (2, 3)]) == [(0, 3), (5, 10)]
    ex = Example(id="1", text="abcdefghij", spans={"OFF": [(5, 8), (0, 2)]})
    assert ex.spans["OFF"] == [(0, 2), (5, 8)]
    assert ex.span_texts("OFF") == ["ab", "fgh"]


@pytest.mark.parametrize("bad", [[(3, 3)], [(-1, 2)], [(0, 11)], [(0, 1, 2)], [(0.5, 2)]])
def test_invalid_spans_are_rejected(bad):
    with pytest.raises(DataError, match="span"):
        normalize_spans(bad, 10)


def test_jsonl_round_trip(tmp_path):
    examples = [
        Example(id="a", text="너 진짜 바보냐", context="제목", labels={"OFF": True, "GRP": ["gender-men"]},
                spans={"OFF": [(5, 8)]},
                annotations=[Annotation("7", {"OFF": True}, {"OFF": [(5, 8)]}, {"age": 30})], meta={"k": 1}),
        Example(id="b", text="좋은 기사", context=["A: 안녕", "B: 네"]),
    ]
    path = tmp_path / "x.jsonl"
    assert write_jsonl(examples, path) == 2
    assert list(read_jsonl(path)) == examples


def test_read_jsonl_errors_name_file_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "1", "text": "ok"}) + "\n" + json.dumps({"id": "2"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2: missing field 'text'"):
        list(read_jsonl(path))
    path.write_text(json.dumps({"id": "1", "text": "abc", "spans": {"OFF": [[0, 9]]}}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: .*OFF.*outside text of length 3"):
        list(read_jsonl(path))
    path.write_text("{not json\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: invalid JSON"):
        list(read_jsonl(path))


@pytest.mark.parametrize("record, fragment", [  # found by tests/test_fuzz.py: each was a raw TypeError/AttributeError
    ({"id": "1", "text": "a", "meta": True}, r"field 'meta' must be an object, got bool"),
    ({"id": "1", "text": "a", "labels": "OFF"}, r"field 'labels' must be an object, got str"),
    ({"id": "1", "text": "a", "spans": [[0, 1]]}, r"malformed 'spans' or 'annotations'"),
    ({"id": "1", "text": "a", "annotations": [{"annotator": "x", "spans": {"OFF": 3}}]}, r"malformed 'spans'"),
    ({"id": "1", "text": "a", "annotations": ["x"]}, r"malformed 'spans' or 'annotations'"),
    ({"id": "1", "text": "a", "context": ["\ud800"]}, r"invalid JSON \(a string holds a lone surrogate \(U\+D800\)"),
])
def test_a_canonical_record_of_the_wrong_shape_names_its_line(tmp_path, record, fragment):
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "0", "text": "ok"}\n' + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"x.jsonl:2: {fragment}"):
        list(read_jsonl(path))
    record["annotations"] = None  # null where a list may be: no annotations
    if "annotations" not in fragment and "spans" not in fragment and "surrogate" not in fragment:
        return
    path.write_text(json.dumps({"id": "1", "text": "a", "annotations": None, "spans": None}) + "\n", encoding="utf-8")
    assert [ex.annotations for ex in read_jsonl(path)] == [[]]


def test_a_json_document_with_a_lone_surrogate_names_its_line():
    with pytest.raises(DataError, match=r"^x.json:3: invalid JSON \(a string holds a lone surrogate \(U\+DC00\)"):
        parse_json_document('{"a": 1,\n "b": "\\ud83d\\ude00",\n "c": ["\\udc00"]}', "x.json")
    assert parse_json_document('{"b": "\\ud83d\\ude00"}', "x.json") == {"b": "\U0001F600"}  # a pair is fine


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path):
    text = tmp_path / "a.txt"
    text.write_bytes(b"fine\nbad \xff here\n")
    with pytest.raises(DataError, match=r"a\.txt:2: not UTF-8 text \(byte 5 of the line\); save the file as UTF-8"):
        read_utf8(text)
    text.write_bytes("\ufeff첫 줄\n".encode("utf-8"))
    assert read_utf8(text) == "첫 줄\n"  # a byte-order mark is not text
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_bytes(b'{"id": "1", "text": "ok"}\n{"id": "2", "text": "\xff"}\n')
    with pytest.raises(DataError, match=r"x\.jsonl:2: not UTF-8 text \(byte 22 of the line\)"):
        list(read_jsonl(jsonl))


def test_corpus_readers_name_the_line_of_bytes_that_are_not_utf8(tmp_path):
    from kold_span import corpora

    kold = tmp_path / "kold.json"
    kold.write_bytes(b'[\n{"comment": "ok"},\n{"comment": "\xff"}\n]\n')
    with pytest.raises(DataError, match=r"kold\.json:3: not UTF-8 text \(byte 14 of the line\)"):
        corpora.read("kold", kold)
    tsd = tmp_path / "tsd_train.csv"
    tsd.write_bytes(b'spans,text\n"[0, 1]",ok\n"[]",\xff\n')
    with pytest.raises(DataError, match=r"tsd_train\.csv:3: not UTF-8 text \(byte 6 of the line\)"):
        corpora.read("toxic_spans", tsd)


def test_hf_dataset_has_explicit_features():
    ds = to_hf_dataset([Example(id="a", text="abc", context="t", labels={"OFF": True}, spans={"OFF": [(0, 2)]}),
                        Example(id="b", text="de")])
    assert ds.features["spans_OFF"].feature.length == 2
    assert ds[0]["spans_OFF"] == [[0, 2]]
    assert ds[1]["context"] == []
    assert json.loads(ds[0]["labels_json"]) == {"OFF": True}


def test_reader_options_are_checked_by_name_and_kind(tmp_path):
    from kold_span import corpora

    with pytest.raises(ArgumentError, match=r"reader 'kold' has no option 'min_annotator'; its options: "
                                         r"min_annotators, skip_bad"):
        corpora.read("kold", FIXTURE, min_annotator=2)
    with pytest.raises(ArgumentError, match=r"option 'skip_bad' must be true or false, got 'no'"):
        corpora.read("kold", FIXTURE, skip_bad="no")
    with pytest.raises(ArgumentError, match=r"option 'min_annotators' must be a whole number, got 2.5"):
        corpora.read("kold", FIXTURE, min_annotators=2.5)
    assert len(corpora.read("kold", FIXTURE, min_annotators=2, skip_bad=False)) > 0
