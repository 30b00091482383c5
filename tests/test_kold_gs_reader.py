"""The `kold_gs` reader: KOLD's gold offensive-span strings located in the comment, on made-up fixtures.

Every expected offset below was counted by hand on the fixture texts (tests/fixtures/corpora/kold_gs/).
"""
import json
import subprocess
import sys
import warnings

import pytest
from hypothesis import given, strategies as st

from kold_span import corpora
from kold_span.corpora.kold_gs import AMBIGUOUS, locate_span, read_kold_gs
from kold_span.data.bad_records import BadRecordWarning
from kold_span.data.selection import carve
from kold_span.errors import ArgumentError, DataError

FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "corpora" / "kold_gs"


def read(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BadRecordWarning)
        return corpora.read("kold_gs", path, **options)


def test_directory_reads_the_three_training_files_in_order():
    examples = read(FIXTURES)
    assert [ex.id for ex in examples] == ["detection_easy:0", "detection_easy:1", "detection_medium:0",
                                          "detection_hard:0"]
    assert [ex.spans["OFF"] for ex in examples] == [[(0, 6)], [(0, 11), (12, 19)], [(3, 5), (8, 10)], [(0, 15)]]
    assert [ex.labels for ex in examples] == [
        {"OFF": True, "TGT": "individual"}, {"OFF": True, "TGT": "others"},
        {"OFF": True, "TGT": "untargeted"}, {"OFF": True, "TGT": "group"}]
    assert examples[1].span_texts("OFF") == ["말 같지도 않은 소리", "그만 좀 해라"]
    assert all(ex.context is None and ex.meta["side"] == "standard" for ex in examples)


def test_ambiguous_parts_are_counted_not_hidden():
    read(FIXTURES)
    assert read_kold_gs.last_report.notes == {AMBIGUOUS: ["detection_medium:0"]}
    with pytest.warns(BadRecordWarning, match="1 record"):
        corpora.read("kold_gs", FIXTURES / "detection_medium.jsonl")


def test_a_span_not_in_the_comment_is_a_bad_record_never_an_empty_gold():
    with pytest.raises(DataError, match=r"valid.json: record 1: field 'OFF_span': the part '미쳤네' is not in"):
        read(FIXTURES / "valid.json")
    examples = read(FIXTURES / "valid.json", skip_bad=True)
    assert [(ex.id, ex.spans["OFF"]) for ex in examples] == [("valid:0", [(7, 16)])]
    assert read_kold_gs.last_report.count == 1


def test_dialect_side_locates_its_own_span_and_reports_nulls():
    with pytest.raises(DataError, match="detection_easy.jsonl:2: field 'OFF_span_dialect': null"):
        read(FIXTURES, side="dialect")
    examples = read(FIXTURES, side="dialect", skip_bad=True)
    assert [(ex.id, ex.text[slice(*ex.spans["OFF"][0])]) for ex in examples] == [
        ("detection_easy:0:dialect", "저런 인간은"), ("detection_hard:0:dialect", "그 동네 사람들, 다 똑같제")]
    assert read_kold_gs.last_report.count == 2  # easy:1 and medium:0 have no dialect span


def test_both_sides_share_a_group_that_carving_keeps_together():
    examples = read(FIXTURES, side="both", skip_bad=True)
    assert [ex.id for ex in examples] == ["detection_easy:0", "detection_easy:0:dialect", "detection_easy:1",
                                          "detection_medium:0", "detection_hard:0", "detection_hard:0:dialect"]
    for seed in range(20):
        kept, carved = carve(examples, 0.5, seed)
        assert {ex.meta["group"] for ex in kept}.isdisjoint({ex.meta["group"] for ex in carved})


def test_bad_side_option_and_bad_fields():
    with pytest.raises(ArgumentError, match="option 'side'"):
        read(FIXTURES, side="gyeongsang")


@pytest.mark.parametrize("record, message", [
    ({"standard": "바보야", "OFF": True, "TGT": "group"}, "field 'OFF_span': missing"),
    ({"standard": "바보야", "OFF_span": 3, "OFF": True, "TGT": "group"}, "field 'OFF_span': expected the span"),
    ({"standard": "바보야", "OFF_span": "바보", "OFF": True, "TGT": "alien"}, "unknown target type"),
    ({"standard": "바보야", "OFF_span": "바보", "OFF": False, "TGT": "group"}, "field 'OFF': false"),
    ({"standard": " ", "OFF_span": " ", "OFF": True, "TGT": "group"}, "field 'standard': expected a non-empty"),
])
def test_bad_records_name_file_record_and_field(tmp_path, record, message):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        read(path)
    assert "one.jsonl:1" in str(err.value)


@given(st.lists(st.integers(0xAC00, 0xD7A3).map(chr), min_size=2, max_size=12, unique=True), st.data())
def test_parts_of_distinct_words_come_back_at_their_offsets(syllables, data):
    """Round trip: words of distinct syllables joined by spaces; any increasing choice of words, written as
    KOLD writes several spans (joined by ', '), is located at exactly those words' offsets."""
    words = ["".join(syllables[i:i + 2]) for i in range(0, len(syllables), 2)]
    text = " ".join(words)
    starts = [sum(len(w) + 1 for w in words[:i]) for i in range(len(words))]
    picks = sorted(data.draw(st.sets(st.integers(0, len(words) - 1), min_size=1)))
    spans, ambiguous = locate_span(text, ", ".join(words[i] for i in picks))
    expected = []
    for i in picks:  # adjacent words are one span: the space between them is not gold, so they stay apart
        expected.append((starts[i], starts[i] + len(words[i])))
    assert not ambiguous
    assert spans == expected
    assert all(text[s:e] == words[i] for (s, e), i in zip(spans, picks))


def test_convert_writes_each_file(tmp_path):
    out = tmp_path / "valid.jsonl"
    done = subprocess.run([sys.executable, "-m", "kold_span.cli", "convert", "kold_gs", str(FIXTURES / "valid.json"),
                           str(out), "--skip-bad"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["spans"]) for r in rows] == [("valid:0", {"OFF": [[7, 16]]})]
    assert "skipped 1 bad record" in done.stdout + done.stderr
    done = subprocess.run([sys.executable, "-m", "kold_span.cli", "convert", "kold_gs", str(FIXTURES),
                           str(tmp_path / "dialect.jsonl"), "--option", "side=dialect", "--skip-bad"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "wrote 2 examples" in done.stdout
