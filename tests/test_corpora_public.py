"""Readers of the public corpora: invented fixtures with hand-checked values, then the real files when present."""
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from kold_span.corpora import available, get_reader, read
from kold_span.data.bad_records import BadRecordWarning
from kold_span.corpora.beep import read_unlabeled_texts
from kold_span.corpora.unsmile import GROUP_COLUMNS
from kold_span.data.example import spans_to_offsets
from kold_span.data.transforms import swap_speakers
from kold_span.errors import DataError

from conftest import CORPORA, TINY, shared_data

PUBLIC = ("toxic_spans", "toxic_spans_raw", "beep", "unsmile", "kocosa", "irosva", "multipico")


def fixture_copy(tmp_path: Path, name: str) -> Path:
    """A writable copy of one corpus' fixture directory."""
    return Path(shutil.copytree(CORPORA / name, tmp_path / name))


def replace_in(file: Path, old: str, new: str) -> None:
    """Edit a fixture copy in place; the old text must be there."""
    text = file.read_text(encoding="utf-8")
    assert old in text
    file.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_every_public_reader_is_registered():
    assert set(PUBLIC) <= set(available())
    for name in PUBLIC:
        assert callable(get_reader(name))


# --------------------------------------------------------------------------- toxic_spans


def test_toxic_spans_reads_offsets_as_spans():
    examples = read("toxic_spans", CORPORA / "toxic_spans")
    assert [ex.id for ex in examples] == ["tsd_train-0", "tsd_train-1", "tsd_train-2"]
    silly, thanks, loser = examples
    assert silly.text == "What a silly, silly idea."
    assert silly.spans == {"OFF": [(7, 12), (14, 19)]}
    assert silly.span_texts("OFF") == ["silly", "silly"]
    assert silly.labels == {"toxic": True}
    assert silly.context is None
    assert thanks.text == "Thanks for sharing,\nvery helpful."
    assert thanks.spans == {"OFF": []} and thanks.labels == {"toxic": False}
    assert loser.text == 'He said "get lost, loser" and left.'
    assert loser.span_texts("OFF") == ["loser"]


def test_toxic_spans_directory_split_and_file_path():
    trial = read("toxic_spans", CORPORA / "toxic_spans", split="trial")
    assert [(ex.id, ex.span_texts("OFF")) for ex in trial] == [("tsd_trial-0", ["Dumb"])]
    assert read("toxic_spans", CORPORA / "toxic_spans" / "tsd_trial.csv")[0].spans == {"OFF": [(0, 4)]}


def test_toxic_spans_offset_outside_text_names_file_line_and_field(tmp_path):
    file = fixture_copy(tmp_path, "toxic_spans") / "tsd_train.csv"
    replace_in(file, "[19, 20, 21, 22, 23]", "[19, 20, 99]")
    with pytest.raises(DataError, match=r"tsd_train\.csv:5: field 'spans': offset\(s\) \[99\]"):
        read("toxic_spans", file)
    with pytest.warns(BadRecordWarning, match="skipped 1 bad record"):
        examples = read("toxic_spans", file, skip_bad=True)
    # the record before it spans lines 3-4, so the bad one starts on line 5; ids do not shift
    assert [ex.id for ex in examples] == ["tsd_train-0", "tsd_train-1"]
    report = get_reader("toxic_spans").last_report
    assert report.count == 1 and "tsd_train.csv:5" in report.reasons[0]


def test_toxic_spans_unparsable_offsets(tmp_path):
    file = fixture_copy(tmp_path, "toxic_spans") / "tsd_trial.csv"
    replace_in(file, '"[0, 1, 2, 3]"', '"[0, 1, two]"')
    with pytest.raises(DataError, match=r"tsd_trial\.csv:2: field 'spans'"):
        read("toxic_spans", file)


def test_toxic_spans_wrong_field_count_is_a_bad_record(tmp_path):
    file = fixture_copy(tmp_path, "toxic_spans") / "tsd_trial.csv"
    file.write_text(file.read_text(encoding="utf-8") + "[],one,two\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"tsd_trial\.csv:3: expected 2 fields"):
        read("toxic_spans", file)
    with pytest.warns(BadRecordWarning):
        assert len(read("toxic_spans", file, skip_bad=True)) == 1


# --------------------------------------------------------------------------- toxic_spans_raw


def test_toxic_spans_raw_gold_annotations_and_types():
    clown, weather, troll = read("toxic_spans_raw", CORPORA / "toxic_spans")
    assert clown.id == "toxic_spans-101" and clown.meta == {"comment_id": "101", "min_annotators": 2}
    # "clown" is marked by all three, "liar" by 11 (Insult) and 12 (untyped): both gold
    assert clown.spans == {"OFF": [(10, 15), (22, 26)]}
    assert clown.span_texts("OFF") == ["clown", "liar"]
    # gold characters: Insult 5+4 (11) + 5 (12; its "liar" is untyped) = 14, Profane/Obscene 5
    assert clown.labels == {"toxic": True, "span_type": "Insult"}
    a11, a12, a13 = clown.annotations
    assert (a11.annotator, a11.traits, a11.spans) == ("11", {"country": "USA"}, {"OFF": [(10, 15), (22, 26)]})
    assert a11.labels == {"type": "Insult", "all_toxic": False, "not_toxic": False}
    assert a12.labels["type"] == "Insult" and a12.spans == {"OFF": [(10, 15), (22, 26)]}
    assert a13.labels == {"type": "Profane/Obscene", "all_toxic": True, "not_toxic": False}
    assert a13.spans == {"OFF": [(0, 15)]} and a13.traits == {"country": "IND"}

    assert weather.text == "Nice weather today.\nSee you."
    assert weather.spans == {"OFF": []} and weather.labels == {"toxic": False, "span_type": "none"}
    assert [(a.annotator, a.labels["type"], a.labels["not_toxic"]) for a in weather.annotations] == [
        ("11", None, True), ("12", None, True)]

    # only one of three marks "troll": not gold at k=2
    assert troll.spans == {"OFF": []} and troll.labels["span_type"] == "none"


def test_toxic_spans_raw_min_annotators_options():
    clown, _, troll = read("toxic_spans_raw", CORPORA / "toxic_spans", min_annotators=1)
    assert clown.spans == {"OFF": [(0, 15), (22, 26)]}
    # gold characters 0-14 and 22-25: Profane/Obscene 15 beats Insult 5+4+5 = 14
    assert clown.labels["span_type"] == "Profane/Obscene"
    assert read("toxic_spans_raw", CORPORA / "toxic_spans", min_annotators=3)[0].spans == {"OFF": [(10, 15)]}
    clown, _, troll = read("toxic_spans_raw", CORPORA / "toxic_spans", min_annotators="half")
    assert clown.spans == {"OFF": [(10, 15), (22, 26)]}  # 3 markers → at least 2
    assert troll.span_texts("OFF") == ["troll"] and troll.meta["min_annotators"] == 1  # 1 marker → 1
    assert troll.labels == {"toxic": True, "span_type": "Insult"}
    with pytest.raises(ValueError, match="min_annotators"):
        read("toxic_spans_raw", CORPORA / "toxic_spans", min_annotators=0)


def test_toxic_spans_raw_span_past_text_is_a_bad_record(tmp_path):
    directory = fixture_copy(tmp_path, "toxic_spans")
    spans = directory / "spans.csv"
    spans.write_text(spans.read_text(encoding="utf-8") + "6,Threat,9,99\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"spans\.csv:8: field 'end': span \[9, 99\) outside comment 103"):
        read("toxic_spans_raw", directory)
    with pytest.warns(BadRecordWarning, match="skipped 1"):
        troll = read("toxic_spans_raw", directory, skip_bad=True)[2]
    assert get_reader("toxic_spans_raw").last_report.count == 1
    assert troll.spans == {"OFF": []} and troll.annotations[1].spans == {"OFF": []}


def test_toxic_spans_raw_unknown_comment_and_bad_flag(tmp_path):
    directory = fixture_copy(tmp_path, "toxic_spans")
    replace_in(directory / "annotations.csv", "7,103,16,VEN", "7,999,16,VEN")
    with pytest.raises(DataError, match=r"annotations\.csv:9: field 'comment_id': '999'"):
        read("toxic_spans_raw", directory)
    replace_in(directory / "annotations.csv", "7,999,16,VEN,False,True", "7,103,16,VEN,False,maybe")
    with pytest.raises(DataError, match=r"annotations\.csv:9: field 'not toxic'"):
        read("toxic_spans_raw", directory / "comments.csv")


# --------------------------------------------------------------------------- beep


def test_beep_comments_with_unquoted_titles():
    examples = read("beep", CORPORA / "beep")
    assert [ex.id for ex in examples] == ["beep-train-0", "beep-train-1", "beep-train-2"]
    first, second, third = examples
    assert first.text == "진짜 연기 너무 잘한다 ㅎㅎ"
    assert first.context == "배우 한소라, 신작 드라마 첫 방송"
    assert first.labels == {"hate": "none", "bias": "none", "contain_gender_bias": False}
    assert second.context == "운전면허 시험 제도 바뀐다"
    assert second.labels == {"hate": "hate", "bias": "gender", "contain_gender_bias": True}
    assert third.text == '이런 기사 쓰는 기자는 "기레기"다'
    assert third.context == '[단독] 기자협회 "윤리 강령 개정"'
    assert third.labels == {"hate": "offensive", "bias": "others", "contain_gender_bias": False}
    assert [ex.text for ex in read("beep", CORPORA / "beep" / "train.tsv")] == [ex.text for ex in examples]


def test_beep_unlabeled_comments_are_verbatim():
    unlabeled = read("beep", CORPORA / "beep", unlabeled=True)
    assert [(ex.id, ex.text, ex.context, ex.labels) for ex in unlabeled] == [
        ("beep-unlabeled-0", "노래 좋네요, 또 듣고 싶다", "가수 박이랑 새 앨범 공개", {}),
        ("beep-unlabeled-1", '"그냥" 그런 사람', '예능 "한밤" 출연, 화제', {}),
    ]
    assert read_unlabeled_texts(CORPORA / "beep") == ["노래 좋네요, 또 듣고 싶다", '"그냥" 그런 사람']


def test_beep_bad_label_names_line_and_field(tmp_path):
    file = fixture_copy(tmp_path, "beep") / "train.tsv"
    replace_in(file, "gender\thate", "gender\thateful")
    with pytest.raises(DataError, match=r"train\.tsv:3: field 'hate': expected one of"):
        read("beep", file)
    with pytest.warns(BadRecordWarning):
        examples = read("beep", file, skip_bad=True)
    assert [ex.id for ex in examples] == ["beep-train-0", "beep-train-2"]
    assert examples[1].context == '[단독] 기자협회 "윤리 강령 개정"'  # still aligned
    assert get_reader("beep").last_report.count == 1


def test_beep_title_count_mismatch_always_raises(tmp_path):
    directory = fixture_copy(tmp_path, "beep")
    replace_in(directory / "train.news_title.txt", "운전면허 시험 제도 바뀐다\n", "")
    for skip_bad in (False, True):
        with pytest.raises(DataError, match=r"train\.news_title\.txt: 2 title lines but .* 3 comments"):
            read("beep", directory, skip_bad=skip_bad)
    replace_in(directory / "unlabeled_comments.news_title_5.txt", "가수 박이랑 새 앨범 공개\n", "")
    with pytest.raises(DataError, match="line-aligned"):
        read("beep", directory, unlabeled=True)


# --------------------------------------------------------------------------- unsmile


def test_unsmile_groups_and_quotes_in_text():
    examples = read("unsmile", CORPORA / "unsmile")
    assert [ex.id for ex in examples] == [f"unsmile_train_v1.0-{i}" for i in range(3)]
    assert [(ex.text, ex.labels) for ex in examples] == [
        ('그 "전문가"들 말은 믿지 마라', {"groups": ["clean"]}),
        ("집에서 애나 보라는 꼰대들 수준 하고는", {"groups": ["여성/가족", "연령", "악플/욕설"]}),
        ("ㅋㅋㅋ 뭐지", {"groups": []}),
    ]
    assert all(ex.context is None for ex in examples)


def test_unsmile_bad_value_names_line_and_column(tmp_path):
    file = fixture_copy(tmp_path, "unsmile") / "unsmile_train_v1.0.tsv"
    replace_in(file, "하고는\t1\t0", "하고는\t1\t2")
    with pytest.raises(DataError, match=r"unsmile_train_v1\.0\.tsv:3: field '남성': expected 0 or 1, got '2'"):
        read("unsmile", file)
    with pytest.warns(BadRecordWarning):
        assert len(read("unsmile", file, skip_bad=True)) == 2
    assert get_reader("unsmile").last_report.count == 1


def test_unsmile_missing_column_is_reported(tmp_path):
    file = fixture_copy(tmp_path, "unsmile") / "unsmile_train_v1.0.tsv"
    replace_in(file, "\t개인지칭", "\tperson")
    with pytest.raises(DataError, match=r":1: header lacks column\(s\) \['개인지칭'\]"):
        read("unsmile", file)


# --------------------------------------------------------------------------- kocosa


def test_kocosa_turns_response_and_labels():
    plain, sarcastic, meeting = read("kocosa", CORPORA / "kocosa")
    assert plain.id == "KoCoSa_dev-0"
    assert plain.context == ["A: 오늘 비 온대?", "B: 응, 하루 종일 온대."]
    assert plain.text == "A: 그럼 우산 챙겨야겠다."
    assert plain.labels == {"sarcasm": False}
    assert plain.meta == {"speakers": ["A", "B"], "response_speaker": "A", "explanation": "",
                          "speakers_swapped": False}
    # stage directions stay as turns without a speaker; whitespace and blank lines go
    assert sarcastic.context == ["A: 나 시험 또 떨어졌어.", "B: 이번엔 공부 좀 했다며?", "(A sighs)", "A: 했지, 나름대로."]
    assert sarcastic.meta["speakers"] == ["A", "B", None, "A"]
    assert sarcastic.labels == {"sarcasm": True}
    assert sarcastic.meta["explanation"] == "B가 A의 노력을 실제로는 부족하다고 비꼬는 말이다."
    assert meeting.text == "A: 늦지 마." and meeting.meta["speakers"] == ["B", "A"]


def test_kocosa_speaker_swap():
    swapped = read("kocosa", CORPORA / "kocosa", speaker_swap=1.0)[1]
    assert swapped.context == ["B: 나 시험 또 떨어졌어.", "A: 이번엔 공부 좀 했다며?", "(A sighs)", "B: 했지, 나름대로."]
    assert swapped.text == "A: 와, 정말 대단한 노력이었네."
    assert swapped.meta["speakers"] == ["B", "A", None, "B"] and swapped.meta["response_speaker"] == "A"
    assert swapped.meta["explanation"] == "A가 B의 노력을 실제로는 부족하다고 비꼬는 말이다."
    assert swapped.meta["speakers_swapped"] is True
    assert swapped.labels == {"sarcasm": True}

    half = read("kocosa", CORPORA / "kocosa", speaker_swap=0.5, seed=3)
    assert sum(ex.meta["speakers_swapped"] for ex in half) == 2  # round(0.5 * 3)
    assert [ex.meta["speakers_swapped"] for ex in half] == [
        ex.meta["speakers_swapped"] for ex in read("kocosa", CORPORA / "kocosa", speaker_swap=0.5, seed=3)]
    original = read("kocosa", CORPORA / "kocosa")
    for ex in original:
        assert swap_speakers(swap_speakers(ex)) == ex
    with pytest.raises(ValueError, match="speaker_swap"):
        read("kocosa", CORPORA / "kocosa", speaker_swap=2)


def test_data_speaker_swap_augments_the_training_split_only(tmp_path):
    """`data.speaker_swap` swaps a share of the examples left for training after dev and test
    are carved, so the model is trained on swapped dialogues and scored on dialogues as read."""
    from kold_span.config.loading import load_config
    from kold_span.corpora.experiment import load_splits
    from kold_span.data.example import Example
    from kold_span.data.jsonl import write_jsonl
    from kold_span.errors import ConfigError

    dialogues = [Example(f"d{i}", f"B: 답 {i}", context=[f"A: 말 {i}", f"B: 응 {i}"], labels={"sarcasm": i % 2 == 0},
                         meta={"speakers": ["A", "B"], "response_speaker": "B"}) for i in range(20)]
    write_jsonl(dialogues, tmp_path / "d.jsonl")
    base = ["data.reader=jsonl", f"data.train={tmp_path / 'd.jsonl'}", "data.dev_fraction=0.2",
            "data.test_fraction=0.2", "data.stratify=sarcasm", "tasks=[{name: s, kind: sequence, source: sarcasm}]"]
    plain = load_splits(load_config(TINY, base))
    half = load_splits(load_config(TINY, base + ["data.speaker_swap=0.5"]))
    for name in ("dev", "test"):  # the same examples as without the option, none swapped
        assert half[name] == plain[name] and len(half[name]) == 4
    assert [ex.id for ex in half["train"]] == [ex.id for ex in plain["train"]]
    swapped = [ex for ex in half["train"] if ex.meta.get("speakers_swapped")]
    assert len(swapped) == 6  # round(0.5 * 12)
    one = swapped[0]
    i = one.id[1:]
    assert one.text == f"A: 답 {i}" and one.context == [f"B: 말 {i}", f"A: 응 {i}"]
    assert one.meta["response_speaker"] == "A" and one.labels == {"sarcasm": int(i) % 2 == 0}
    assert one.meta["speakers"] == ["B", "A"] and "explanation" not in one.meta  # no key invented
    assert [ex.id for ex in load_splits(load_config(TINY, base + ["data.speaker_swap=0.5", "seed=8"]))["train"]
            if ex.meta.get("speakers_swapped")] != [ex.id for ex in swapped]  # the run's seed picks them
    with pytest.raises(ConfigError, match="data.speaker_swap"):
        load_config(TINY, base + ["data.speaker_swap=1.5"])


def test_kocosa_bad_label_and_missing_field_name_record(tmp_path):
    file = fixture_copy(tmp_path, "kocosa") / "KoCoSa_dev.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    data["Sarcasm_Label"]["2"] = "Maybe"
    del data["Response"]["0"]
    file.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DataError, match=r"KoCoSa_dev\.json: record '0': field 'Response': missing"):
        read("kocosa", file)
    with pytest.warns(BadRecordWarning, match="skipped 2"):
        examples = read("kocosa", file, skip_bad=True)
    assert [ex.id for ex in examples] == ["KoCoSa_dev-1"]
    assert any("record '2': field 'Sarcasm_Label'" in r for r in get_reader("kocosa").last_report.reasons)


# --------------------------------------------------------------------------- irosva


def test_irosva_directory_reads_all_variants():
    examples = read("irosva", CORPORA / "irosva")
    assert [ex.id for ex in examples] == [
        "irosva-cu-e5b4", "irosva-es-a1f0", "irosva-es-b2e1", "irosva-es-c3d2",
        "irosva-mx-d4c3", "irosva-mx-d4c3-1"]  # a repeated ID gets its row index
    cuban, claro, manana = examples[:3]
    assert (cuban.context, cuban.labels, cuban.meta) == ("ETECSA, INTERNET", {"irony": True}, {"variant": "cu"})
    assert (claro.text, claro.context, claro.labels) == ("Claro, y la luna es de queso.", "TIERRAPLANISTAS",
                                                          {"irony": True})
    assert manana.text == "Mañana hay pleno en el Congreso.\nLo veremos."
    assert manana.labels == {"irony": False} and manana.meta == {"variant": "es"}
    assert [ex.id for ex in read("irosva", CORPORA / "irosva", variant="mx")] == [
        "irosva-mx-d4c3", "irosva-mx-d4c3-1"]


def test_irosva_variant_from_option(tmp_path):
    file = tmp_path / "cuba.csv"
    shutil.copy(CORPORA / "irosva" / "irosva.cu.training.csv", file)
    with pytest.raises(ValueError, match="variant="):
        read("irosva", file)
    assert read("irosva", file, variant="cu")[0].meta == {"variant": "cu"}
    with pytest.raises(ValueError, match="says 'es'"):
        read("irosva", CORPORA / "irosva" / "irosva.es.training.csv", variant="mx")


def test_irosva_bad_label_names_line(tmp_path):
    file = fixture_copy(tmp_path, "irosva") / "irosva.es.training.csv"
    replace_in(file, "c3d2,TIERRAPLANISTAS,0", "c3d2,TIERRAPLANISTAS,no")
    with pytest.raises(DataError, match=r"irosva\.es\.training\.csv:5: field 'IS_IRONIC'"):
        read("irosva", file)
    with pytest.warns(BadRecordWarning):
        assert len(read("irosva", file.parent, skip_bad=True)) == 5
    assert get_reader("irosva").last_report.count == 1


# --------------------------------------------------------------------------- multipico


def test_multipico_annotations_traits_soft_and_majority():
    train_late, snow, heat = read("multipico", CORPORA / "multipico")
    assert train_late.id == "MP_dev-10"
    assert train_late.context == "The train was late again this morning."
    assert train_late.text == "@USER Best service in the world!"
    assert train_late.labels["irony"] is True
    assert train_late.labels["irony_soft"] == pytest.approx({"0": 1 / 3, "1": 2 / 3})
    assert train_late.meta == {"lang": "en", "source": "twitter", "level": 1.0, "language_variety": "gb"}
    assert [(a.annotator, a.labels) for a in train_late.annotations] == [
        ("Ann1", {"irony": True}), ("Ann2", {"irony": True}), ("Ann3", {"irony": False})]
    assert train_late.annotations[0].traits == {
        "age": 31, "gender": "Female", "ethnicity_simplified": "White", "country_of_birth": "Ireland",
        "country_of_residence": "United Kingdom", "nationality": "Ireland", "student_status": "No",
        "employment_status": "Full-Time"}
    expired = train_late.annotations[1].traits
    assert expired["age"] is None and expired["ethnicity_simplified"] is None and expired["gender"] == "Male"

    assert snow.labels == {"irony": None, "irony_soft": {"0": 0.5, "1": 0.5}}  # a tie has no majority
    assert snow.annotations[0].annotator == "Ann4" and snow.annotations[0].traits == {}  # not in the metadata
    assert snow.meta["lang"] == "de"

    assert heat.labels == {"irony": False, "irony_soft": {"0": 0.75, "1": 0.25}}  # computed: no soft_label


def test_multipico_bad_annotation_names_record_and_field(tmp_path):
    file = fixture_copy(tmp_path, "multipico") / "MP_dev.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    data["11"]["annotations"]["Ann4"] = "2"
    file.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match=r"MP_dev\.json: record '11': field 'annotations'"):
        read("multipico", file)
    with pytest.warns(BadRecordWarning):
        assert [ex.id for ex in read("multipico", file.parent, skip_bad=True)] == ["MP_dev-10", "MP_dev-12"]
    assert get_reader("multipico").last_report.count == 1


def test_multipico_other_info_that_is_no_object_names_record_and_field(tmp_path):
    file = fixture_copy(tmp_path, "multipico") / "MP_dev.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    data["10"]["other_info"] = True  # found by tests/test_fuzz.py: an AttributeError before
    file.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match=r"MP_dev\.json: record '10': field 'other_info': expected an object"):
        read("multipico", file)


# --------------------------------------------------------------------------- the real corpora

def test_full_beep():
    examples = read("beep", shared_data("beep"))
    assert len(examples) == 7896
    assert all(ex.labels["contain_gender_bias"] == (ex.labels["bias"] == "gender") for ex in examples)
    assert sum(ex.context is None for ex in examples) == 3  # empty title lines
    assert sum('"' in (ex.context or "") for ex in examples) == 3634
    assert not any(ex.context and ex.context[0] == ex.context[-1] == '"' for ex in examples)
    assert len(read_unlabeled_texts(shared_data("beep"))) == 33893


def test_full_unsmile():
    examples = read("unsmile", shared_data("unsmile"))
    assert len(examples) == 15005
    assert all(set(ex.labels["groups"]) <= set(GROUP_COLUMNS) for ex in examples)
    assert sum('"' in ex.text for ex in examples) == 72  # quotes are text, not CSV quoting
    assert sum(not ex.labels["groups"] for ex in examples) == 2


def test_full_kocosa():
    examples = read("kocosa", shared_data("kocosa"), speaker_swap=0.5)
    assert len(examples) == 1321
    assert sum(ex.labels["sarcasm"] for ex in examples) == 801
    assert all(bool(ex.meta["explanation"]) == ex.labels["sarcasm"] for ex in examples)
    assert sum(ex.meta["speakers_swapped"] for ex in examples) == 660
    assert all(s in ("A", "B", None) for ex in examples for s in ex.meta["speakers"])


def test_full_irosva():
    examples = read("irosva", shared_data("irosva"))
    for variant in ("cu", "es", "mx"):
        rows = [ex for ex in examples if ex.meta["variant"] == variant]
        assert len(rows) == 2400
        assert sum(ex.labels["irony"] for ex in rows) == 800
    assert len({ex.id for ex in examples}) == len(examples)


def test_full_multipico():
    # a row is one post/reply pair; each holds 2-17 annotators' labels
    examples = read("multipico", shared_data("multipico"))
    assert len(examples) == 3005
    assert sum(len(ex.annotations) for ex in examples) == 15178
    assert {ex.meta["lang"] for ex in examples} == {"ar", "de", "en", "es", "fr", "hi", "it", "nl", "pt"}
    assert sum(ex.labels["irony"] is None for ex in examples) == 164
    for ex in examples:
        share = sum(a.labels["irony"] for a in ex.annotations) / len(ex.annotations)
        assert ex.labels["irony_soft"]["1"] == pytest.approx(share)
    assert all(a.traits for ex in examples for a in ex.annotations)


def test_full_toxic_spans():
    directory = shared_data("toxic_spans")
    assert len(read("toxic_spans", directory, split="trial")) == 690
    train = read("toxic_spans", directory)
    assert len(train) == 7939
    assert sum(ex.labels["toxic"] for ex in train) > 7000


@pytest.fixture(scope="module")
def raw_toxic_spans():
    directory = shared_data("toxic_spans")
    with pytest.warns(BadRecordWarning, match="skipped 94 bad record"):
        at_least_two = read("toxic_spans_raw", directory, skip_bad=True)
    assert get_reader("toxic_spans_raw").last_report.count == 94  # spans ending past their comment
    with pytest.warns(BadRecordWarning):
        half = read("toxic_spans_raw", directory, skip_bad=True, min_annotators="half")
    return read("toxic_spans", directory), at_least_two, half


def agreement(train, raw) -> float:
    """Share of tsd_train posts whose offsets equal the raw gold of a comment with the same text."""
    gold_by_text = defaultdict(list)
    for ex in raw:
        gold_by_text[ex.text].append(spans_to_offsets(ex.spans["OFF"]))
    assert all(ex.text in gold_by_text for ex in train)
    return sum(spans_to_offsets(ex.spans["OFF"]) in gold_by_text[ex.text] for ex in train) / len(train)


def test_full_toxic_spans_raw(raw_toxic_spans):
    train, at_least_two, half = raw_toxic_spans
    assert len(at_least_two) == 16100
    assert sum(len(ex.annotations) for ex in at_least_two) == 59215
    assert Counter(ex.labels["span_type"] for ex in at_least_two).most_common(2)[0][0] == "Insult"
    # measured: 46.5% of tsd_train posts equal the at-least-2 gold, 91.2% the at-least-half gold
    assert 0.44 <= agreement(train, at_least_two) <= 0.49
    assert agreement(train, half) >= 0.90
    assert agreement(read("toxic_spans", shared_data("toxic_spans"), split="trial"), half) >= 0.90  # 91.7%


def test_full_toxic_spans_raw_end_is_exclusive(raw_toxic_spans):
    # where every annotator marks the same single span, tsd_train's offsets are range(start, end)
    train, at_least_two, _ = raw_toxic_spans
    offsets_by_text = {ex.text: spans_to_offsets(ex.spans["OFF"]) for ex in train}
    exclusive = inclusive = 0
    for ex in at_least_two:
        marked = {tuple(a.spans["OFF"]) for a in ex.annotations}
        if ex.text not in offsets_by_text or len(marked) != 1 or len(next(iter(marked))) != 1:
            continue
        ((start, end),) = next(iter(marked))
        exclusive += offsets_by_text[ex.text] == set(range(start, end))
        inclusive += offsets_by_text[ex.text] == set(range(start, end + 1))
    assert exclusive >= 850 and inclusive == 0  # measured: 857 and 0


def test_convert_cli_skip_bad_skips_and_reports_a_bad_record(tmp_path, capsys):
    from kold_span.cli import main

    source = tmp_path / "tsd_train.csv"
    source.write_text('spans,text\n"[0, 1, 2]",abc def\n"[0, x]",broken\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["convert", "toxic_spans", str(source), str(out)]) == 2
    assert "tsd_train.csv" in (err := capsys.readouterr().err) and "convert --skip-bad" in err
    # The command prints a library warning in one line (cli.main.warnings_in_one_line).
    assert main(["convert", "toxic_spans", str(source), str(out), "--skip-bad"]) == 0
    assert "kold-span convert: warning:" in (err := capsys.readouterr().err) and "skipped 1" in err
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1
