"""`kold-span evaluate`: gold examples against a predictions file, every label and span type."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kold_span.data.example import Example, label_str, spans_to_offsets
from kold_span.data.jsonl import iter_json_lines, read_jsonl
from kold_span.errors import DataError
from kold_span import metrics

log = logging.getLogger(__name__)


@dataclass
class EvaluationReport:
    scores: dict[str, Any] = field(default_factory=dict)

    def table(self) -> str:
        from kold_span.evaluation.task_scores import format_table
        table = format_table({k: v for k, v in self.scores.items() if not isinstance(v, (dict, list))})
        missing = self.scores.get("span_types_not_predicted")
        return table + (f"\nnot scored: gold span type(s) {', '.join(missing)}, in no prediction" if missing else "")


def read_predictions(path: Path, lenient: bool = False) -> dict[str, dict[str, Any]]:
    """id → {labels: {name: value}, spans: {type: [(start, end)]}, text, where} from predict output or examples.

    A span's offsets must be whole numbers with 0 <= start < end: anything else (a float, a string, a
    negative or reversed pair) is a `DataError` naming the line, or with `lenient` a warning and the
    span left out. An id seen twice is a warning; its last line counts.
    """
    out: dict[str, dict[str, Any]] = {}
    for where, record in iter_json_lines(path):
        if not isinstance(record, dict) or "id" not in record:
            raise DataError(f"{where}: expected an object with an 'id' field")
        key = str(record["id"])
        if key in out:
            log.warning("%s: id %r again (first at %s); the later prediction is scored", where, key[:40],
                        out[key]["where"])
        text = record.get("text")
        out[key] = {**prediction_fields(record, where, lenient), "text": text if isinstance(text, str) else None,
                    "where": where}
    return out


def prediction_fields(record: dict[str, Any], where: str, lenient: bool = False) -> dict[str, Any]:
    """{labels: {name: value}, spans: {type: [(start, end)]}} of one predict output row or canonical example.

    A bad span is a `DataError` naming `where`, or with `lenient` a warning and the span left out.

    Example:
        >>> row = {"id": "1", "labels": {"OFF": {"label": True, "score": 0.9}},
        ...        "spans": [{"type": "OFF", "start": 2, "end": 4, "text": "바보", "score": 0.8}]}
        >>> prediction_fields(row, "row 1")
        {'labels': {'OFF': True}, 'spans': {'OFF': [(2, 4)]}}
    """
    raw_labels = record.get("labels") or {}
    if not isinstance(raw_labels, dict):
        raise DataError(f"{where}: field 'labels' must be an object of label name → value")
    labels = {k: (v["label"] if isinstance(v, dict) and "label" in v else v) for k, v in raw_labels.items()}
    # predict output's probabilities, by label name, where a row has them (the label's ECE needs them)
    probs = {k: v["probs"] for k, v in raw_labels.items() if isinstance(v, dict) and isinstance(v.get("probs"), dict)}
    raw_spans = record.get("spans") or {}
    spans: dict[str, list[tuple[int, int]]] = {}
    if isinstance(raw_spans, list):  # `kold-span predict` output
        for s in raw_spans:
            if not (isinstance(s, dict) and all(key in s for key in ("type", "start", "end"))
                    and isinstance(s["type"], str)):
                raise DataError(f"{where}: field 'spans': each span needs type, start, end")
            pair = _checked_pair([s["start"], s["end"]], where, f"spans ({s['type']})", lenient)
            if pair is not None:
                spans.setdefault(s["type"], []).append(pair)
    elif isinstance(raw_spans, dict):  # canonical examples: {type: [[start, end], ...]}
        for span_type, pairs in raw_spans.items():
            if not isinstance(pairs, list):
                raise DataError(f"{where}: field 'spans.{span_type}' must be a list of [start, end] pairs, "
                                f"got {pairs!r}")
            checked = [_checked_pair(pair, where, f"spans.{span_type}", lenient) for pair in pairs]
            spans[span_type] = [pair for pair in checked if pair is not None]
    else:
        raise DataError(f"{where}: field 'spans' must be a list of spans or an object of type → [[start, end]]")
    return {"labels": labels, "spans": spans, **({"probs": probs} if probs else {})}


def _checked_pair(pair: Any, where: str, field_name: str, lenient: bool) -> Optional[tuple[int, int]]:
    """One [start, end] pair of whole numbers, end-exclusive, 0 <= start < end; a `DataError` (lenient: a warning
    and None) otherwise.

    Example:
        >>> _checked_pair([2, 5], "p.jsonl:1", "spans.OFF", False)
        (2, 5)
        >>> _checked_pair([2.5, 5], "p.jsonl:1", "spans.OFF", True) is None  # and a warning
        True
    """
    ok = (isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                            for v in pair) and 0 <= pair[0] < pair[1])
    if ok:
        return pair[0], pair[1]
    message = (f"{where}: field '{field_name}' holds {repr(pair)[:60]}; each span is [start, end] "
               "with 0 <= start < end (character offsets, end-exclusive)")
    if not lenient:
        raise DataError(message + "; --lenient leaves such spans out with a warning")
    log.warning("%s; left out (--lenient)", message)
    return None


def check_against_gold(gold: list[Example], preds: dict[str, dict[str, Any]], lenient: bool = False) -> None:
    """A `DataError` (lenient: a warning each) for a prediction of another text than its gold, a span past its end,
    or a prediction without a label that its gold and other predictions hold.

    Each means the predictions are of another input (or were edited), and scoring them would give a
    number that looks right and means nothing (a label left out of one prediction would be scored on
    fewer examples than the report counts).
    """
    predicted_labels = {name for pred in preds.values() for name in pred["labels"]}
    for ex in gold:
        pred = preds[ex.id]
        problems = [f"id {ex.id!r}: no label {name}, which the gold and other predictions hold"
                    for name, value in ex.labels.items()
                    if value is not None and not isinstance(value, dict) and name in predicted_labels
                    and name not in pred["labels"]]
        if pred.get("text") is not None and pred["text"] != ex.text:
            problems.append(f"id {ex.id!r}: its text {pred['text'][:30]!r} is not the gold text {ex.text[:30]!r}; "
                            "the predictions are of another input")
        for span_type, pairs in pred["spans"].items():
            for start, end in pairs:
                if end > len(ex.text):
                    problems.append(f"id {ex.id!r}: span {span_type} [{start}, {end}] ends past the text's end "
                                    f"({len(ex.text)} characters)")
        for problem in problems:
            if not lenient:
                raise DataError(f"{pred.get('where', ex.id)}: {problem}; --lenient scores such predictions "
                                "with a warning")
            log.warning("%s: %s (--lenient: scored as it is)", pred.get("where", ex.id), problem)


def evaluate_files(gold_path: Path, pred_path: Path, policy: str = "semeval",
                   lenient: bool = False) -> EvaluationReport:
    """Score every span type and label found in the gold file.

    Malformed span offsets, a span past its text's end and a predicted text that is not the gold
    text under the same id are `DataError`s naming the line (`lenient`: warnings, see
    `read_predictions` and `check_against_gold`).
    """
    gold = list(read_jsonl(gold_path))
    if not gold:
        raise DataError(f"{gold_path}: no gold examples to score against")
    preds = read_predictions(pred_path, lenient)
    missing = [ex.id for ex in gold if ex.id not in preds]
    if missing:
        raise DataError(f"{pred_path}: no prediction for {len(missing)} gold id(s): {', '.join(missing[:10])}")
    check_against_gold(gold, preds, lenient)
    return EvaluationReport(evaluate_examples(gold, preds, policy))


def evaluate_examples(gold: list[Example], preds: dict[str, dict[str, Any]], policy: str = "semeval") -> dict:
    """Flat scores `span/<type>/...` and `label/<name>/...` for the predicted ids.

    Example:
        >>> gold = [Example(id="1", text="너 바보냐", labels={"OFF": True}, spans={"OFF": [(2, 5)]}),
        ...         Example(id="2", text="좋은 기사", labels={"OFF": False})]
        >>> preds = {"1": {"labels": {"OFF": True}, "spans": {"OFF": [(2, 4)]}},
        ...          "2": {"labels": {"OFF": True}, "spans": {"OFF": []}}}
        >>> scores = evaluate_examples(gold, preds)  # char F1: 0.8 (2 of 3 characters), 1.0 (both empty)
        >>> scores["span/OFF/char_f1"], scores["label/OFF/accuracy"], scores["label/OFF/precision"]
        (0.9, 0.5, 0.5)
    """
    scores: dict[str, Any] = {"examples": len(gold)}
    predicted = {t for p in preds.values() for t in p["spans"]}
    # A gold span type no prediction holds is most likely one the model has no task for; scored, it
    # would only count the posts whose gold is empty too. Listed instead (canonical predictions state
    # an empty type as "type": []).
    unpredicted = sorted({t for ex in gold for t in ex.spans} - predicted)
    if unpredicted:
        scores["span_types_not_predicted"] = unpredicted
    for span_type in sorted(predicted):
        golds = [spans_to_offsets(ex.spans.get(span_type, [])) for ex in gold]
        guesses = [spans_to_offsets(preds[ex.id]["spans"].get(span_type, [])) for ex in gold]
        scores[f"span/{span_type}/char_f1"] = metrics.mean_char_f1(guesses, golds, policy=policy)
        micro = metrics.micro_char_prf(guesses, golds)
        scores.update({f"span/{span_type}/char_micro_{key}": value for key, value in micro.items()})
    names = sorted({k for ex in gold for k, v in ex.labels.items() if v is not None and not isinstance(v, dict)})
    for name in names:
        pairs = [(ex.labels[name], preds[ex.id]["labels"].get(name)) for ex in gold
                 if ex.labels.get(name) is not None and name in preds[ex.id]["labels"]]
        if not pairs:
            continue
        if isinstance(pairs[0][0], list):
            labels = sorted({label_str(v) for g, p in pairs for v in list(g) + list(p or [])})
            result = metrics.multilabel_scores([[label_str(v) for v in g] for g, _ in pairs],
                                               [[label_str(v) for v in (p or [])] for _, p in pairs], labels=labels)
            scores.update({f"label/{name}/{k}": v for k, v in result.items()})
            continue
        y_true = [label_str(g) for g, _ in pairs]
        y_pred = [label_str(p) for _, p in pairs]
        report = metrics.classification_report_dict(y_true, y_pred)
        for key in ("accuracy", "macro_f1", "weighted_f1", "balanced_accuracy"):
            scores[f"label/{name}/{key}"] = report[key]
        if set(y_true) <= {"true", "false"}:
            prf = metrics.binary_prf(y_true, y_pred, positive="true")
            for key in ("precision", "recall", "f1"):
                scores[f"label/{name}/{key}"] = prf[key]
        scores[f"label/{name}/per_class"] = report["per_class"]
        ece = label_calibration_error(gold, preds, name)
        if ece is not None:
            scores[f"label/{name}/ece_{metrics.ECE_BINS}_bins"] = ece
    return scores


def label_calibration_error(gold: list[Example], preds: dict[str, dict[str, Any]], name: str) -> Optional[float]:
    """ECE (`metrics.ECE_BINS` equal-mass bins) of a single-label task's top probability in predict's rows; None
    when no row holds probabilities.

    Example:
        >>> gold = [Example(id=str(i), text="t", labels={"OFF": v}) for i, v in enumerate([True, False])]
        >>> preds = {"0": {"labels": {"OFF": True}, "probs": {"OFF": {"false": 0.2, "true": 0.8}}},
        ...          "1": {"labels": {"OFF": True}, "probs": {"OFF": {"false": 0.4, "true": 0.6}}}}
        >>> round(label_calibration_error(gold, preds, "OFF"), 6)  # bins of one: |1 - 0.8| and |0 - 0.6|
        0.4
    """
    confidences, hits = [], []
    for ex in gold:
        probs = preds[ex.id].get("probs", {}).get(name)
        if not probs or ex.labels.get(name) is None:
            continue
        top = max(probs, key=lambda label: probs[label])
        confidences.append(float(probs[top]))
        hits.append(1.0 if top == label_str(ex.labels[name]) else 0.0)
    return metrics.expected_calibration_error(confidences, hits) if confidences else None
