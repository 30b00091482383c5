"""Calibration after training: the n-gram companion of a sequence task, chosen and refitted on dev.

The fusion weight (1 = encoder only, 0 = n-gram only) and whether the n-gram also reads the context
are chosen on the dev split with the n-gram fitted on train only, then the n-gram is refitted on
train + dev (see `kold_span.models.ngram`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from kold_span.data.example import Example
from kold_span.errors import DataError
from kold_span.evaluation.baselines import HybridScorer, Metric
from kold_span.models.ngram import (Companion, NgramBaseline, NgramScorer, Probs, context_string)


def choose_companion(task: str, label: str, problem: str, train: Sequence[Example], dev: Sequence[Example],
                     dev_encoder_probs: Sequence[Probs], metric: Metric = "macro_f1",
                     allow_context: bool = True, extra: Sequence[Example] = (), refit: bool = True) -> Companion:
    """Choose the n-gram variant and the fusion weight on dev, then refit the n-gram on train + dev.

    Args:
        task: the task the companion belongs to.
        label: the label key the n-gram predicts (the task's source).
        problem: "single" or "multi".
        train: training examples (those without `label` are ignored).
        dev: dev examples, aligned with `dev_encoder_probs`; all must carry `label`.
        dev_encoder_probs: the encoder's ``{label: probability}`` on each dev example.
        metric: what the weight is chosen by (see `HybridScorer.choose_weight`).
        allow_context: False keeps the n-gram to the text (a model trained with `context.mode: none`).
        extra: more labelled examples the n-gram may learn from (not the encoder); with any,
            each n-gram variant is also fitted on train + extra, and kept if dev prefers it.
            Keep dev and test examples out of it: dev would score an n-gram that has seen it.
        refit: False returns the chosen n-gram as fitted for the choice, on train (and extra)
            only, for scoring dev afterwards (dev thresholds); `refit_companion` adds dev later.

    Returns:
        The companion: the text-only n-gram on train unless one that also reads the context,
        or that also learns from `extra`, scores higher on dev (the context only tried when
        training examples have contexts); ties keep the simpler variant and the smaller
        weight, as `HybridScorer.choose_weight` does.

    Example:
        >>> pairs = [("you idiot", True), ("what an idiot", True), ("nice day", False), ("a nice game", False)]
        >>> train = [Example(str(i), text, labels={"off": off}) for i, (text, off) in enumerate(pairs)]
        >>> dev = [Example("d1", "idiot", labels={"off": True}), Example("d2", "nice", labels={"off": False})]
        >>> unsure = [{"false": 0.5, "true": 0.5}] * 2  # an encoder that cannot tell
        >>> companion = choose_companion("OFF", "off", "single", train, dev, unsure)
        >>> companion.weight, companion.dev_score  # the n-gram alone (weight 0) gets dev right
        (0.0, 1.0)
    """
    if len(dev) != len(dev_encoder_probs):
        raise ValueError(f"{len(dev)} dev examples but {len(dev_encoder_probs)} encoder outputs")
    if not dev:
        raise DataError(f"task {task!r}: fusing an n-gram needs labelled dev examples to choose its weight")
    gold = [ex.labels[label] for ex in dev]  # as vocabulary strings by `HybridScorer.choose_weight`
    has_context = allow_context and any(context_string(ex).strip() for ex in train)
    extra = [ex for ex in extra if ex.labels.get(label) is not None]
    variants = [(use_context, more) for more in ([False, True] if extra else [False])
                for use_context in [False] + ([True] if has_context else [])]
    best = None
    for use_context, more in variants:
        ngram = NgramBaseline(label, problem, use_context=use_context).fit(list(train) + (extra if more else []))
        scorer = HybridScorer(problem=problem)
        weight = scorer.choose_weight(dev_encoder_probs, ngram.predict_proba(dev), gold, metric=metric)
        if best is None or scorer.dev_scores_[weight] > best[0]:
            best = (scorer.dev_scores_[weight], more, scorer, ngram)
    dev_score, more, scorer, ngram = best
    chosen = Companion(task, scorer.weight, NgramScorer.from_baseline(ngram), dev_score, dict(scorer.dev_scores_),
                       len(extra) if more else 0)
    return refit_companion(chosen, list(train) + list(dev) + taken_extra(chosen, extra)) if refit else chosen


def taken_extra(companion: Companion, extra: Sequence[Example]) -> list[Example]:
    """The examples of `extra` (as offered to `choose_companion`) that the companion's n-gram was fitted with.

    None unless dev preferred the n-gram with them; then those that carry its label.
    """
    if not companion.extra_examples:
        return []
    return [ex for ex in extra if ex.labels.get(companion.scorer.label) is not None]


def refit_companion(companion: Companion, examples: Sequence[Example]) -> Companion:
    """The same companion (weight, n-gram variant, dev scores) with its n-gram fitted again on `examples`."""
    scorer = companion.scorer
    model = NgramBaseline(scorer.label, scorer.problem, use_context=scorer.use_context).fit(list(examples))
    return replace(companion, scorer=NgramScorer.from_baseline(model))
