"""Operating points: a task's precision, recall and flagged shares at every threshold, and the one a target picks.

A sequence task is cut on one label's probability (a text is flagged when P(label) reaches the
threshold); a span task on P(B) + P(I), its precision and recall counted on characters as the
span F1 counts them (micro: every text's characters together), a text flagged when it gets a span.
`threshold_table` lists the points, `choose` picks the one a target asks for (`precision=0.95`,
`recall=0.9`, `flagged=0.05`, `f1`), `bootstrap_interval` says how far its precision and recall
may move on other data like this, and `decision_band` puts them together as a model directory
saves them (docs/THRESHOLDS.md).

Example:
    >>> counts = sequence_counts([0.9, 0.8, 0.4, 0.2], [True, False, True, False])
    >>> [(row["threshold"], row["precision"], row["recall"]) for row in threshold_table(counts)]
    [(0.9, 1.0, 0.5), (0.8, 0.5, 0.5), (0.4, 0.666667, 1.0), (0.2, 0.5, 1.0)]
    >>> choose(threshold_table(counts), "recall", 1.0)["threshold"]  # the highest threshold that finds both
    0.4
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from kold_span.data.example import Example, spans_to_offsets
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, UnreachableTargetError
from kold_span.models.kinds import Decoding, MergedExample, kind_of
from kold_span.models.kinds.span import task_spans
from kold_span.models.tasks import Task

TARGETS = ("precision", "recall", "flagged", "f1")
# Which band a target sets: precision or F1 make the strict `remove` cut, recall or a reviewer's share `review`.
BAND_OF = {"precision": "remove", "f1": "remove", "recall": "review", "flagged": "review"}
BOOTSTRAP_DRAWS_HELD = 2 ** 22  # draws (resamples × texts) the bootstrap holds at once: 32 MB of float64
SPAN_GRID = tuple(round(0.025 * i, 3) for i in range(1, 40))  # 0.025 … 0.975: spans are decoded once per threshold
BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 0
BOOTSTRAP_LEVEL = 0.95
DIGITS = 6


@dataclass(frozen=True)
class Counts:
    """Per threshold (rows) and text (columns): true positives, flagged units, and per text its gold positives.

    Units are texts for a sequence task and characters for a span task; `texts_flagged` says whether
    each text is flagged at all, `benign` which texts have no gold positive.
    """

    thresholds: np.ndarray  # [t], descending
    tp: np.ndarray  # [t, n]
    flagged: np.ndarray  # [t, n]
    positives: np.ndarray  # [n]
    texts_flagged: np.ndarray  # [t, n] of bool
    benign: np.ndarray  # [n] of bool


def sequence_counts(scores: Sequence[float], gold: Sequence[bool], grid: Optional[Sequence[float]] = None) -> Counts:
    """`Counts` of a text-level decision at every distinct score, or at each threshold of `grid` (a text is flagged
    when its score reaches it)."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(gold, dtype=bool)
    if len(s) != len(y):
        raise ArgumentError(f"scores and gold differ in length: {len(s)} != {len(y)}")
    thresholds = (np.unique(np.round(s, DIGITS))[::-1] if grid is None
                  else np.asarray(sorted(grid, reverse=True), dtype=np.float64))
    flagged = np.round(s, DIGITS)[None, :] >= thresholds[:, None]
    return Counts(thresholds, (flagged & y).astype(float), flagged.astype(float), y.astype(float), flagged, ~y)


def label_scores(task: Task, label: str, examples: Sequence[Example],
                 merged: Sequence[MergedExample]) -> tuple[list[float], list[bool]]:
    """The probability of `label` of a sequence task and whether the gold has it, for each example with a gold."""
    if label not in task.labels:
        raise ArgumentError(f"task {task.name!r} has no label {label!r}; its labels: {', '.join(task.labels)}")
    column, kind = task.labels.index(label), kind_of(task)
    # the kind reads each gold as training and scoring do: none is left out, a label the task lacks refused
    pairs = [(float(probs[0, column]), bool(gold[0, column]))
             for probs, gold in (kind.outcomes(task, ex, m) for ex, m in zip(examples, merged)) if len(probs)]
    return [s for s, _ in pairs], [g for _, g in pairs]


def span_counts(task: Task, decoding: Decoding, examples: Sequence[Example], merged: Sequence[MergedExample],
                grid: Sequence[float] = SPAN_GRID) -> Counts:
    """`Counts` of a span task's characters at each P(B) + P(I) threshold of `grid`, decoded as `decoding` says."""
    golds = [spans_to_offsets(ex.spans.get(task.source, [])) for ex in examples]
    thresholds = np.asarray(sorted(grid, reverse=True), dtype=np.float64)
    tp, flagged, texts = [], [], []
    for t in thresholds:
        trial = dataclasses.replace(task, thresholds=(float(t),))
        guesses = [spans_to_offsets((s["start"], s["end"]) for s in task_spans(trial, m, ex.text, decoding))
                   for ex, m in zip(examples, merged)]
        tp.append([len(g & gold) for g, gold in zip(guesses, golds)])
        flagged.append([len(g) for g in guesses])
        texts.append([bool(g) for g in guesses])
    positives = np.asarray([len(g) for g in golds], dtype=float)
    return Counts(thresholds, np.asarray(tp, dtype=float).reshape(len(thresholds), -1),
                  np.asarray(flagged, dtype=float).reshape(len(thresholds), -1), positives,
                  np.asarray(texts, dtype=bool).reshape(len(thresholds), -1), positives == 0)


def threshold_table(counts: Counts) -> list[dict[str, Any]]:
    """One row per threshold, highest first: precision, recall, F1, share of texts flagged, share of benign texts
    flagged (null without benign texts), and the ROC's false positive rate (texts: the benign share).

    Precision is null where nothing is flagged.
    """
    rows = []
    positives = counts.positives.sum()
    benign = counts.benign
    for i, t in enumerate(counts.thresholds):
        tp, flagged = counts.tp[i].sum(), counts.flagged[i].sum()
        precision = tp / flagged if flagged else None
        recall = tp / positives if positives else 0.0
        f1 = 2 * tp / (flagged + positives) if flagged + positives else 0.0
        texts = counts.texts_flagged[i]
        rows.append({"threshold": round(float(t), DIGITS),
                     "precision": None if precision is None else round(float(precision), DIGITS),
                     "recall": round(float(recall), DIGITS), "f1": round(float(f1), DIGITS),
                     "flagged": round(float(texts.mean()), DIGITS) if len(texts) else 0.0,
                     "benign_flagged": round(float(texts[benign].mean()), DIGITS) if benign.any() else None})
    return rows


def choose(rows: Sequence[dict[str, Any]], target: str, value: Optional[float] = None) -> dict[str, Any]:
    """The row of `threshold_table` a target picks; an `UnreachableTargetError` naming the best value reached.

    - precision=v: the highest recall among rows of precision at least v (ties: the higher threshold);
    - recall=v: the highest threshold whose recall is at least v (the fewest texts flagged);
    - flagged=v: the highest recall among rows flagging at most v of the texts, and some;
    - f1: the highest F1 (ties: the higher threshold).

    Example:
        >>> rows = threshold_table(sequence_counts([0.9, 0.8, 0.4, 0.2], [True, False, True, False]))
        >>> choose(rows, "precision", 0.6)["threshold"], choose(rows, "flagged", 0.5)["threshold"]
        (0.4, 0.9)
        >>> choose(rows, "precision", 1.0)["threshold"]
        0.9
    """
    if target not in TARGETS:
        raise ArgumentError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    if target != "f1" and (value is None or not 0 < value <= 1):
        raise ArgumentError(f"target {target} needs a value in (0, 1], got {value!r}")
    by_height = sorted(rows, key=lambda row: -row["threshold"])  # a max() keeps the first: the higher threshold
    if target == "f1":
        return max(by_height, key=lambda row: row["f1"])
    if target == "precision":
        met = [row for row in by_height if row["precision"] is not None and row["precision"] >= value]
        reached = max((row["precision"] for row in rows if row["precision"] is not None), default=0.0)
        if met:
            return max(met, key=lambda row: row["recall"])
    elif target == "recall":
        met = [row for row in by_height if row["recall"] >= value]
        reached = max((row["recall"] for row in rows), default=0.0)
        if met:
            return met[0]
    else:
        met = [row for row in by_height if 0 < row["flagged"] <= value]
        reached = min((row["flagged"] for row in rows if row["flagged"] > 0), default=0.0)
        if met:
            return max(met, key=lambda row: row["recall"])
    best = "highest" if target != "flagged" else "lowest (above 0)"
    raise UnreachableTargetError(f"no threshold reaches {target}={value:g} on these data; the {best} {target} "
                                 f"reached is {reached:.4f}")


def bootstrap_interval(counts: Counts, threshold: float, samples: int = BOOTSTRAP_SAMPLES,
                       seed: int = BOOTSTRAP_SEED, level: float = BOOTSTRAP_LEVEL) -> dict[str, list[float]]:
    """Percentile intervals of precision and recall at `threshold`, texts resampled with replacement (seeded),
    each widened to at least the exact binomial (Clopper-Pearson) interval of its units at the same level.

    The percentile bootstrap collapses when few units are counted: three flagged texts, all right,
    are right in every resample, and [1.0, 1.0] would promise a precision three texts cannot show.
    The exact interval of k right in n flagged (recall: k found of n positives) is what those n
    units alone can show (a span task's units are characters, many and not independent: there the
    bootstrap over texts is the wider one), so the promise is never narrower than it.

    Example:
        >>> counts = sequence_counts([0.9, 0.8, 0.4, 0.2], [True, False, True, False])
        >>> interval = bootstrap_interval(counts, 0.9, samples=200)
        >>> interval["precision"]  # one flagged text, always right when drawn: 1/1 can be as low as 0.025
        [0.025, 1.0]
    """
    i = int(np.argmin(np.abs(counts.thresholds - threshold)))
    n = counts.tp.shape[1]
    if not n:
        return {"precision": [0.0, 0.0], "recall": [0.0, 0.0]}
    sums = [np.stack([weights @ counts.tp[i], weights @ counts.flagged[i], weights @ counts.positives])
            for weights in resamples(n, samples, np.random.default_rng(seed))]
    tp, flagged, positives = np.concatenate(sums, axis=1)
    precision = tp[flagged > 0] / flagged[flagged > 0]
    recall = tp[positives > 0] / positives[positives > 0]
    tail = (1 - level) / 2 * 100

    def interval(values: np.ndarray, right: float, units: float) -> list[float]:
        if not len(values):
            return [0.0, 0.0]
        low, high = exact_interval(int(round(right)), int(round(units)), level)
        return [round(min(float(np.percentile(values, tail)), low), 4),
                round(max(float(np.percentile(values, 100 - tail)), high), 4)]

    tp_all = float(counts.tp[i].sum())
    return {"precision": interval(precision, tp_all, float(counts.flagged[i].sum())),
            "recall": interval(recall, tp_all, float(counts.positives.sum()))}


def resamples(n: int, samples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """`samples` bootstrap resamples of `n` texts, each a row of draws per text, a chunk of rows at a time.

    At most `BOOTSTRAP_DRAWS_HELD` draws are held at once (1,000 resamples of 100,000 texts drawn whole
    would be 800 MB); the Generator's stream, and so whatever is computed from the rows, is the same
    whatever the chunk.

    Example:
        >>> [rows.sum(axis=1).tolist() for rows in resamples(3, 2, np.random.default_rng(0))]  # n draws each
        [[3.0, 3.0]]
    """
    chunk = max(1, BOOTSTRAP_DRAWS_HELD // n)
    for low in range(0, samples, chunk):
        yield rng.multinomial(n, np.full(n, 1.0 / n), size=min(chunk, samples - low)).astype(float)


def selection_optimism(counts: Counts, target: str, value: Optional[float], samples: int = BOOTSTRAP_SAMPLES,
                       seed: int = BOOTSTRAP_SEED) -> float:
    """How much choosing the threshold on these data flatters its precision (Efron's bootstrap optimism).

    A threshold chosen on dev for precision 0.9 is where dev's precision happens to pass 0.9 with
    the most recall: on a small dev set, a lucky place, and new data see less. Each resample of the
    texts (with replacement, seeded) chooses its own threshold as `choose` does; the optimism is the
    mean of that threshold's precision on the resample less its precision on these data (a resample
    that meets no target, or flags nothing here, counts for nothing). `decision_band` lowers the
    promised precision's interval by it. (Recall is left as it is: a resample cannot tell apart the
    thresholds between the texts it lacks, and the tie rule would charge that as optimism.)

    Example:
        >>> sure = sequence_counts([0.9, 0.8, 0.3, 0.2], [True, True, False, False])  # separable: no luck to undo
        >>> selection_optimism(sure, "precision", 0.9, samples=200)
        0.0
    """
    n, thresholds = counts.tp.shape[1], len(counts.thresholds)
    if not n or not thresholds:
        return 0.0
    rng = np.random.default_rng([seed, 1])  # a stream of its own: the interval's draws stay as they were

    def table(weights: np.ndarray) -> dict[str, np.ndarray]:
        """threshold_table's columns, per resample (rows) and threshold (columns), rounded as it rounds them."""
        tp, flagged = weights @ counts.tp.T, weights @ counts.flagged.T
        positives = (weights @ counts.positives)[:, None]
        safe = np.where(flagged > 0, flagged, 1.0)
        out = {"precision": np.where(flagged > 0, tp / safe, np.nan),
               "recall": np.where(positives > 0, tp / np.where(positives > 0, positives, 1.0), 0.0),
               "f1": np.where(flagged + positives > 0, 2 * tp / np.maximum(flagged + positives, 1e-12), 0.0),
               "flagged": (weights @ counts.texts_flagged.T.astype(float)) / weights.sum(axis=1, keepdims=True)}
        return {name: np.round(column, DIGITS) for name, column in out.items()}

    def chosen(t: dict[str, np.ndarray]) -> np.ndarray:
        """Per resample, the column `choose` picks (of a tie, the highest threshold: the first), -1 where none."""
        if target == "f1":
            score, met = t["f1"], np.ones(t["f1"].shape, dtype=bool)
        elif target == "recall":  # the highest threshold that reaches it: the first column met
            score, met = np.broadcast_to(-np.arange(thresholds, dtype=float), t["recall"].shape), t["recall"] >= value
        elif target == "precision":
            score, met = t["recall"], np.nan_to_num(t["precision"], nan=-1.0) >= value
        else:
            score, met = t["recall"], (t["flagged"] > 0) & (t["flagged"] <= value)
        column = np.where(met, score, -np.inf).argmax(axis=1)
        return np.where(met.any(axis=1), column, -1)

    here = table(np.ones((1, n)))["precision"][0]
    gaps = []
    for weights in resamples(n, samples, rng):
        drawn = table(weights)
        column = chosen(drawn)
        rows = np.flatnonzero(column >= 0)
        gap = drawn["precision"][rows, column[rows]] - here[column[rows]]
        gaps.append(gap[np.isfinite(gap)])
    found = np.concatenate(gaps)
    return round(float(found.mean()), 4) if len(found) else 0.0


def exact_interval(right: int, units: int, level: float = BOOTSTRAP_LEVEL) -> tuple[float, float]:
    """The Clopper-Pearson interval of a share, `right` of `units` (scipy's exact binomial test); (0, 1) of none.

    Example:
        >>> [round(v, 4) for v in exact_interval(3, 3)]  # all three right: as low as 0.025 ** (1/3)
        [0.2924, 1.0]
    """
    if units <= 0:
        return 0.0, 1.0
    from scipy.stats import binomtest

    found = binomtest(min(right, units), units).proportion_ci(confidence_level=level, method="exact")
    return float(found.low), float(found.high)


def examples_digest(examples: Sequence[Example]) -> str:
    """The SHA-256 of examples as canonical JSON lines: what a decision was chosen on, whatever file held them."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(json_text(ex.to_dict(), what=f"example {ex.id!r}").encode())
        digest.update(b"\n")
    return digest.hexdigest()


def task_counts(task: Task, label: Optional[str], decoding: Decoding, examples: Sequence[Example],
                merged: Sequence[MergedExample]) -> Counts:
    """The `Counts` of one task: by `label`'s probability (a sequence task), or by its characters (a span task)."""
    if kind_of(task).token_level:  # a span task: spans, not labels, are what is cut
        return span_counts(task, decoding, examples, merged)
    scores, gold = label_scores(task, decision_label(task, label), examples, merged)
    return sequence_counts(scores, gold)


def decision_label(task: Task, label: Optional[str]) -> Optional[str]:
    """The label a sequence task is cut on: `label`, else "true" for a true/false task; None for a span task."""
    if kind_of(task).token_level:
        if label is not None:
            raise ArgumentError(f"task {task.name!r} is a span task; its threshold is on P(B) + P(I), name no label")
        return None
    if label is None:
        if not task.is_boolean:
            raise ArgumentError(f"task {task.name!r}: name the label to cut on (TASK:LABEL), one of "
                                f"{', '.join(task.labels)}")
        return "true"
    if label not in task.labels:
        raise ArgumentError(f"task {task.name!r} has no label {label!r}; its labels: {', '.join(task.labels)}")
    return label


def decision_band(counts: Counts, target: str, value: Optional[float], data: str, data_sha256: str,
                  samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """The band a target picks, as a model directory saves it: threshold, what it promised, on what, when.

    Data without a gold positive are refused (an `UnreachableTargetError`): every threshold there
    promises recall 0, yet F1 or a reviewer's share would still pick one.
    """
    rows = threshold_table(counts)
    row = choose(rows, target, value) if rows else None  # an unmet precision or recall names the best reached
    if row is None or not counts.positives.sum():
        raise UnreachableTargetError(f"no text of these data is positive ({len(counts.positives)} texts with a gold, "
                                     "none with the label or a span): no threshold can be chosen on them")
    interval = bootstrap_interval(counts, row["threshold"], samples, seed)
    # the threshold was chosen on these data: the precision promised goes down by what that choice flatters it
    optimism = selection_optimism(counts, target, value, samples, seed)
    interval["precision"][0] = round(max(0.0, interval["precision"][0] - max(0.0, optimism)), 4)
    return {"threshold": row["threshold"], "target": target if value is None else f"{target}={value:g}",
            "precision": row["precision"], "recall": row["recall"], "f1": row["f1"], "flagged": row["flagged"],
            "benign_flagged": row["benign_flagged"], "precision_interval": interval["precision"],
            "recall_interval": interval["recall"],
            "bootstrap": {"samples": samples, "seed": seed, "level": BOOTSTRAP_LEVEL},
            "examples": int(counts.tp.shape[1]), "data": data, "data_sha256": data_sha256,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def merge_decision(current: Optional[dict[str, Any]], label: Optional[str], bands: dict[str, dict[str, Any]],
                   task: str) -> dict[str, Any]:
    """A task's decision policy with `bands` set (the others kept when the label is the same); review ≤ remove."""
    kept = current if current and current.get("label") == label else {}
    policy = {"label": label, "remove": kept.get("remove"), "review": kept.get("review"), **bands}
    if policy["remove"] and policy["review"] and policy["review"]["threshold"] > policy["remove"]["threshold"]:
        remove, review = policy["remove"], policy["review"]
        raise UnreachableTargetError(
            f"task {task!r}: the review threshold {review['threshold']} ({review['target']}) is above the remove "
            f"threshold {remove['threshold']} ({remove['target']}), which already reaches recall "
            f"{remove.get('recall', 0):.4f}: no review band is needed; set remove alone, or ask review for a "
            "higher recall")
    return policy


@dataclass(frozen=True)
class Target:
    """One `--set TASK[:LABEL] TARGET[=VALUE]` of `kold-span thresholds`: which task and label, what to reach.

    Example:
        >>> Target.parse(["OFF:true", "precision=0.95", "recall=0.9"])
        [Target(task='OFF', label='true', target='precision', value=0.95), Target(task='OFF', label='true', target='recall', value=0.9)]
        >>> Target.parse(["OFF_span", "f1"])
        [Target(task='OFF_span', label=None, target='f1', value=None)]
    """

    task: str
    label: Optional[str]
    target: str
    value: Optional[float]

    @classmethod
    def parse(cls, words: Sequence[str]) -> list["Target"]:
        """TASK[:LABEL] and one or more targets; an `ArgumentError` naming what is wrong."""
        if len(words) < 2:
            raise ArgumentError(f"--set {' '.join(words)}: give TASK[:LABEL] and a target, e.g. --set OFF:true "
                                "precision=0.95")
        task, _, label = words[0].partition(":")
        out = []
        for word in words[1:]:
            name, has_value, text = word.partition("=")
            if name not in TARGETS or (name == "f1") == bool(has_value):
                raise ArgumentError(f"--set {words[0]}: {word!r} is no target; use precision=P, recall=R, "
                                    "flagged=S (a share of texts) or f1")
            value = None
            if has_value:
                try:
                    value = float(text)
                except ValueError:
                    raise ArgumentError(f"--set {words[0]}: {word!r}: {text!r} is not a number") from None
                if not 0 < value <= 1:
                    raise ArgumentError(f"--set {words[0]}: {word!r}: the value must be in (0, 1]")
            out.append(cls(task, label or None, name, value))
        one_target_per_band(out)
        return out


def one_target_per_band(targets: Sequence[Target]) -> None:
    """Refuse two targets for one band of a task, in one `--set` or across several (the last would win unseen).

    Example:
        >>> one_target_per_band(Target.parse(["OFF", "precision=0.9"]) + Target.parse(["OFF", "f1"]))
        Traceback (most recent call last):
        kold_span.errors.ArgumentError: --set OFF: two targets for one band (precision=0.9, f1); remove takes ...
    """
    for name in dict.fromkeys(t.task for t in targets):
        mine = [t for t in targets if t.task == name]
        if len({BAND_OF[t.target] for t in mine}) < len(mine):
            said = ", ".join(t.target if t.value is None else f"{t.target}={t.value:g}" for t in mine)
            raise ArgumentError(f"--set {name}: two targets for one band ({said}); remove takes precision or f1, "
                                "review takes recall or flagged")


def decide(predictor: Any, examples: Sequence[Example], targets: Sequence[Target], data: str, data_sha256: str,
           batch_size: int = 32, samples: int = BOOTSTRAP_SAMPLES,
           seed: int = BOOTSTRAP_SEED) -> dict[str, dict[str, Any]]:
    """Each targeted task's decision policy, chosen on `predictor`'s (calibrated) outputs for gold `examples`.

    `predictor` is a `Predicts` (its `tasks`, `decoding`, `merged_outputs`); a task's bands not
    targeted here are kept when the label is the same. An `UnreachableTargetError` names the best
    value reached when a target cannot be met.
    """
    one_target_per_band(targets)
    by_name = {task.name: task for task in predictor.tasks}
    for target in targets:
        if target.task not in by_name:
            raise ArgumentError(f"--set {target.task}: the model has no task {target.task!r}; its tasks: "
                                f"{', '.join(by_name)}")
        if not by_name[target.task].kind.takes_decision(by_name[target.task].problem):
            raise ArgumentError(f"--set {target.task}: a soft-label task takes no decision thresholds")
    merged = predictor.merged_outputs([e.text for e in examples], [e.context for e in examples], batch_size)
    policies: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(t.task for t in targets):
        task = by_name[name]
        mine = [t for t in targets if t.task == name]
        labels = {decision_label(task, t.label) for t in mine}
        if len(labels) > 1:
            raise ArgumentError(f"--set {name}: one label per task, got {', '.join(sorted(map(str, labels)))}")
        label = labels.pop()
        counts = task_counts(task, label, predictor.decoding, examples, merged)
        try:
            bands = {BAND_OF[t.target]: decision_band(counts, t.target, t.value, data, data_sha256, samples, seed)
                     for t in mine}
        except UnreachableTargetError as err:
            raise UnreachableTargetError(f"task {name}{':' + label if label else ''}: {err}") from None
        policies[name] = merge_decision(task.decision, label, bands, name)
    return policies


def policy_in_words(task: str, policy: Optional[dict[str, Any]]) -> list[str]:
    """A decision policy as sentences a moderator reads, one per band (none without a policy).

    Example:
        >>> policy_in_words("OFF", {"label": "true", "review": None, "remove": {"threshold": 0.93, "precision": 0.95,
        ...     "recall": 0.4, "precision_interval": [0.9, 0.99], "recall_interval": [0.35, 0.45], "examples": 500,
        ...     "data": "dev.jsonl", "data_sha256": "ab12cd34ef", "date": "2026-12-06T07:00:00Z"}})
        ['remove when P(OFF = true) >= 0.93: on 500 texts of dev.jsonl (sha256 ab12cd34…, 2026-12-06), 95% of the texts it removed were OFF = true (95% interval 90%–99%) and it removed 40% of them (35%–45%)']
    """
    if not policy:
        return []
    label = policy.get("label")
    what = f"{task} = {label}" if label else f"a {task} span"
    score = f"P({task} = {label})" if label else f"P(B) + P(I) of a {task} token"
    lines = []
    for band in ("remove", "review"):
        chosen = policy.get(band)
        if not chosen:
            continue
        # review's promise counts every text at or above its threshold: those removed too, not the band alone
        verb, whose = ("removed", "removed") if band == "remove" else ("flagged", "flagged (sent to review or removed)")
        precision = chosen.get("precision")
        share = "nothing" if precision is None else f"{precision:.0%}"
        p_low, p_high = chosen.get("precision_interval", [0, 0])
        r_low, r_high = chosen.get("recall_interval", [0, 0])
        unit = "texts" if label else "characters"
        lines.append(f"{band} when {score} >= {chosen['threshold']:g}: on {chosen.get('examples')} texts of "
                     f"{chosen.get('data')} (sha256 {str(chosen.get('data_sha256'))[:8]}…, "
                     f"{str(chosen.get('date'))[:10]}), {share} of the {unit} it {whose} were {what} "
                     f"(95% interval {p_low:.0%}–{p_high:.0%}) and it {verb} {chosen['recall']:.0%} of them "
                     f"({r_low:.0%}–{r_high:.0%})")
    return lines
