"""Value checks that types alone cannot express, each failing with a `ConfigError` naming the sources."""
from __future__ import annotations

from typing import Callable

from kold_span.config.binding import check_bounds
from kold_span.config.choices import EvasionKind, Problem, SnapMode, Targets, TaskKind
from kold_span.config.schema import (CONTEXT_MODES, FUSE_METRICS, POOLINGS, Config, EvasionConfig, PretrainConfig,
                                     ScratchEncoderConfig)
from kold_span.errors import ConfigError


def value_checker(where: str) -> Callable[[bool, str], None]:
    """`need(ok, message)`, raising a `ConfigError` that names `where` unless `ok`: the form of every value check.

    Example:
        >>> need = value_checker("run.yaml + --set lr=-1")
        >>> need(0.1 > 0, "lr must be positive")
        >>> need(-1 > 0, "lr must be positive")
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: run.yaml + --set lr=-1: lr must be positive
    """
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise ConfigError(f"{where}: {message}")
    return need


def check_values(config: Config, where: str) -> None:
    """Value checks that types alone cannot express."""
    check_bounds(config, where)
    need = value_checker(where)
    need(bool(config.tasks), "at least one entry under 'tasks' is required")
    evasion = config.data.augment.evasion
    if evasion is not None:
        check_evasion(evasion, need)
    names = [t.name for t in config.tasks]
    need(len(set(names)) == len(names), f"task names must be unique, got {names}")
    for i, task in enumerate(config.tasks):  # first, as a task's gate is checked by its kind
        need(isinstance(task.kind, TaskKind),
             f"tasks[{i}].kind must be one of {TaskKind.values()}, got {task.kind!r}")
        need(isinstance(task.problem, Problem),
             f"tasks[{i}].problem must be one of {Problem.values()}, got {task.problem!r}")
    for i, task in enumerate(config.tasks):
        # The name goes into metric names (dev/<task>/<metric>), file names and config.json's keys.
        need(task.name.isidentifier(), f"tasks[{i}].name must be a name of letters, digits and _ (not starting "
                                       f"with a digit), e.g. OFF_span; got {task.name!r}")
        need(bool(task.source), f"tasks[{i}].source is empty (a label key or a span type)")
        if task.class_weight is not None:
            need(task.class_weight == "balanced" and task.kind.label_valued(task.problem),
                 f"tasks[{i}].class_weight: only 'balanced' on a single- or multi-label sequence task is supported, "
                 f"got {task.class_weight!r} on a {task.kind} task with problem '{task.problem}'")
        if task.threshold != 0.5:
            need(task.kind.takes_threshold(task.problem),
                 f"tasks[{i}].threshold applies to span tasks and multi-label sequence tasks (problem: multi), "
                 f"not to a {task.kind} task with problem '{task.problem}'")
            numeric = isinstance(task.threshold, (int, float)) and not isinstance(task.threshold, bool)
            need(task.threshold == "dev" or (numeric and 0.0 < task.threshold < 1.0),
                 f"tasks[{i}].threshold must be a number in (0, 1) or 'dev', got {task.threshold!r}")
            need(task.threshold != "dev" or bool(config.data.dev) or config.data.dev_fraction > 0,
                 f"tasks[{i}].threshold: dev needs a dev split (data.dev or data.dev_fraction > 0)")
        if task.fuse_ngram:
            need(task.kind.label_valued(task.problem),
                 f"tasks[{i}].fuse_ngram applies to single- or multi-label sequence tasks, "
                 f"not to a {task.kind} task with problem '{task.problem}'")
            need(bool(config.data.dev) or config.data.dev_fraction > 0,
                 f"tasks[{i}].fuse_ngram needs a dev split to choose the fusion weight "
                 "(data.dev or data.dev_fraction > 0)")
            allowed = FUSE_METRICS.get(task.problem, ())
            need(task.fuse_metric in allowed,
                 f"tasks[{i}].fuse_metric must be one of {allowed} for problem '{task.problem}', "
                 f"got {task.fuse_metric!r}")
        numeric = isinstance(task.temperature, (int, float)) and not isinstance(task.temperature, bool)
        need(task.temperature == "dev" or (numeric and task.temperature > 0),
             f"tasks[{i}].temperature must be a positive number or 'dev', got {task.temperature!r}")
        need(task.confidence_map in ("dev", "none"),
             f"tasks[{i}].confidence_map must be 'dev' or 'none', got {task.confidence_map!r}")
        if task.decision is not None:
            decision = task.decision
            need(not (decision.precision is not None and decision.f1),
                 f"tasks[{i}].decision: precision and f1 both choose the remove threshold; give one")
            need(not (decision.recall is not None and decision.flagged is not None),
                 f"tasks[{i}].decision: recall and flagged both choose the review threshold; give one")
            need(decision.precision is not None or decision.f1 or decision.recall is not None
                 or decision.flagged is not None,
                 f"tasks[{i}].decision needs a target: precision, f1, recall or flagged")
            need(bool(config.data.dev) or config.data.dev_fraction > 0,
                 f"tasks[{i}].decision needs a dev split to choose its thresholds on "
                 "(data.dev or data.dev_fraction > 0)")
            need(task.kind.takes_decision(task.problem),
                 f"tasks[{i}].decision applies to span tasks and single- or multi-label sequence tasks")
        need(task.fuse_ngram or not task.fuse_ngram_train,
             f"tasks[{i}].fuse_ngram_train needs fuse_ngram: true (it is the fused n-gram's extra training data)")
        if task.gate is not None:
            gate = next((t for t in config.tasks if t.name == task.gate), None)
            need(task.kind.gated and gate is not None and gate.kind.single_label(gate.problem),
                 f"tasks[{i}].gate must name a single-label sequence task of this config, got {task.gate!r}")
    overfit = config.trainer.overfit_batches
    need(isinstance(overfit, int) or overfit <= 1.0,
         f"trainer.overfit_batches as a float is a share of the batches, in [0, 1], got {overfit!r}")
    need(isinstance(config.align.snap, SnapMode),
         f"align.snap must be one of {SnapMode.values()}, got {config.align.snap!r}")
    need(config.context.mode in CONTEXT_MODES,
         f"context.mode must be one of {CONTEXT_MODES}, got {config.context.mode!r}")
    enc = config.model.encoder
    need((enc.name_or_path is None) != (enc.scratch is None),
         "model.encoder needs exactly one of 'name_or_path' (hub id or local directory) or 'scratch'")
    need(config.model.stride < config.model.max_length // 2, "model.stride must be under half of model.max_length")
    if enc.scratch is not None:
        check_scratch_shape(enc.scratch, "model.encoder.scratch", need)
    need(enc.scratch is None or config.model.max_length <= enc.scratch.max_position,
         f"model.max_length ({config.model.max_length}) is longer than the scratch encoder's position table "
         f"(model.encoder.scratch.max_position: {enc.scratch.max_position if enc.scratch else None})")
    need(config.model.pooling in POOLINGS, f"model.pooling must be one of {', '.join(POOLINGS)}, "
                                           f"got {config.model.pooling!r}")
    need(config.trainer.monitor_mode in ("min", "max"), "trainer.monitor_mode must be 'min' or 'max'")
    # The metric itself is known only once dev is scored; a wrong split or task name is caught here,
    # not after the first epoch.
    monitor = config.trainer.monitor
    forms = ["dev/loss", "train/loss"] + [f"dev/{t.name}_loss" for t in config.tasks]
    need(monitor in forms or any(monitor.startswith(f"dev/{t.name}/") and len(monitor) > len(t.name) + 5
                                 for t in config.tasks),
         f"trainer.monitor {monitor!r} names no metric of this config: use one of {', '.join(forms)} "
         f"or dev/<task>/<metric> with a task of {[t.name for t in config.tasks]} (e.g. dev/{config.tasks[0].name}/"
         f"{config.tasks[0].kind.main_metric})")
    if config.data.perspective is not None:
        need(bool(config.data.perspective.label), "data.perspective.label is empty (the annotation label to predict)")
    sources = config.data.negative_sources()
    need(config.data.negatives != [], "data.negatives is an empty list: give a source, or null for none")
    for i, negatives in enumerate(sources):
        key = "data.negatives" + (f"[{i}]" if isinstance(config.data.negatives, list) else "")
        need(bool(negatives.reader) and bool(negatives.path), f"{key} needs a reader and a path")
        need(bool(negatives.labels),
             f"{key}.labels is empty: say which labels a benign text has, e.g. {{toxic: false}}")
        need(0.0 <= negatives.holdout_fraction < 1.0,
             f"{key}.holdout_fraction is a share, in [0, 1), got {negatives.holdout_fraction!r}")
        need(negatives.limit is None or negatives.limit >= 1,
             f"{key}.limit must be at least 1 or null, got {negatives.limit!r}")
        need(negatives.holdout_fraction + negatives.dev_fraction < 1.0,
             f"{key}: holdout_fraction + dev_fraction must leave texts to train on, got "
             f"{negatives.holdout_fraction!r} + {negatives.dev_fraction!r}")
        need(not (negatives.keep_spans and negatives.holdout_fraction),
             f"{key}.keep_spans: a source of positives holds nothing out as benign; set holdout_fraction: 0")


def check_scratch_shape(scratch: ScratchEncoderConfig, key: str, need: Callable[[bool, str], None]) -> None:
    """A scratch encoder's sizes fit together: its width splits evenly into its attention heads."""
    need(scratch.hidden_size % scratch.heads == 0,
         f"{key}.hidden_size ({scratch.hidden_size}) must be a multiple of {key}.heads ({scratch.heads}): "
         "each head reads an equal slice of the width")


def check_evasion(evasion: EvasionConfig, need: Callable[[bool, str], None]) -> None:
    """The values of `data.augment.evasion`: known kinds, at least one (its shares are bounded by the schema)."""
    key = "data.augment.evasion"
    need(bool(evasion.kinds), f"{key}.kinds is empty; name at least one of {EvasionKind.values()}")
    for i, kind in enumerate(evasion.kinds):
        need(isinstance(kind, EvasionKind), f"{key}.kinds[{i}] must be one of {EvasionKind.values()}, got {kind!r}")
    need(isinstance(evasion.targets, Targets),
         f"{key}.targets must be one of {Targets.values()}, got {evasion.targets!r}")


def check_pretrain_config(config: PretrainConfig, where: str) -> None:
    """Value checks of a pretraining config (reader names are checked by `read_texts`, a layer above).

    Example:
        >>> from kold_span.config.schema import TextSource
        >>> check_pretrain_config(PretrainConfig(texts=[TextSource(file="a.txt")]), "p.yaml")
        >>> check_pretrain_config(PretrainConfig(texts=[TextSource(file="a.txt")], mlm_probability=1.5),
        ...                       "p.yaml")
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: p.yaml: key 'mlm_probability' must be in (0, 1), got 1.5
    """
    check_bounds(config, where)
    need = value_checker(where)
    need(bool(config.texts), "at least one entry under 'texts' is required")
    for i, source in enumerate(config.texts):
        kinds = [k for k in ("reader", "file", "beep_unlabeled") if getattr(source, k)]
        need(len(kinds) == 1, f"texts[{i}] needs exactly one of 'reader' (with 'path'), 'file' or "
                              f"'beep_unlabeled', got {kinds or 'none'}")
        if source.reader:
            need(bool(source.path), f"texts[{i}].path is required with 'reader'")
        else:
            need(source.path is None and not source.options,
                 f"texts[{i}]: 'path' and 'options' go only with 'reader'")
    need(config.encoder.tokenizer in ("wordpiece", "unigram"),
         f"encoder.tokenizer must be 'wordpiece' or 'unigram', got {config.encoder.tokenizer!r}")
    check_scratch_shape(config.encoder, "encoder", need)
    need(config.max_length <= config.encoder.max_position,
         f"max_length must be between 8 and encoder.max_position ({config.encoder.max_position})")
