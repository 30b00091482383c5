"""KOLD reader: gold aggregation, label parsing, errors."""
import json

import pytest

from kold_span import corpora
from kold_span.data.bad_records import BadRecordWarning
from kold_span.corpora.kold import majority_offsets, parse_groups, parse_target, read_kold
from kold_span.errors import ArgumentError, DataError

from conftest import BAD_FIXTURE, FIXTURE

WORKED = "남녀평등 주장할 거면 여성징병제에도 동의하라고ㅋㅋㅋ 그리고 내 말에 그냥 시비만 걸지 말고 혜택은 다 쳐받으면서 왜 차별받는다고 말하는지 말해보라고ㅋㅋㅋ"


@pytest.fixture(scope="module")
def examples():
    return {ex.id: ex for ex in corpora.read("kold", FIXTURE)}


def test_worked_example_from_the_kold_readme(examples):
    ex = next(e for e in examples.values() if e.text == WORKED)
    assert len(ex.text) == 85
    assert ex.context == "페미니즘이 범죄가 되는 나라 [삶과 문화]"
    assert ex.spans["OFF"] == [(56, 85)]
    assert ex.span_texts("OFF")[0] == ex.meta["OFF_span"]
    assert ex.span_texts("OFF")[0].startswith(" ")
    assert [a.spans["OFF"] for a in ex.annotations] == [[(57, 85)], [(56, 85)], [(0, 85)]]


def test_majority_offsets_hand_checked():
    assert majority_offsets([[(57, 85)], [(56, 85)], [(0, 85)]]) == [(56, 85)]
    # Two separate runs agreed on by two annotators; a lone mark does not count.
    assert majority_offsets([[(0, 3), (10, 12)], [(1, 3), (10, 14)], [(20, 22)]]) == [(1, 3), (10, 12)]
    assert majority_offsets([[(0, 5)], [], []]) == []
    assert majority_offsets([[(0, 5)], [], []], min_annotators=1) == [(0, 5)]


def test_every_fixture_gold_matches_its_stated_span_text(examples):
    for ex in examples.values():
        for name in ("OFF", "TGT"):
            stated = ex.meta[f"{name}_span"]
            assert "|".join(ex.span_texts(name)) == stated, (ex.id, name)


def test_several_spans_in_one_comment(examples):
    multi = [ex for ex in examples.values() if len(ex.spans["OFF"]) > 1]
    assert multi, "the fixture must contain a comment with two offensive spans"
    for ex in multi:
        starts = [s for s, _ in ex.spans["OFF"]]
        assert starts == sorted(starts)


def test_labels_are_parsed(examples):
    offensive = [ex for ex in examples.values() if ex.labels["OFF"]]
    clean = [ex for ex in examples.values() if not ex.labels["OFF"]]
    assert offensive and clean
    assert all(ex.labels["TGT"] is None for ex in clean)
    assert {ex.labels["TGT"] for ex in offensive} <= {"individual", "group", "others", "untargeted"}
    assert any(len(ex.labels["GRP"]) > 1 for ex in examples.values())


def test_every_annotator_is_kept(examples):
    ex = next(iter(examples.values()))
    assert len(ex.annotations) == 3
    assert all(isinstance(a.labels["OFF"], bool) for a in ex.annotations)


def test_group_and_target_parsing():
    assert parse_groups("gender-women, race-chinese") == ["gender-women", "race-chinese"]
    assert parse_groups(None) == []
    assert parse_groups(["others-feminist"]) == ["others-feminist"]
    assert parse_target("group", True) == "group"
    assert parse_target(None, True) == "untargeted"
    assert parse_target("", True) == "untargeted"
    assert parse_target("group", False) is None
    with pytest.raises(DataError, match="TGT"):
        parse_target("somebody", True)


def test_malformed_records_name_index_guid_and_field():
    with pytest.raises(DataError) as err:
        corpora.read("kold", BAD_FIXTURE)
    message = str(err.value)
    assert "record 0" in message and "kold-bad_00000" in message and "off_start_idx" in message


def test_skip_bad_reports_how_many_and_why():
    with pytest.warns(BadRecordWarning, match="skipped 2 bad record"):
        examples = corpora.read("kold", BAD_FIXTURE, skip_bad=True)
    assert examples == []
    report = read_kold.last_report
    assert report.count == 2
    assert "outside comment of length" in report.reasons[1]


def test_disagreement_with_stated_span_is_reported(tmp_path):
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))
    records[0]["OFF_span"] = "something else"
    path = tmp_path / "kold.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    with pytest.warns(BadRecordWarning, match="1 record"):
        corpora.read("kold", path)
    assert read_kold.last_report.disagreements == {"OFF_span": [records[0]["guid"]]}


def test_jsonl_input_gives_the_same_examples(tmp_path):
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))
    path = tmp_path / "kold.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), encoding="utf-8")
    from_jsonl = corpora.read("kold", path)
    from_json = corpora.read("kold", FIXTURE)
    assert [e.spans for e in from_jsonl] == [e.spans for e in from_json]


@pytest.mark.parametrize("edit, fragment", [  # found by tests/test_fuzz.py: each was a raw TypeError/AttributeError
    (lambda r: r.update(OFF_span=True), r"field 'OFF_span': expected the marked text as a string, got True"),
    (lambda r: r.update(GRP=["gender-women", 3]), r"field 'GRP': expected group names \(strings\)"),
])
def test_a_field_of_the_wrong_type_names_record_and_field(tmp_path, edit, fragment):
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))[:3]
    edit(records[1])
    path = tmp_path / "k.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DataError, match=rf"k.json: record 1 \(guid .*\): {fragment}"):
        read_kold(path)
    with pytest.warns(BadRecordWarning):
        assert len(read_kold(path, skip_bad=True)) == 2
    path.write_text(json.dumps({"guid": "x"}), encoding="utf-8")  # an object where the list of records goes
    with pytest.raises(DataError, match=r"k.json:1 \(guid x\): missing field 'comment'"):
        read_kold(path)


def test_unknown_reader_lists_known_ones():
    with pytest.raises(ArgumentError, match="known readers"):
        corpora.read("nope", FIXTURE)
