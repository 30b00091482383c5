"""Request bodies → examples (each refusal naming its field), and Perspective's attributes as tasks."""
import json

import pytest

from kold_span.errors import ConfigError, RequestError
from kold_span.models.tasks import Task
from kold_span.service.attributes import (Attribute, analyze_response, check_analyze, default_attributes,
                                          load_attributes)
from kold_span.service.requests import Limits, analyze_request, parse_json, predict_request, upload_examples

LIMITS = Limits(max_bytes=10_000, max_comments=3, max_chars=20)
TASKS = [Task("OFF", "sequence", "OFF", labels=("false", "true")),
         Task("GRP", "sequence", "GRP", labels=("individual", "group")),
         Task("OFF_span", "span", "OFF", gate="OFF"),
         Task("TGT_span", "span", "TGT", gate="OFF")]


def refusal(call, *args):
    with pytest.raises(RequestError) as err:
        call(*args)
    return err.value.status, err.value.field, err.value.message


def test_comments_become_examples_with_positions_as_default_ids():
    request = predict_request({"comments": [{"text": "첫 댓글", "title": "제목"},
                                            {"text": "둘째", "context": ["A: 안녕", "B: 응"], "id": 42},
                                            {"text": "셋째", "id": "c3", "context": None}]}, LIMITS)
    assert [(e.id, e.text, e.context) for e in request.examples] == [
        ("1", "첫 댓글", "제목"), ("42", "둘째", ["A: 안녕", "B: 응"]), ("c3", "셋째", None)]
    assert request.perspective is None


@pytest.mark.parametrize("body, status, field, fragment", [
    ([], 422, "body", "expected object, got array"),
    ({}, 422, "comments", "required"),
    ({"comments": {}}, 422, "comments", "expected array, got object"),
    ({"comments": []}, 422, "comments", "empty"),
    ({"comments": [{"title": "제목"}]}, 422, "comments[0].text", "required"),
    ({"comments": [{"text": 3}]}, 422, "comments[0].text", "expected string, got number"),
    ({"comments": [{"text": "  "}]}, 422, "comments[0].text", "empty"),
    ({"comments": [{"text": "a", "txt": "b"}]}, 422, "comments[0].txt", "unknown field"),
    ({"comments": [{"text": "a", "title": "t", "context": "c"}]}, 422, "comments[0].title", "not both"),
    ({"comments": [{"text": "a", "title": ["t"]}]}, 422, "comments[0].title", "expected string, got array"),
    ({"comments": [{"text": "a", "context": [1]}]}, 422, "comments[0].context[0]", "expected string"),
    ({"comments": [{"text": "a", "id": True}]}, 422, "comments[0].id", "got boolean"),
    ({"comments": [{"text": "a", "id": 1.5}]}, 422, "comments[0].id", "whole number"),
    ({"comments": [{"text": "a"}], "perspective": {"age": [1]}}, 422, "perspective.age", "got array"),
    ({"comments": [{"text": "a"}] * 4}, 413, "comments", "4 comments, over the limit of 3 (--max-comments)"),
    ({"comments": [{"text": "가" * 21}]}, 413, "comments[0].text", "21 characters, over the limit of 20"),
    ({"comments": [{"text": "a", "context": ["가" * 11, "나" * 10]}]}, 413, "comments[0].context",
     "21 characters in all"),
    ({"comments": [{"text": "a\ud800b"}]}, 422, "comments[0].text", "character 1 is a lone surrogate"),
])
def test_a_bad_predict_body_names_its_field(body, status, field, fragment):
    got_status, got_field, message = refusal(predict_request, body, LIMITS)
    assert (got_status, got_field) == (status, field)
    assert fragment in message and message.startswith(field)


@pytest.mark.parametrize("raw, fragment", [
    (b"", "body: empty"),
    (b'{"comments": [', "invalid JSON (Expecting value at line 1 column 15)"),
    (b'{"a": NaN}', "NaN is not a JSON number"),
    (b"\xff\xfe\x00", "body: "),
    (b"[" * 100_000 + b"]" * 100_000, "body: "),
])
def test_bodies_that_are_not_json_are_422(raw, fragment):
    status, field, message = refusal(parse_json, raw)
    assert (status, field) == (422, "body") and fragment in message


def test_perspective_request_reads_context_entries_and_attributes():
    body = {"comment": {"text": "바보", "type": "PLAIN_TEXT"}, "context": {"entries": [{"text": "A"}, {"text": "B"}]},
            "requestedAttributes": {"TOXICITY": {}, "OFF": {"scoreThreshold": 0.7, "scoreType": "PROBABILITY"}},
            "spanAnnotations": True, "languages": ["ko"], "doNotStore": True, "clientToken": "x", "sessionId": "s"}
    request = analyze_request(body, LIMITS)
    assert (request.example.text, request.example.context) == ("바보", ["A", "B"])  # two entries: a dialogue
    assert request.thresholds == {"TOXICITY": None, "OFF": 0.7}
    assert (request.span_annotations, request.languages, request.client_token) == (True, ["ko"], "x")


@pytest.mark.parametrize("body, status, field", [
    ({"requestedAttributes": {"OFF": {}}}, 422, "comment"),
    ({"comment": {"text": "a"}}, 422, "requestedAttributes"),
    ({"comment": {"text": "a"}, "requestedAttributes": {}}, 400, "requestedAttributes"),
    ({"comment": {"text": "a", "type": "HTML"}, "requestedAttributes": {"OFF": {}}}, 400, "comment.type"),
    ({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {"scoreThreshold": 2}}}, 400,
     "requestedAttributes.OFF.scoreThreshold"),
    ({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {"scoreType": "STD"}}}, 400,
     "requestedAttributes.OFF.scoreType"),
    ({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {"threshold": 0.5}}}, 422,
     "requestedAttributes.OFF.threshold"),
    ({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "context": {"entries": [{}]}}, 422,
     "context.entries[0].text"),
    ({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "languages": "ko"}, 422, "languages"),
    ({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "spanAnnotations": "yes"}, 422,
     "spanAnnotations"),
    ({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "extra": 1}, 422, "extra"),
])
def test_a_bad_analyze_body_names_its_field(body, status, field):
    assert refusal(analyze_request, body, LIMITS)[:2] == (status, field)


def test_default_attributes_follow_the_task_names():
    mapping = default_attributes(TASKS)
    assert {name: a.describe() for name, a in mapping.attributes.items()} == {
        "OFF": {"task": "OFF", "label": "true", "spans": "OFF_span"},
        "GRP_INDIVIDUAL": {"task": "GRP", "label": "individual"},
        "GRP_GROUP": {"task": "GRP", "label": "group"},
        "TGT_SPAN": {"spans": "TGT_span"},
        "TOXICITY": {"task": "OFF", "label": "true", "spans": "OFF_span"},
    }
    assert mapping.languages == ["ko"]
    sarcasm = default_attributes([Task("SARC", "sequence", "sarcasm", labels=("false", "true"))])
    assert list(sarcasm.attributes) == ["SARC"]  # TOXICITY only stands for an OFF task


def test_an_attribute_file_replaces_the_default_and_is_checked(tmp_path):
    path = tmp_path / "attributes.yaml"
    path.write_text("languages: [ko, en]\nattributes:\n  INSULT: {task: OFF, label: true, spans: OFF_span}\n"
                    "  GROUP_TARGET: {task: GRP, label: group}\n  TARGET: {spans: TGT_span}\n", encoding="utf-8")
    mapping = load_attributes(path, TASKS)
    assert mapping.languages == ["ko", "en"]
    assert mapping.attributes["INSULT"] == Attribute("INSULT", "OFF", "true", "OFF_span", "OFF")
    assert mapping.attributes["TARGET"] == Attribute("TARGET", spans="TGT_span", span_type="TGT")


@pytest.mark.parametrize("text, fragment", [
    ("attributes: {A: {task: NOPE}}", "'attributes.A.task' is 'NOPE'; the model's sequence tasks are OFF, GRP"),
    ("attributes: {A: {task: OFF_span}}", "'attributes.A.task' is 'OFF_span'"),
    ("attributes: {A: {task: GRP}}", "'attributes.A.label' is None; task GRP has labels individual, group"),
    ("attributes: {A: {task: GRP, label: both}}", "'attributes.A.label' is 'both'"),
    ("attributes: {A: {spans: OFF}}", "'attributes.A.spans' is 'OFF'; the model's span tasks are OFF_span, TGT_span"),
    ("attributes: {A: {}}", "'attributes.A' needs a task"),
    ("attributes: {A: {task: OFF, colour: red}}", "unknown key 'attributes.A.colour'"),
    ("attributes: {}", "'attributes' must be a mapping"),
    ("attribute: {A: {task: OFF}}", "unknown key 'attribute'"),
    ("languages: ko\nattributes: {A: {task: OFF}}", "'languages' must be a list"),
])
def test_a_bad_attribute_file_names_the_file_and_key(tmp_path, text, fragment):
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_attributes(path, TASKS)
    assert str(err.value).startswith(str(path)) and fragment in str(err.value)


@pytest.mark.parametrize("data, fragment", [
    (b"attributes: {A: {task: OFF}\n", ":2: invalid YAML: expected ',' or '}'"),
    (b"attributes: {A: {task: \xff}}\n", ":1: not UTF-8 text"),
])
def test_an_attribute_file_that_is_no_yaml_names_the_file_and_line(tmp_path, data, fragment):
    path = tmp_path / "a.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load_attributes(path, TASKS)
    assert str(err.value).startswith(f"{path}{fragment}") and "\n" not in str(err.value)


RECORD = {"id": "1", "text": "저 바보 같은 놈",
          "labels": {"OFF": {"label": True, "probs": {"false": 0.2, "true": 0.8}},
                     "GRP": {"label": "individual", "probs": {"individual": 0.9, "group": 0.1}}},
          "spans": [{"type": "OFF", "start": 2, "end": 4, "text": "바보", "score": 0.7},
                    {"type": "TGT", "start": 0, "end": 1, "text": "저", "score": 0.6}]}


def test_analyze_response_scores_thresholds_and_spans():
    mapping = default_attributes(TASKS)
    body = {"comment": {"text": RECORD["text"]}, "spanAnnotations": True, "clientToken": "abc",
            "requestedAttributes": {"TOXICITY": {"scoreThreshold": 0.5}, "GRP_GROUP": {"scoreThreshold": 0.5},
                                    "GRP_INDIVIDUAL": {}, "TGT_SPAN": {}}}
    request = analyze_request(body, LIMITS)
    check_analyze(request, mapping)
    response = analyze_response(request, RECORD, mapping)
    assert response == {
        "attributeScores": {
            "TOXICITY": {"summaryScore": {"value": 0.8, "type": "PROBABILITY"},
                         "spanScores": [{"begin": 2, "end": 4, "score": {"value": 0.7, "type": "PROBABILITY"}}]},
            # GRP_GROUP (0.1) is under its threshold: left out, as Perspective leaves it out
            "GRP_INDIVIDUAL": {"summaryScore": {"value": 0.9, "type": "PROBABILITY"}},
            "TGT_SPAN": {"summaryScore": {"value": 0.6, "type": "PROBABILITY"},
                         "spanScores": [{"begin": 0, "end": 1, "score": {"value": 0.6, "type": "PROBABILITY"}}]},
        },
        "languages": ["ko"], "detectedLanguages": ["ko"], "clientToken": "abc"}  # no languages sent: detected
    assert RECORD["text"][2:4] == "바보"
    quiet = analyze_response(analyze_request({**body, "spanAnnotations": False}, LIMITS), RECORD, mapping)
    assert all("spanScores" not in a for a in quiet["attributeScores"].values())


def test_an_unknown_attribute_or_language_is_a_400_naming_what_the_model_has():
    mapping = default_attributes(TASKS)
    request = analyze_request({"comment": {"text": "a"}, "requestedAttributes": {"INSULT": {}}}, LIMITS)
    status, field, message = refusal(check_analyze, request, mapping)
    assert (status, field) == (400, "requestedAttributes.INSULT")
    assert "no attribute INSULT; it has OFF, GRP_INDIVIDUAL, GRP_GROUP, TGT_SPAN, TOXICITY" in message
    request = analyze_request({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "languages": ["en"]},
                              LIMITS)
    assert refusal(check_analyze, request, mapping)[:2] == (400, "languages")
    check_analyze(analyze_request({"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}},
                                   "languages": ["ko-KR"]}, LIMITS), mapping)


def test_an_upload_is_read_as_predict_reads_it_and_its_errors_name_the_upload(tmp_path):
    data = "guid,title,comment\ng1,제목,첫 댓글\ng2,제목,둘째 댓글\n".encode("utf-8")
    examples = upload_examples("c.csv", data, LIMITS)
    assert [(e.id, e.text, e.context) for e in examples] == [("g1", "첫 댓글", "제목"), ("g2", "둘째 댓글", "제목")]
    lines = [json.dumps({"text": t}) for t in ("a", "b", "c", "d")]
    assert refusal(upload_examples, "x.jsonl", "\n".join(lines).encode(), LIMITS)[:2] == (413, "file")
    status, field, message = refusal(upload_examples, "../../etc/bad.csv", b"comment,title\nok\n", LIMITS)
    assert (status, field, message) == (422, "file", "bad.csv:2: 1 fields, the header has 2 (comment, title)")
    assert refusal(upload_examples, "x.xml", b"<a/>", LIMITS)[:2] == (415, "filename")
    assert refusal(upload_examples, "", b"a\n", LIMITS)[:2] == (422, "filename")
    assert refusal(upload_examples, "x.txt", b"\n\n", LIMITS)[2] == "x.txt: no comments"


def test_a_comment_in_another_script_is_language_not_supported_by_attribute():
    mapping = default_attributes(TASKS)
    english = analyze_request({"comment": {"text": "you are an idiot"}, "requestedAttributes": {"OFF": {}}}, LIMITS)
    with pytest.raises(RequestError) as err:
        check_analyze(english, mapping)
    assert (err.value.status, err.value.field) == (400, "languages")
    assert err.value.message == "Attribute OFF does not support request languages: und-Latn"
    assert err.value.details == [{"errorType": "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE",
                                  "languageNotSupportedByAttributeError": {"detectedLanguages": ["und-Latn"],
                                                                           "attribute": "OFF"}}]
    korean = analyze_request({"comment": {"text": "MC 진짜 별로"}, "requestedAttributes": {"OFF": {}}}, LIMITS)
    assert check_analyze(korean, mapping) == ["ko"]  # Latin letters among Hangul are still Korean
    emoji = analyze_request({"comment": {"text": "👍 !!"}, "requestedAttributes": {"OFF": {}}}, LIMITS)
    assert check_analyze(emoji, mapping) == ["ko"]  # no letters: nothing to refuse on
    stated = analyze_request({"comment": {"text": "바보"}, "requestedAttributes": {"OFF": {}}, "languages": ["en"]},
                             LIMITS)
    assert "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE" in str(refusal_details(check_analyze, stated, mapping))


def refusal_details(call, *args):
    with pytest.raises(RequestError) as err:
        call(*args)
    return err.value.details


@pytest.mark.parametrize("languages", ["ko", 0, False, "", {"ko": 1}, [1], ["ko; drop"], ["x" * 40], ["ko"] * 17])
def test_languages_of_a_wrong_type_or_shape_are_refused(languages):
    body = {"comment": {"text": "바보"}, "requestedAttributes": {"OFF": {}}, "languages": languages}
    status, field, _ = refusal(analyze_request, body, LIMITS)
    assert status in (400, 422) and field.startswith("languages")


def test_every_client_controlled_dimension_has_a_limit():
    limits = Limits(max_chars=50, max_request_chars=60, max_context_turns=2, max_id_chars=5)
    turns = refusal(predict_request, {"comments": [{"text": "a", "context": ["", "", ""]}]}, limits)
    assert turns == (413, "comments[0].context", "comments[0].context: 3 turns, over the limit of 2 "
                                                 "(--max-context-turns)")
    ident = refusal(predict_request, {"comments": [{"text": "a", "id": "x" * 6}]}, limits)
    assert ident[:2] == (413, "comments[0].id") and "(--max-id-chars)" in ident[2]
    assert refusal(predict_request, {"comments": [{"text": "a", "id": 123456}]}, limits)[0] == 413
    total = refusal(predict_request, {"comments": [{"text": "a" * 30, "title": "b" * 20}, {"text": "c" * 20}]}, limits)
    assert total == (413, "comments", "comments: 70 characters with their contexts, over the limit of 60 per "
                                      "request (--max-request-chars)")
    entries = {"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}},
               "context": {"entries": [{"text": ""}] * 3}}
    assert refusal(analyze_request, entries, limits)[:2] == (413, "context.entries")
    token = {"comment": {"text": "a"}, "requestedAttributes": {"OFF": {}}, "clientToken": "t" * 6}
    assert refusal(analyze_request, token, limits)[:2] == (413, "clientToken")
    long_ids = "\n".join(json.dumps({"id": "i" * 6, "text": "a"}) for _ in range(1)).encode()
    assert refusal(upload_examples, "x.jsonl", long_ids, limits)[0] == 413


@pytest.mark.parametrize("name", ["a\x00b.csv", "x" * 300 + ".csv", "a\nb.txt", "\x7f.txt"])
def test_an_upload_name_with_control_characters_or_too_long_is_a_422(name):
    assert refusal(upload_examples, name, b"comment\nok\n", LIMITS)[:2] == (422, "filename")
