"""`kold-span evaluate`'s reading of predictions, and which span types it scores."""
import json

import pytest

from kold_span.data.example import Example
from kold_span.errors import DataError
from kold_span.evaluation.prediction_files import evaluate_examples, read_predictions


def write(path, *records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("spans, fragment", [
    ({"OFF": [[1]]}, r"p.jsonl:1: field 'spans.OFF' holds \[1\]; each span is \[start, end\]"),
    ({"OFF": [1, 3]}, r"p.jsonl:1: field 'spans.OFF' holds 1;"),
    ({"OFF": [[3, 1]]}, r"holds \[3, 1\]; each span is \[start, end\] with 0 <= start < end"),
    ({"OFF": "0-3"}, r"field 'spans.OFF' must be a list of \[start, end\] pairs"),
    ("OFF", r"field 'spans' must be a list of spans or an object"),
])
def test_malformed_canonical_spans_name_the_line_and_field(tmp_path, spans, fragment):
    path = write(tmp_path / "p.jsonl", {"id": "1", "text": "abcd", "spans": spans})
    with pytest.raises(DataError, match=fragment):
        read_predictions(path)


def test_labels_must_be_an_object(tmp_path):
    path = write(tmp_path / "p.jsonl", {"id": "1", "text": "abcd", "labels": ["OFF"]})
    with pytest.raises(DataError, match=r"p.jsonl:1: field 'labels' must be an object"):
        read_predictions(path)


def test_a_gold_span_type_no_prediction_holds_is_listed_not_scored(tmp_path):
    gold = [Example("1", "바보 같은 놈", spans={"OFF": [(0, 2)], "TGT": [(6, 7)]}),
            Example("2", "좋은 기사", spans={})]
    preds = read_predictions(write(tmp_path / "p.jsonl",
                                   {"id": "1", "spans": [{"type": "OFF", "start": 0, "end": 2}]},
                                   {"id": "2", "spans": []}))
    scores = evaluate_examples(gold, preds)
    assert scores["span/OFF/char_f1"] == 1.0  # post 1 exact, post 2 empty against empty
    assert scores["span_types_not_predicted"] == ["TGT"] and not any(k.startswith("span/TGT") for k in scores)
    # A canonical file states an empty type outright: then it is scored (0 on post 1, 1 on post 2).
    stated = read_predictions(write(tmp_path / "c.jsonl", {"id": "1", "spans": {"OFF": [[0, 2]], "TGT": []}},
                                    {"id": "2", "spans": {}}))
    assert evaluate_examples(gold, stated)["span/TGT/char_f1"] == 0.5


# -- predictions that cannot be of the gold file (issue 44) ----------------------------------------------------------

def _evaluate(tmp_path, pred_record, lenient=False):
    from kold_span.evaluation.prediction_files import evaluate_files

    gold = write(tmp_path / "gold.jsonl", {"id": "1", "text": "너 바보냐", "labels": {"OFF": True},
                                           "spans": {"OFF": [[2, 4]]}})
    pred = write(tmp_path / "pred.jsonl", pred_record)
    return evaluate_files(gold, pred, lenient=lenient)


def _span(start, end):
    return {"id": "1", "text": "너 바보냐", "spans": [{"type": "OFF", "start": start, "end": end}]}


@pytest.mark.parametrize("record, fragment", [
    (_span(2, 9), r"pred.jsonl:1: id '1': span OFF \[2, 9\] ends past the text's end \(5 characters\)"),
    (_span(-1, 3), r"pred.jsonl:1: field 'spans \(OFF\)' holds \[-1, 3\]; each span is \[start, end\] with 0 <="),
    (_span(4, 2), r"field 'spans \(OFF\)' holds \[4, 2\]"),
    (_span(2.0, 4), r"field 'spans \(OFF\)' holds \[2.0, 4\]"),
    (_span("2", 4), r"field 'spans \(OFF\)' holds \['2', 4\]"),
    ({"id": "1", "text": "좋은 기사", "spans": []},
     r"pred.jsonl:1: id '1': its text '좋은 기사' is not the gold text '너 바보냐'; the predictions are of another input"),
    ({"id": "1", "spans": {"OFF": [[0, 6]]}}, r"span OFF \[0, 6\] ends past the text's end"),
])
def test_predictions_that_cannot_be_of_the_gold_are_refused_and_lenient_warns(tmp_path, caplog, record, fragment):
    with pytest.raises(DataError, match=fragment):
        _evaluate(tmp_path, record)
    with caplog.at_level("WARNING", logger="kold_span"):
        report = _evaluate(tmp_path, record, lenient=True)
    assert report.scores["examples"] == 1
    assert "--lenient" in caplog.text


def test_an_id_predicted_twice_is_a_warning_and_the_last_line_counts(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="kold_span"):
        preds = read_predictions(write(tmp_path / "p.jsonl", {"id": "1", "spans": []},
                                       {"id": "1", "spans": [{"type": "OFF", "start": 0, "end": 2}]}))
    assert preds["1"]["spans"] == {"OFF": [(0, 2)]}
    assert "p.jsonl:2: id '1' again (first at" in caplog.text


def test_a_prediction_without_a_label_other_predictions_hold_is_refused_and_lenient_warns(tmp_path, caplog):
    from kold_span.evaluation.prediction_files import evaluate_files

    gold = write(tmp_path / "gold.jsonl", {"id": "1", "text": "너 바보냐", "labels": {"OFF": True}},
                 {"id": "2", "text": "좋은 기사", "labels": {"OFF": False}})
    pred = write(tmp_path / "pred.jsonl", {"id": "1", "labels": {"OFF": {"label": True}}, "spans": []},
                 {"id": "2", "labels": {}, "spans": []})
    with pytest.raises(DataError, match=r"pred.jsonl:2: id '2': no label OFF, which the gold and other "
                                        r"predictions hold"):
        evaluate_files(gold, pred)
    with caplog.at_level("WARNING", logger="kold_span"):
        report = evaluate_files(gold, pred, lenient=True)
    assert report.scores["label/OFF/accuracy"] == 1.0 and "pred.jsonl:2: id '2': no label OFF" in caplog.text


def test_gold_ids_of_any_json_value_meet_the_ids_predict_writes(tmp_path):
    # predict makes `true` the id "true" and {"a": 1} the id '{"a": 1}' (`id_text`); the gold reader the same
    from conftest import untrained_model

    from kold_span.cli import main

    model = untrained_model(tmp_path / "model")
    gold = write(tmp_path / "gold.jsonl", {"id": True, "text": "좋은 기사", "labels": {"OFF": False}},
                 {"id": {"a": 1}, "text": "바보 같은", "labels": {"OFF": True}},
                 {"id": 7, "text": "재밌다", "labels": {"OFF": False}})
    assert [e.id for e in (Example.from_dict(json.loads(line)) for line in gold.read_text().splitlines())] == [
        "true", '{"a": 1}', "7"]
    preds = tmp_path / "preds.jsonl"
    assert main(["predict", "--model", str(model), "--input", str(gold), "--output", str(preds), "--quiet"]) == 0
    assert main(["evaluate", "--gold", str(gold), "--pred", str(preds), "--out", str(tmp_path / "report.json")]) == 0
    assert json.loads((tmp_path / "report.json").read_text())["examples"] == 3
