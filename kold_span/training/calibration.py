"""Calibration after training: the choices made on the dev split once the encoder is trained.

First each task's temperature (`temperature: dev`, the default: the one number that divides its
logits with the least negative log-likelihood on dev, `models.temperature`), and after it the
confidence map of a single-label or soft task (`confidence_map: dev`, the default: its top label's
probability mapped to the dev hit rate, `models.confidence`; one per label of a multi-label task
with `threshold: dev`), so that every later choice is made
on the probabilities the saved model gives; then, each asked for per task in the
config: the decision thresholds of a task with
`threshold: dev` (each label's of a multi-label task, the P(B) + P(I) cut of a span task), and
the n-gram companion of a sequence task with `fuse_ngram: true` (see `kold_span.models.ngram`):
the fusion weight (1 = encoder only, 0 = n-gram only) and whether the n-gram also reads the
context or learns from extra examples. Both are chosen with the n-gram fitted on train (and
extra) only: fitted on dev too, it would make the fused dev probabilities look perfect. The
n-gram that is saved is then refitted on train + dev.

`calibrate` returns the choices as a `Calibration` and changes nothing; `apply_to` makes the
calibrated predictor. Last come the decision policies (`decision:`, the allow / review / remove
thresholds of `evaluation.operating_points`), chosen on the calibrated dev outputs.

Example:
    >>> from kold_span.config.schema import ScratchEncoderConfig
    >>> from kold_span.inference.predictor import Predictor
    >>> from kold_span.models.backbones import scratch_encoder
    >>> from kold_span.models.network import MultiTaskModel
    >>> groups = Task("groups", "sequence", "groups", problem="multi", labels=("women", "men"))
    >>> encoder = scratch_encoder(ScratchEncoderConfig(hidden_size=8, layers=1, heads=1, intermediate_size=8,
    ...                                                max_position=8), vocab_size=20, pad_id=0)
    >>> trained = Predictor(MultiTaskModel(encoder, [groups]), tokenizer=None, tasks=[groups])
    >>> calibrated = Calibration(thresholds={"groups": {"women": 0.3, "men": 0.6}}).apply_to(trained)
    >>> calibrated.tasks[0].thresholds, trained.tasks[0].thresholds
    ((0.3, 0.6), ())
"""
from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional, Sequence

from kold_span import corpora
from kold_span.config.choices import Problem, TaskKind
from kold_span.config.schema import Config, TaskConfig
from kold_span.data.example import Example
from kold_span.data.perspectives import expand_by_annotator
from kold_span.data.selection import keep_example
from kold_span.errors import DataError, UnreachableTargetError
from kold_span.evaluation.baselines import HybridScorer, Metric
from kold_span.metrics import ECE_BINS
from kold_span.evaluation.operating_points import (BAND_OF, decision_band, decision_label, examples_digest,
                                                   merge_decision, task_counts)
from kold_span.evaluation.task_scores import calibration_error, confidence_hits, task_outcomes, task_thresholds
from kold_span.models.confidence import MIN_ROWS, fit_confidence_map
from kold_span.models.kinds import MergedExample, apply_calibration, kind_of
from kold_span.models.ngram import Companion, NgramBaseline, NgramScorer, Probs, context_string, fuse_companions
from kold_span.models.tasks import Task
from kold_span.models.temperature import fit_temperature

if TYPE_CHECKING:
    from kold_span.inference.predictor import Predictor

log = logging.getLogger(__name__)

# task → (the examples offered to its n-gram besides train, how many were left out as dev or test texts)
NgramExtra = dict[str, tuple[list[Example], int]]


@dataclass(frozen=True)
class Calibration:
    """What was chosen on dev for a trained model: thresholds and n-gram companions, by task.

    Applied by `calibration.apply_to(predictor)` rather than a `Predictor` method: the predictor
    belongs to the inference layer, below training, and stays unaware of how a model is
    calibrated. Applying returns a new predictor and leaves the given one as it was, so the
    same trained predictor gives both the dev view and the model that is saved.

    Attributes:
        thresholds: {task: {label: threshold}}; a span task's one threshold is under "inside".
        companions: {task: companion}, the n-gram refitted on train + dev: what is saved.
        dev_companions: the same choices with the n-gram fitted on train (+ the extra examples
            it took) only: what dev is scored with.
        fusion: {task: summary} of each companion as reported (weight, n-gram variant, dev
            scores by weight; with extra examples offered, how many were offered and left out).
    """

    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    companions: dict[str, Companion] = field(default_factory=dict)
    dev_companions: dict[str, Companion] = field(default_factory=dict)
    fusion: dict[str, dict[str, Any]] = field(default_factory=dict)
    temperatures: dict[str, float] = field(default_factory=dict)
    # {task: knots} of a single-label task, {task: (knots of each label)} of a multi-label one (`models.confidence`)
    confidence_maps: dict[str, Any] = field(default_factory=dict)
    # {task: {temperature, confidence_map_knots, bins, dev_ece_before, dev_ece_after}}: what metrics.json reports
    temperature_report: dict[str, dict[str, Any]] = field(default_factory=dict)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)  # {task: decision policy}
    decision_errors: dict[str, str] = field(default_factory=dict)  # {task: why a target was not met}

    def apply_to(self, predictor: Predictor, dev: bool = False) -> Predictor:
        """A copy of the trained `predictor` (sharing its model) with these thresholds and companions.

        `dev` attaches the train-only n-grams (`dev_companions`), the ones that may score dev; the
        predictor's companions of tasks not calibrated here are kept.
        """
        calibrated = copy.copy(predictor)
        calibrated.tasks = [self._thresholded(task) for task in predictor.tasks]
        calibrated.companions = {**predictor.companions, **(self.dev_companions if dev else self.companions)}
        return calibrated

    def _thresholded(self, task: Task) -> Task:
        """`task` with the temperature, confidence map, thresholds and decision policy chosen for it, if any."""
        task = replace(task, temperature=self.temperatures.get(task.name, task.temperature),
                       decision=self.decisions.get(task.name, task.decision))
        if task.name in self.confidence_maps:
            field_name = "confidence_map" if kind_of(task).exclusive(task) else "label_maps"
            task = replace(task, **{field_name: self.confidence_maps[task.name]})
        chosen = self.thresholds.get(task.name)
        if chosen is None:
            return task
        # As `task_thresholds` reports them: {"inside": t} for a span task, else by label (any order).
        values = (chosen["inside"],) if task.kind is TaskKind.SPAN else tuple(chosen[label] for label in task.labels)
        return replace(task, thresholds=values)


def calibrate(tasks: Sequence[TaskConfig], predictor: Predictor, splits: dict[str, list[Example]],
              extra: Optional[NgramExtra] = None, allow_context: bool = True, batch_size: int = 32) -> Calibration:
    """Choose on dev the n-gram companions and thresholds `tasks` ask for, for a trained `predictor`.

    The companions come first, chosen on the encoder's dev outputs; the thresholds are then tuned
    on the dev outputs fused with the train-only n-grams, as the calibrated model computes them;
    last, the n-grams are refitted on train + dev. An empty `Calibration` when no task asks for one.

    `extra` is `ngram_extra`'s result, the examples each task's n-gram may also learn from; `allow_context` False
    keeps the n-grams to the text (a model trained with `context.mode: none`).
    """
    dev = splits["dev"]
    fixed = {t.name: float(t.temperature) for t in tasks if t.temperature != "dev" and float(t.temperature) != 1.0}
    tuned = bool(dev) and any(t.threshold == "dev" for t in tasks)
    fitted = bool(dev) and any(t.temperature == "dev" or t.confidence_map == "dev" or t.decision is not None
                               for t in tasks)
    if not (tuned or fitted or any(t.fuse_ngram for t in tasks)):
        return Calibration(temperatures=fixed)
    texts, contexts = [e.text for e in dev], [e.context for e in dev]
    merged = predictor.merged_outputs(texts, contexts, batch_size)
    dev_companions, fusion = choose_companions(tasks, predictor.tasks, splits, merged, extra, allow_context)
    fuse_companions(dev_companions, predictor.tasks, texts, contexts, merged)
    raw_ece = {t.name: round(calibration_error(t, dev, merged), 6) for t in predictor.tasks}
    temperatures, report = fit_temperatures(tasks, predictor.tasks, dev, merged)
    temperatures = {**temperatures, **fixed}
    tempered = Calibration(temperatures=temperatures).apply_to(predictor)
    apply_calibration(tempered.tasks, merged)
    maps = fit_confidence_maps(tasks, tempered.tasks, dev, merged)
    mapped = with_maps(tempered, maps, merged)
    by_name = {t.name: t for t in tempered.tasks}
    knots = {t.name: t.map_knots for t in mapped.tasks}
    for name in maps:  # a map beside a fixed temperature is reported too
        report.setdefault(name, {"temperature": temperatures.get(name, 1.0), "bins": ECE_BINS,
                                 "rows": len(task_outcomes(by_name[name], dev, merged)[0]),
                                 "dev_ece_before": raw_ece[name]})
    for name, entry in report.items():
        entry["confidence_map_knots"] = knots[name]
        entry["dev_ece_after"] = round(calibration_error(by_name[name], dev, merged), 6)
    thresholds = dev_thresholds(tasks, predictor, dev, merged) if tuned else {}
    decided = Calibration(thresholds, temperatures=temperatures, confidence_maps=maps).apply_to(predictor)
    decisions, errors = dev_decisions(tasks, decided, dev, merged)
    return Calibration(thresholds, refit_companions(tasks, dev_companions, splits, extra), dev_companions, fusion,
                       temperatures, maps, report, decisions, errors)


def fit_temperatures(tasks: Sequence[TaskConfig], trained: Sequence[Task], dev: Sequence[Example],
                     merged: Sequence[MergedExample]) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Each `temperature: dev` task's temperature, fitted on its dev outputs `merged` by NLL, and a report of it.

    Returns ({task: temperature}, {task: {"temperature", "bins", "dev_ece_before"}}); a task without gold on
    dev keeps 1.
    """
    wanted = {t.name for t in tasks if t.temperature == "dev"}
    temperatures, report = {}, {}
    for task in trained:
        if task.name not in wanted:
            continue
        probs, targets = task_outcomes(task, dev, merged)
        if not len(probs):
            continue
        temperature = fit_temperature(probs, targets, kind_of(task).exclusive(task))
        temperatures[task.name] = temperature
        report[task.name] = {"temperature": temperature, "bins": ECE_BINS, "rows": len(probs),
                             "dev_ece_before": round(calibration_error(task, dev, merged), 6)}
    return temperatures, report


def fit_confidence_maps(tasks: Sequence[TaskConfig], trained: Sequence[Task], dev: Sequence[Example],
                        merged: Sequence[MergedExample]) -> dict[str, Any]:
    """The confidence maps of each `confidence_map: dev` sequence task, fitted on its dev outputs `merged` as they
    stand (after the temperature): {task: knots} of a single-label or soft task's top label, {task: (knots, ...)}
    of each label of a multi-label task.

    A multi-label task decides each label at its threshold: it gets maps only with `threshold: dev`, its
    thresholds then chosen on the mapped probabilities; mapped under fixed thresholds, its decisions would move.
    A task with fewer than `MIN_ROWS` labelled dev rows gets none (logged): its steps would follow the noise of a
    few hundred texts."""
    wanted = {t.name: t for t in tasks if t.confidence_map == "dev"}
    maps: dict[str, Any] = {}
    for task in trained:
        kind = kind_of(task)
        if task.name not in wanted or kind.token_level:
            continue
        exclusive = kind.exclusive(task)
        if not exclusive and wanted[task.name].threshold != "dev":
            continue
        probs, targets = task_outcomes(task, dev, merged)
        if len(probs) < MIN_ROWS:
            log.info("task %r: no confidence map: %d labelled dev rows, fewer than %d", task.name, len(probs), MIN_ROWS)
            continue
        if exclusive:
            confidences, hits = confidence_hits(task, dev, merged)
            maps[task.name] = fit_confidence_map(confidences, hits, 1.0 / len(task.labels))
        else:
            maps[task.name] = tuple(fit_confidence_map(probs[:, j], targets[:, j], 0.0) for j in range(probs.shape[1]))
    return maps


def with_maps(predictor: Predictor, maps: dict[str, Any], *outputs: Sequence[MergedExample]) -> Predictor:
    """A copy of `predictor` with the confidence `maps` (`fit_confidence_maps`), each of `outputs`, already at its
    temperatures, mapped in place."""
    mapped = Calibration(confidence_maps=maps).apply_to(predictor)
    for merged in outputs:
        apply_calibration([replace(t, temperature=1.0) for t in mapped.tasks if t.name in maps], merged)
    return mapped


def dev_decisions(tasks: Sequence[TaskConfig], predictor: Predictor, dev: Sequence[Example],
                  merged: Sequence[MergedExample]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The decision policy of every task configured with `decision:`, chosen on the calibrated dev outputs.

    A target dev cannot meet leaves its band out and is reported ({task: message}), rather than
    losing the trained model at its last step.
    """
    wanted = {t.name: t.decision for t in tasks if t.decision is not None}
    decisions: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    if not wanted:
        return decisions, errors
    decoding, digest = predictor.decoding, examples_digest(dev)
    for task in predictor.tasks:
        config = wanted.get(task.name)
        if config is None:
            continue
        label = decision_label(task, config.label)
        counts = task_counts(task, label, decoding, dev, merged)
        targets = [("precision", config.precision), ("f1", True if config.f1 else None),
                   ("recall", config.recall), ("flagged", config.flagged)]
        bands, unmet = {}, []
        for target, value in targets:
            if value is None:
                continue
            try:
                bands[BAND_OF[target]] = decision_band(counts, target, None if target == "f1" else value, "dev",
                                                       digest)
            except UnreachableTargetError as err:
                unmet.append(f"{target}: {err}")
                log.warning("task %r: decision %s left out: %s", task.name, BAND_OF[target], err)
        if unmet:
            errors[task.name] = "; ".join(unmet)
        if not bands:  # a policy of no band would state "allow" on every row: the model keeps none
            continue
        try:
            decisions[task.name] = merge_decision(None, label, bands, task.name)
        except UnreachableTargetError as err:  # review above remove: remove alone already reaches the recall
            errors[task.name] = str(err)
            log.warning("%s; the remove band is saved alone", err)
            decisions[task.name] = merge_decision(None, label, {"remove": bands["remove"]}, task.name)
    return decisions, errors


def dev_thresholds(tasks: Sequence[TaskConfig], predictor: Predictor, dev: Sequence[Example],
                   merged: Sequence[MergedExample]) -> dict[str, dict[str, float]]:
    """The thresholds of every task configured with `threshold: dev`, chosen on `predictor`'s `merged` dev outputs.

    A multi-label task gets each label's F1-best threshold; a span task the P(B) + P(I) threshold
    with the best mean char-F1 of the spans the predictor outputs (its `decoding`). Returns
    {task: {label: threshold}}, with the single key "inside" for a span task (the dev scores
    reported afterwards use these thresholds, so they are optimistic; test is untouched by the choice).
    """
    wanted = {t.name for t in tasks if t.threshold == "dev"}
    # The other tasks matter only as a span task's gates, single-label tasks with no thresholds to tune.
    return {task.name: task_thresholds(task, predictor.decoding, dev, merged)[1]
            for task in predictor.tasks if task.name in wanted}


def ngram_extra(config: Config, splits: dict[str, list[Example]]) -> NgramExtra:
    """Each task's `fuse_ngram_train` examples, read and filtered as data.train, less any text in dev or test.

    Read before training, so a missing or malformed file fails at once. Returns {task: (kept,
    number left out)}.
    """
    held_out = {ex.text for name in ("dev", "test") for ex in splits[name]}
    out = {}
    for task in config.tasks:
        if task.fuse_ngram and task.fuse_ngram_train:
            read = [ex for path in task.fuse_ngram_train
                    for ex in corpora.read(config.data.reader, path, **config.data.reader_options)
                    if keep_example(ex, config.data.filter)]
            kept = [ex for ex in read if ex.text not in held_out]
            left_out = len(read) - len(kept)
            if config.data.perspective is not None:  # one example per annotator, as the splits are
                kept = expand_by_annotator(kept, config.data.perspective.label, config.data.perspective.traits)
            out[task.name] = (kept, left_out)
    return out


def choose_companions(tasks: Sequence[TaskConfig], trained: Sequence[Task], splits: dict[str, list[Example]],
                      merged: Sequence[MergedExample], extra: Optional[NgramExtra] = None,
                      allow_context: bool = True) -> tuple[dict[str, Companion], dict[str, dict[str, Any]]]:
    """The n-gram companion of every task configured with `fuse_ngram`, fitted on train (and extra) only.

    `trained` are the predictor's tasks, `merged` its outputs on `splits["dev"]`. Returns
    ({task: companion}, {task: summary}): the summary holds the weight, the n-gram variant and
    the dev scores by weight (weight 1.0 is the encoder alone); with extra examples offered, how
    many were offered, left out and taken. Fitted without dev, the companions can still score dev
    (thresholds, the reported dev scores, optimistic since the weight was chosen there);
    `refit_companions` fits them on train + dev for saving.
    """
    wanted = {t.name: t for t in tasks if t.fuse_ngram}
    companions, summaries = {}, {}
    for task in trained:
        if task.name not in wanted:
            continue
        labelled = [(ex, m) for ex, m in zip(splits["dev"], merged) if ex.labels.get(task.source) is not None]
        dev_probs = [dict(zip(task.labels, map(float, m.sequence_probs[task.name]))) for _, m in labelled]
        offered, left_out = (extra or {}).get(task.name, ([], 0))
        companion = choose_companion(task.name, task.source, task.problem, splits["train"],
                                     [ex for ex, _ in labelled], dev_probs, wanted[task.name].fuse_metric,
                                     allow_context=allow_context, extra=offered, refit=False)
        companions[task.name] = companion
        summaries[task.name] = companion.summary()
        if wanted[task.name].fuse_ngram_train:
            summaries[task.name].update({"extra_offered": len(offered), "extra_left_out": left_out})
    return companions, summaries


def refit_companions(tasks: Sequence[TaskConfig], companions: dict[str, Companion],
                     splits: dict[str, list[Example]], extra: Optional[NgramExtra] = None) -> dict[str, Companion]:
    """Each companion with its n-gram fitted again on train + dev (+ the extra examples it took), for saving."""
    sources = {t.name: t.source for t in tasks}
    refitted = {}
    for name, companion in companions.items():
        dev = [ex for ex in splits["dev"] if ex.labels.get(sources[name]) is not None]
        taken = taken_extra(companion, (extra or {}).get(name, ([], 0))[0])
        refitted[name] = refit_companion(companion, list(splits["train"]) + dev + taken)
    return refitted


def choose_companion(task: str, label: str, problem: Problem, train: Sequence[Example], dev: Sequence[Example],
                     dev_encoder_probs: Sequence[Probs], metric: Metric = "macro_f1",
                     allow_context: bool = True, extra: Sequence[Example] = (), refit: bool = True) -> Companion:
    """Choose the n-gram variant and the fusion weight on dev, then refit the n-gram on train + dev.

    The n-gram predicts `label` (the task's source; training examples without it are ignored); every dev example
    carries it, aligned with the encoder's ``{label: probability}`` in `dev_encoder_probs`; `metric` chooses the
    weight (see `HybridScorer.choose_weight`); `allow_context` False keeps the n-gram to the text (a model trained
    with `context.mode: none`). `extra` holds more labelled examples the n-gram (not the encoder) may learn from:
    each variant is also fitted on train + extra, and kept if dev prefers it (keep dev and test examples out of it:
    dev would score an n-gram that has seen it). `refit` False returns the chosen n-gram as fitted for the choice,
    on train (and extra) only, for scoring dev afterwards (dev thresholds); `refit_companion` adds dev later.
    Returns the companion: the text-only n-gram on train unless one that also reads the context, or that also learns
    from `extra`, scores higher on dev (the context only tried when training examples have contexts); ties keep the
    simpler variant and the smaller weight, as `HybridScorer.choose_weight` does.

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
