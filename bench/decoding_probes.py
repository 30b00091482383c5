"""Decoding probes on finished bench/quality.py runs: other ways to turn the same outputs into predictions.

Nothing trains here; each probe loads a run's model folder, predicts its dev and test splits, and
prints one JSON line a run (docs/benchmarks/quality.md quotes them, "expected-F1 decoding", "one
decision threshold shared by the labels" and "Word snapping on Toxic Spans").

    python bench/decoding_probes.py expected-f1 checkpoints/quality/runs/quality-toxic_spans/toxic_spans-seed13
    python bench/decoding_probes.py shared-threshold \\
        checkpoints/quality/runs/quality-unsmile/unsmile-e5-lr1e-4-3ep-mean-seed13
    python bench/decoding_probes.py snap-modes checkpoints/quality/runs/quality-toxic_spans/toxic_spans-seed13

`expected-f1` (a span task): each post's inside set is the one that maximises its expected
char-F1 under the token probabilities, instead of one dev-tuned P(B) + P(I) threshold for all.
`shared-threshold` (UnSmile's fused model): one decision threshold for every label, chosen on the
fused dev probabilities, beside 0.5 and the per-label thresholds.
`snap-modes` (a span task): the spans decoded under each `align.snap` mode that needs no Kiwi
(none, eojeol, word), the P(B) + P(I) threshold re-tuned on dev under each, as a run trained
with that mode would calibrate it (snapping is decode-time only, so the trained weights and the
checkpoint chosen on the unsnapped dev char-F1 are the same); bench/kold_snapping.py runs it
with morpheme snapping too.

Every probe reads a run's splits as its training scored them: normalized by the model's steps
(`normalize:`), gold spans moved onto the normalized text.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from quality import CORPORA, fused_probs, with_label  # noqa: E402
from report import run_splits  # noqa: E402

from kold_span.config import Problem, TaskConfig  # noqa: E402
from kold_span.config.choices import TaskKind  # noqa: E402
from kold_span.data.example import label_str, spans_to_offsets  # noqa: E402
from kold_span import metrics  # noqa: E402
from kold_span.evaluation.baselines import label_scores  # noqa: E402
from kold_span.models.kinds.span import predicted_offsets, span_threshold  # noqa: E402
from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.models.kinds.span import gate_open  # noqa: E402
from kold_span.models.tasks import THRESHOLD_GRID  # noqa: E402
from kold_span.text.align import tags_to_spans  # noqa: E402
from kold_span.text.morphemes import prefetch  # noqa: E402
from kold_span.text.normalize import normalize_example  # noqa: E402
from kold_span.training import calibrate  # noqa: E402


def expected_f1_inside(inside: np.ndarray, lengths: np.ndarray, p_empty: float) -> np.ndarray:
    """Which tokens to mark: the top k by P(inside) for the k with the best expected char-F1.

    Expected F1 of the top k is taken as 2·Σ_top-k len·p / (Σ_top-k len + Σ_all len·p); no token
    is marked when `p_empty` (the probability that the post has no span, scored 1 when nothing is
    predicted) is at least the best of those.

    Example:
        >>> expected_f1_inside(np.array([0.9, 0.45, 0.45]), np.ones(3), 0.0).tolist()
        [True, True, True]
        >>> expected_f1_inside(np.array([0.05, 0.1]), np.ones(2), 0.855).tolist()
        [False, False]
        >>> expected_f1_inside(np.array([0.9, 0.3]), np.array([1.0, 10.0]), 0.0).tolist()  # lengths count
        [True, True]
    """
    order = np.argsort(-inside, kind="stable")
    weighted = lengths * inside
    f1 = 2 * np.cumsum(weighted[order]) / (np.cumsum(lengths[order]) + weighted.sum())
    k = int(np.argmax(f1)) + 1
    marked = np.zeros(len(inside), bool)
    if p_empty < f1[k - 1]:
        marked[order[:k]] = True
    return marked


def expected_f1_offsets(task, decoding, merged, text: str, empty: str) -> set[int]:
    """One post's predicted offsets by expected-F1 decoding (unsnapped); `empty`: "independent", "gate" or "never"."""
    probs = merged.token_probs[task.name]
    if not len(probs) or (task.gate and not gate_open(task, decoding.tasks, merged)):
        return set()
    inside = probs[:, 1] + probs[:, 2]
    lengths = np.array([end - start for start, end in merged.token_offsets], float)
    if empty == "independent":
        p_empty = float(np.prod(1 - inside))
    elif empty == "gate":
        gate = next(t for t in decoding.tasks if t.name == task.gate)
        p_empty = float(merged.sequence_probs[gate.name][gate.labels.index("false")])
    else:
        p_empty = -1.0
    marked = expected_f1_inside(inside, lengths, p_empty)
    tags = ["O" if not m else ("B" if b >= i else "I") for m, (_, b, i) in zip(marked, probs)]
    return spans_to_offsets(tags_to_spans(tags, merged.token_offsets, text, snap="none", trim=decoding.trim))


def load_run(run: Path):
    """A bench/quality.py run's config, its trained model and its train / dev / test splits as the model reads them.

    A model trained with `normalize:` was trained and scored on normalized text with the gold spans
    moved onto it; its outputs' token offsets are on that text, so the probes decode against it too.
    """
    config, splits = run_splits(run)
    predictor = Predictor.from_pretrained(run / "model")
    if predictor.settings.normalize is not None:
        splits = {name: [normalize_example(ex, predictor.settings.normalize) for ex in examples]
                  for name, examples in splits.items()}
    return config, predictor, splits


def expected_f1(run: Path) -> dict:
    _, predictor, splits = load_run(run)
    task = next(t for t in predictor.tasks if t.kind is TaskKind.SPAN)
    out = {"run": run.name, "threshold": list(task.thresholds)}
    raw = dataclasses.replace(predictor.decoding, snap="none")
    for split in ("dev", "test"):
        examples = splits[split]
        merged = predictor.merged_outputs([e.text for e in examples], [e.context for e in examples], 64)
        golds = [spans_to_offsets(e.spans.get(task.source, [])) for e in examples]
        out[f"{split}/tuned"] = metrics.mean_char_f1(
            predicted_offsets(task, raw, examples, merged), golds)
        for empty in ("independent", "gate", "never") if task.gate else ("independent", "never"):
            predicted = [expected_f1_offsets(task, raw, m, e.text, empty)
                         for e, m in zip(examples, merged)]
            out[f"{split}/expected_f1/{empty}"] = metrics.mean_char_f1(predicted, golds)
            out[f"{split}/expected_f1/{empty}/no_span"] = sum(not p for p in predicted)
        out[f"{split}/gold_no_span"] = sum(not g for g in golds)
    return out


def snap_modes(run: Path, snaps: tuple[str, ...] = ("none", "eojeol", "word")) -> dict:
    """Each snap mode's dev-tuned span threshold and its dev and test mean char-F1 (and the run's own snap, sizes)."""
    _, predictor, splits = load_run(run)
    task = next(t for t in predictor.tasks if t.kind is TaskKind.SPAN)
    parts = {}
    for split in ("dev", "test"):
        examples = splits[split]
        if "morpheme" in snaps:
            prefetch(e.text for e in examples)  # one batched Kiwi call instead of one per text
        merged = predictor.merged_outputs([e.text for e in examples], [e.context for e in examples], 64)
        parts[split] = examples, merged, [spans_to_offsets(e.spans.get(task.source, [])) for e in examples]
    out = {"run": run.name, "saved_threshold": list(task.thresholds), "saved_snap": predictor.settings.snap.value,
           "sizes": {split: len(part[0]) for split, part in parts.items()}}
    for snap in snaps:
        dev, dev_merged, _ = parts["dev"]
        decoding = dataclasses.replace(predictor.decoding, snap=snap)
        threshold = span_threshold(task, decoding, dev, dev_merged)
        tuned = dataclasses.replace(task, thresholds=(threshold,))
        out[snap] = {"threshold": threshold}
        for split, (examples, merged, golds) in parts.items():
            predicted = predicted_offsets(tuned, decoding, examples, merged)
            out[snap][split] = round(metrics.mean_char_f1(predicted, golds), 4)
    return out


def shared_threshold(run: Path) -> dict:
    """The fusion of bench/quality.py's hybrid_row, decoded at one threshold for every label."""
    config, predictor, splits = load_run(run)
    predictor.companions = {}  # calibrated from the encoder alone, as hybrid_row does
    spec, task = CORPORA["unsmile"], config.tasks[0].name

    def macro(examples, fused, thresholds):
        gold = [[label_str(v) for v in e.labels[spec.label]] for e in examples]
        predicted = [sorted(n for n, p in probs.items() if p >= thresholds[n]) for probs in fused]
        return label_scores(gold, predicted, Problem.MULTI)["macro_f1"]

    dev, test = (with_label(spec.label, splits[part]) for part in ("dev", "test"))
    fuse = TaskConfig(task, source=spec.label, problem=spec.problem, threshold="dev", fuse_ngram=True,
                      fuse_metric=spec.baseline_metric)
    calibration = calibrate([fuse], predictor, splits)
    _, dev_fused = fused_probs(predictor, calibration.dev_companions, task, dev)
    names = sorted(dev_fused[0])
    dev_by_t = {t: macro(dev, dev_fused, dict.fromkeys(names, t)) for t in THRESHOLD_GRID}
    shared = metrics.best_on_grid(THRESHOLD_GRID, dev_by_t.__getitem__)
    per_label = calibration.thresholds[task]
    _, fused = fused_probs(predictor, calibration.companions, task, test)
    return {"run": run.name, "weight": calibration.companions[task].weight, "shared": shared,
            "dev": {t: round(v, 4) for t, v in dev_by_t.items()},
            "test@0.5": macro(test, fused, dict.fromkeys(names, 0.5)),
            "test@shared": macro(test, fused, dict.fromkeys(names, shared)),
            "test@per-label": macro(test, fused, per_label)}


PROBES = {"expected-f1": expected_f1, "shared-threshold": shared_threshold, "snap-modes": snap_modes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("probe", choices=list(PROBES))
    parser.add_argument("runs", nargs="+", type=Path, help="run folders of bench/quality.py (with model/)")
    args = parser.parse_args()
    for run in args.runs:
        print(json.dumps(PROBES[args.probe](run)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
