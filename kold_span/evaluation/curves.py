"""A model's curves on gold data, per task: precision-recall, ROC (sequence tasks), thresholds table, calibration.

`curves_report` gives them as JSON-ready data (what `kold-span evaluate --model DIR --curves OUT`
writes as curves.json), `write_curves` writes it with a PNG per task when matplotlib (the
`plots` extra) is installed. A span task's curve is counted on characters, by the P(B) + P(I)
threshold its spans are decoded at (`operating_points.span_counts`); a sequence task's is cut on
each label's probability (a true/false task's "true"), texts whose gold lacks the label being
its benign texts. docs/THRESHOLDS.md says how to read them.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib.util
import io
import logging
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from kold_span.data.atomic import atomic_write, write_text_atomic
from kold_span.data.example import Example
from kold_span.data.jsonl import finite_or_null, json_text
from kold_span.errors import needs_extra
from kold_span import metrics
from kold_span.evaluation.operating_points import label_scores, span_counts, sequence_counts, threshold_table
from kold_span.evaluation.task_scores import confidence_hits
from kold_span.models.kinds import Decoding, MergedExample, apply_calibration, kind_of
from kold_span.models.tasks import Task

log = logging.getLogger(__name__)

CURVES_JSON = "curves.json"


def curves_report(decoding: Decoding, examples: Sequence[Example], merged: Sequence[MergedExample],
                  raw: Optional[Sequence[MergedExample]] = None) -> dict[str, Any]:
    """Per task (and label): its thresholds table, PR curve, ROC and AUC (sequence tasks), and ECE before and after
    its calibration ({bins, temperature, confidence_map_knots, before, after, floor_after}), from a model's
    calibrated outputs `merged` on `examples`; `raw` are the same outputs before calibration (`uncalibrated`),
    `merged` itself when not given.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> gold = [Example(str(i), "t", labels={"OFF": g}) for i, g in enumerate([True, False, True])]
        >>> merged = [MergedExample({"OFF": __import__("numpy").array([1 - p, p])}) for p in (0.9, 0.6, 0.3)]
        >>> report = curves_report(Decoding([off]), gold, merged)["OFF:true"]
        >>> report["roc_auc"], report["pr_curve"][:2], report["roc"][-1]
        (0.5, [[0.5, 1.0], [0.5, 0.5]], [1.0, 1.0])
    """
    report: dict[str, Any] = {}
    for task in decoding.tasks:
        if not task.kind.takes_decision(task.problem):
            continue
        ece = calibration_effect(task, examples, merged, merged if raw is None else raw)
        if kind_of(task).token_level:
            rows = threshold_table(span_counts(task, decoding, examples, merged))
            report[task.name] = {"unit": "characters", "thresholds": rows, "pr_curve": _pr(rows), "ece": ece}
            continue
        labels = ("true",) if task.is_boolean else task.labels
        for label in labels:
            scores, gold = label_scores(task, label, examples, merged)
            if not scores:
                continue
            rows = threshold_table(sequence_counts(scores, gold))
            report[f"{task.name}:{label}"] = {
                "unit": "texts", "thresholds": rows, "pr_curve": _pr(rows),
                "roc": [[0.0, 0.0]] + [[row["benign_flagged"] or 0.0, row["recall"]] for row in rows],
                "roc_auc": metrics.roc_auc(gold, scores), "ece": ece}
    return report


def _pr(rows: Sequence[dict[str, Any]]) -> list[list[float]]:
    """[recall, precision] of each row that flags something, highest threshold first."""
    return [[row["recall"], row["precision"]] for row in rows if row["precision"] is not None]


def uncalibrated(tasks: Sequence[Task]) -> list[Task]:
    """`tasks` without their temperatures and confidence maps: a predictor with them gives the outputs as trained.

    Example:
        >>> uncalibrated([Task("OFF", "sequence", "OFF", temperature=2.0, confidence_map=((0.5, 0.5), (1, 1)))])[0]
        Task(name='OFF', ...temperature=1.0, confidence_map=(), label_maps=(), decision=None)
    """
    return [dataclasses.replace(task, temperature=1.0, confidence_map=(), label_maps=()) for task in tasks]


def calibrated(tasks: Sequence[Task], raw: Sequence[MergedExample]) -> list[MergedExample]:
    """A copy of the outputs `raw` of uncalibrated `tasks`' model, calibrated as `tasks` say."""
    merged = copy.deepcopy(list(raw))
    apply_calibration(tasks, merged)
    return merged


def calibration_effect(task: Task, examples: Sequence[Example], merged: Sequence[MergedExample],
                       raw: Sequence[MergedExample]) -> dict[str, Any]:
    """ECE of a task as the model gives it (`merged`) and before its temperature and confidence map (`raw`), and
    the noise floor of the first (`metrics.calibration_error_floor`: what a perfectly calibrated model would get)."""
    before, after = confidence_hits(task, examples, raw), confidence_hits(task, examples, merged)
    return {"bins": metrics.ECE_BINS, "temperature": task.temperature,
            "confidence_map_knots": task.map_knots,
            "before": round(metrics.expected_calibration_error(*before), 6),
            "after": round(metrics.expected_calibration_error(*after), 6),
            "floor_after": metrics.calibration_error_floor(after[0]),
            "reliability_before": metrics.reliability_bins(*before),
            "reliability_after": metrics.reliability_bins(*after)}


def write_curves(report: dict[str, Any], out_dir: Union[str, Path]) -> list[Path]:
    """curves.json, and a PNG per task (PR curve, and ROC beside it for a sequence task) when matplotlib is there."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_text_atomic(out / CURVES_JSON, json_text(finite_or_null(report), indent=1))]
    if importlib.util.find_spec("matplotlib") is None:
        log.info("no PNG plots: matplotlib is not installed (pip install 'kold-span[plots]')")
        return paths
    for name, curves in report.items():
        image = io.BytesIO()
        plot_curves(name, curves, image)
        path = out / f"{name.replace(':', '_')}.png"
        with atomic_write(path, "wb") as f:
            f.write(image.getvalue())
        paths.append(path)
    return paths


def plot_curves(name: str, curves: dict[str, Any], target: Union[Path, io.BytesIO]) -> None:
    """The PR curve, the ROC of a sequence task and the reliability diagram (before and after calibration) of
    one task, as a PNG."""
    with needs_extra("plots"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

    panels = 3 if "roc" in curves else 2
    fig = Figure(figsize=(4 * panels, 3.6), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, panels, 1)
    pr = curves["pr_curve"]
    ax.plot([r for r, _ in pr], [p for _, p in pr], color="#c0504d", drawstyle="steps-post")
    ax.set_xlabel(f"recall ({curves['unit']})")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{name}: precision-recall", fontsize=9)
    if panels == 3:
        roc = fig.add_subplot(1, panels, 2)
        roc.plot([f for f, _ in curves["roc"]], [t for _, t in curves["roc"]], color="#4f81bd")
        roc.plot([0, 1], [0, 1], color="#999999", linewidth=0.8, linestyle="--")
        roc.set_xlabel("flagged share of benign texts (FPR)")
        roc.set_ylabel("recall (TPR)")
        auc = curves.get("roc_auc")
        roc.set_title(f"ROC, AUC {auc:.3f}" if auc is not None else "ROC", fontsize=9)
    ece = curves["ece"]
    diagram = fig.add_subplot(1, panels, panels)
    diagram.plot([0, 1], [0, 1], color="#999999", linewidth=0.8, linestyle="--")
    for key, colour, label in (("reliability_before", "#999999", "before"), ("reliability_after", "#c0504d", "after")):
        points = ece[key]
        diagram.plot([b["confidence"] for b in points], [b["hit_rate"] for b in points], marker="o", markersize=3,
                     color=colour, label=f"{label}: ECE {ece[label]:.3f}")
    diagram.set_xlabel(f"confidence ({ece['bins']} equal-mass bins)")
    diagram.set_ylabel("share right")
    diagram.legend(fontsize=7, loc="upper left")
    mapped = f" + map of {ece['confidence_map_knots']} knots" if ece.get("confidence_map_knots") else ""
    diagram.set_title(f"reliability, T = {ece['temperature']:g}{mapped}", fontsize=9)
    fig.tight_layout()
    fig.savefig(target, format="png")
