"""`kold-span evaluate`: gold examples against a predictions file, every label and span type."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kold_span.data.example import Example, label_str, spans_to_offsets
from kold_span.data.jsonl import iter_json_lines, read_jsonl
from kold_span.errors import DataError
from kold_span.evaluation import metrics


@dataclass
class EvaluationReport:
    scores: dict[str, Any] = field(default_factory=dict)

    def table(self) -> str:
        from kold_span.evaluation.task_scores import format_table
        table = format_table({k: v for k, v in self.scores.items() if not isinstance(v, (dict, list))})
        missing = self.scores.get("span_types_not_predicted")
        return table + (f"\nnot scored: gold span type(s) {', '.join(missing)}, in no prediction" if missing else "")


def read_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """id → {labels: {name: value}, spans: {type: [(start, end)]}} from predict output or examples."""
    out: dict[str, dict[str, Any]] = {}
    for where, record in iter_json_lines(path):
        if not isinstance(record, dict) or "id" not in record:
            raise DataError(f"{where}: expected an object with an 'id' field")
        out[str(record["id"])] = prediction_fields(record, where)
    return out


def prediction_fields(record: dict[str, Any], where: str) -> dict[str, Any]:
    """{labels: {name: value}, spans: {type: [(start, end)]}} of one predict output row or canonical example.

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
    raw_spans = record.get("spans") or {}
    spans: dict[str, list[tuple[int, int]]] = {}
    if isinstance(raw_spans, list):  # `kold-span predict` output
        for s in raw_spans:
            try:
                spans.setdefault(s["type"], []).append((int(s["start"]), int(s["end"])))
            except (KeyError, TypeError, ValueError) as err:
                raise DataError(f"{where}: field 'spans': each span needs type, start, end") from err
    elif isinstance(raw_spans, dict):  # canonical examples: {type: [[start, end], ...]}
        for span_type, pairs in raw_spans.items():
            spans[span_type] = [_offset_pair(pair, where, span_type) for pair in _as_list(pairs, where, span_type)]
    else:
        raise DataError(f"{where}: field 'spans' must be a list of spans or an object of type → [[start, end]]")
    return {"labels": labels, "spans": spans}


def _as_list(pairs: Any, where: str, span_type: str) -> list[Any]:
    if not isinstance(pairs, list):
        raise DataError(f"{where}: field 'spans.{span_type}' must be a list of [start, end] pairs, got {pairs!r}")
    return pairs


def _offset_pair(pair: Any, where: str, span_type: str) -> tuple[int, int]:
    """One [start, end] pair of whole numbers, end-exclusive, start < end."""
    ok = (isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                            for v in pair) and 0 <= pair[0] < pair[1])
    if not ok:
        raise DataError(f"{where}: field 'spans.{span_type}' holds {pair!r}; each span is [start, end] "
                        "with 0 <= start < end (character offsets, end-exclusive)")
    return pair[0], pair[1]


def evaluate_files(gold_path: Path, pred_path: Path, policy: str = "semeval") -> EvaluationReport:
    """Score every span type and label found in the gold file."""
    gold = list(read_jsonl(gold_path))
    if not gold:
        raise DataError(f"{gold_path}: no gold examples to score against")
    preds = read_predictions(pred_path)
    missing = [ex.id for ex in gold if ex.id not in preds]
    if missing:
        raise DataError(f"{pred_path}: no prediction for {len(missing)} gold id(s): {', '.join(missing[:10])}")
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
        for key in ("precision", "recall", "f1"):
            scores[f"span/{span_type}/char_micro_{key}"] = micro[key]
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
    return scores
