"""`kold-span train`: config → data → encoder → Lightning fit → exported model + metrics."""
from __future__ import annotations

import dataclasses
import json
import shutil
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from kold_span import corpora
from kold_span.config.schema import Config, TrainerConfig
from kold_span.data.example import Example, context_turns, label_set, label_str
from kold_span.data.perspectives import expand_by_annotator, trait_phrase
from kold_span.data.splits import keep_example
from kold_span.errors import ConfigError, DataError
from kold_span.evaluation.task_scores import score, tune_span_threshold
from kold_span.models.decoding import merge_windows
from kold_span.models.tasks import Task, build_tasks, tune_thresholds


@dataclass
class RunResult:
    run_dir: Path
    model_dir: Optional[Path]
    metrics: dict[str, Any]


def run_directory(config: Config, resume: bool) -> Path:
    """checkpoints/<experiment>/<run>; with --resume and no run name, the newest run."""
    base = Path(config.output_dir) / config.experiment
    if config.run:
        last = base / config.run / "checkpoints" / "last.ckpt"
        if resume and not last.exists():
            raise FileNotFoundError(f"--resume: {last} does not exist (a mistyped run name, a run that never "
                                    "finished an epoch, or one trained with trainer.keep_checkpoints: false)")
        return base / config.run
    if resume:
        runs = sorted((p for p in base.glob("*") if (p / "checkpoints" / "last.ckpt").exists()),
                      key=lambda p: p.stat().st_mtime)
        if not runs:
            raise FileNotFoundError(f"--resume: no run with checkpoints/last.ckpt under {base}")
        return runs[-1]
    return base / time.strftime("%Y%m%d-%H%M%S")


def dev_evaluator(tasks: Sequence[Task], examples: list[Example], meta: list[dict[str, Any]],
                  snap: str, trim: bool):
    """A function scoring dev outputs (window index → task probabilities)."""
    owners: dict[int, list[int]] = defaultdict(list)
    for w, m in enumerate(meta):
        owners[m["example_index"]].append(w)

    def evaluate(outputs: dict[int, dict[str, np.ndarray]]) -> dict[str, float]:
        merged = [merge_windows(tasks, [meta[w] for w in owners[i]], [outputs[w] for w in owners[i]])
                  for i in range(len(examples))]
        return score(tasks, examples, merged, snap, trim)
    return evaluate


def evaluate_predictor(predictor, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
    """Score a predictor on gold examples (all tasks)."""
    merged = predictor.merged_outputs([e.text for e in examples], [e.context for e in examples], batch_size)
    return score(predictor.tasks, examples, merged, predictor.snap, predictor.trim)


def scores_by_trait(predictor, examples: list[Example], traits: Sequence[str],
                    batch_size: int = 64) -> dict[str, dict[str, dict[str, float]]]:
    """PERSEID-style breakdown: the test scores of each annotator group, per trait."""
    merged = predictor.merged_outputs([e.text for e in examples], [e.context for e in examples], batch_size)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for trait in traits:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, ex in enumerate(examples):
            groups[str(trait_phrase(trait, ex.meta.get("traits", {}).get(trait)))].append(i)
        out[trait] = {value: {"n": len(idx), **score(predictor.tasks, [examples[i] for i in idx],
                                                     [merged[i] for i in idx], predictor.snap, predictor.trim)}
                      for value, idx in sorted(groups.items())}
    return out


def tune_dev_thresholds(config: Config, predictor, dev: list[Example]) -> dict[str, dict[str, float]]:
    """Set the thresholds of every task configured with `threshold: dev` from the dev split.

    A multi-label task gets each label's F1-best threshold; a span task the P(B) + P(I) threshold
    with the best mean char-F1 of the spans the predictor outputs (its snap and trim). Returns
    {task: {label: threshold}}, with the single key "inside" for a span task (the dev scores
    reported afterwards use these thresholds, so they are optimistic; test is untouched by the choice).
    """
    wanted = {t.name for t in config.tasks if t.threshold == "dev"}
    if not wanted or not dev:
        return {}
    merged = predictor.merged_outputs([e.text for e in dev], [e.context for e in dev], config.trainer.eval_batch_size)
    tuned: dict[str, dict[str, float]] = {}
    for i, task in enumerate(predictor.tasks):
        if task.name not in wanted:
            continue
        if task.kind == "span":
            threshold = tune_span_threshold(task, predictor.tasks, dev, merged, predictor.snap, predictor.trim)
            predictor.tasks[i] = dataclasses.replace(task, thresholds=(threshold,))
            tuned[task.name] = {"inside": threshold}
            continue
        labelled = [(ex, m) for ex, m in zip(dev, merged) if ex.labels.get(task.source) is not None]
        golds = [label_set(ex.labels[task.source]) for ex, _ in labelled]
        thresholds = tune_thresholds(task, golds, [m.sequence_probs[task.name] for _, m in labelled])
        predictor.tasks[i] = dataclasses.replace(task, thresholds=thresholds)
        tuned[task.name] = dict(zip(task.labels, thresholds))
    return tuned


def ngram_extra(config: Config, splits: dict[str, list[Example]]) -> dict[str, tuple[list[Example], int]]:
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


def fit_companions(config: Config, predictor, splits: dict[str, list[Example]],
                   extra: Optional[dict[str, tuple[list[Example], int]]] = None) -> dict[str, Any]:
    """Fit and attach the n-gram model of every task configured with `fuse_ngram` (see kold_span.models.ngram).

    `extra` is `ngram_extra`'s result: the examples each task's n-gram may also learn from.
    Returns {task: summary} (weight, n-gram variant, dev scores by weight; weight 1.0 is the
    encoder alone; with extra examples offered, how many were offered, left out and taken).
    The attached n-grams are fitted on train (and extra) only, as for the choice, so that dev
    can still score the fused model (dev thresholds, the reported dev scores, optimistic since
    the weight was chosen there); `refit_companions` then fits them on train + dev.
    """
    from kold_span.training.calibration import choose_companion

    wanted = {t.name: t for t in config.tasks if t.fuse_ngram}
    if not wanted:
        return {}
    merged = predictor.merged_outputs([e.text for e in splits["dev"]], [e.context for e in splits["dev"]],
                                      config.trainer.eval_batch_size)
    summaries = {}
    for task in predictor.tasks:
        if task.name not in wanted:
            continue
        labelled = [(ex, m) for ex, m in zip(splits["dev"], merged) if ex.labels.get(task.source) is not None]
        dev_probs = [dict(zip(task.labels, map(float, m.sequence_probs[task.name]))) for _, m in labelled]
        offered, left_out = (extra or {}).get(task.name, ([], 0))
        companion = choose_companion(task.name, task.source, task.problem, splits["train"],
                                     [ex for ex, _ in labelled], dev_probs, wanted[task.name].fuse_metric,
                                     allow_context=config.context.mode != "none", extra=offered, refit=False)
        predictor.companions[task.name] = companion
        summaries[task.name] = companion.summary()
        if wanted[task.name].fuse_ngram_train:
            summaries[task.name].update({"extra_offered": len(offered), "extra_left_out": left_out})
    return summaries


def refit_companions(config: Config, predictor, splits: dict[str, list[Example]],
                     extra: Optional[dict[str, tuple[list[Example], int]]] = None) -> None:
    """Fit each attached n-gram again on train + dev (+ the extra examples it took), as it is saved."""
    from kold_span.training.calibration import refit_companion, taken_extra

    sources = {t.name: t.source for t in config.tasks}
    for name, companion in predictor.companions.items():
        dev = [ex for ex in splits["dev"] if ex.labels.get(sources[name]) is not None]
        taken = taken_extra(companion, (extra or {}).get(name, ([], 0))[0])
        predictor.companions[name] = refit_companion(companion, list(splits["train"]) + dev + taken)


def tokenizer_texts(examples: list[Example]) -> list[str]:
    """Texts and contexts a scratch tokenizer is trained on."""
    texts = [ex.text for ex in examples]
    texts += sorted({turn for ex in examples for turn in context_turns(ex.context)})
    return texts


def check_window_length(encoder: Any, max_length: int) -> None:
    """A `ConfigError` unless the encoder reads a window of `max_length` tokens (one forward pass of one window).

    Asking the model is the one check that holds for every architecture: RoBERTa-style encoders
    reserve position slots for padding, others count positions from zero.
    """
    import torch

    ids = torch.zeros((1, max_length), dtype=torch.long)
    try:
        with torch.no_grad():
            encoder(input_ids=ids, attention_mask=torch.ones_like(ids))
    except (IndexError, RuntimeError) as err:
        limit = getattr(getattr(encoder, "config", None), "max_position_embeddings", None)
        raise ConfigError(f"model.max_length={max_length}: the encoder cannot read windows that long (its "
                          f"max_position_embeddings is {limit}; RoBERTa-style encoders keep 2 of them for "
                          "padding); lower model.max_length (long texts are read in overlapping windows)") from err


def emulated_bf16_warning(trainer: TrainerConfig, cuda_available: bool, native_bf16: bool) -> Optional[str]:
    """The warning for bf16 autocast on a CPU without bf16 instructions, or None when it does not apply.

    Such a CPU emulates bf16 matrix products: one epoch of multilingual-e5-small on a 2-core AMD EPYC
    with AVX2 took 23x as long as in float32 (docs/BENCHMARKS.md, "float32 vs bf16").

    Example:
        >>> emulated_bf16_warning(TrainerConfig(precision="bf16-mixed"), False, True) is None
        True
        >>> emulated_bf16_warning(TrainerConfig(precision="bf16-mixed"), False, False)[:40]
        'trainer.precision=bf16-mixed on a CPU wi'
    """
    if not trainer.precision.startswith("bf16") or native_bf16:
        return None
    if trainer.accelerator not in ("cpu", "auto") or (trainer.accelerator == "auto" and cuda_available):
        return None
    return (f"trainer.precision={trainer.precision} on a CPU without bf16 instructions (AVX512-BF16 or AMX): "
            "bf16 is emulated there and training runs many times slower than in float32 (23x for "
            "multilingual-e5-small on a 2-core AVX2 machine, docs/BENCHMARKS.md); "
            "--set trainer.precision=32-true trains in float32 instead")


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bf16 instructions torch uses (AVX512-BF16, or AMX); True when torch cannot tell."""
    import torch

    probes = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    if any(probe is None for probe in probes):
        return True
    return any(probe() for probe in probes)


def train(config: Config, resume: bool = False, quiet: bool = False) -> RunResult:
    """Train one run end to end and export its best checkpoint as a model directory."""
    import pytorch_lightning as pl
    import torch
    from pytorch_lightning.callbacks import (EarlyStopping, LearningRateMonitor, ModelCheckpoint)
    from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger
    from transformers import AutoTokenizer

    from kold_span.corpora.splits import load_splits
    from kold_span.inference.predictor import Predictor
    from kold_span.models.backbones import (attach_morpheme_pretokenizer, build_encoder, save_tokenizer,
                                            scratch_encoder)
    from kold_span.models.network import MultiTaskModel
    from kold_span.models.windows import InputEncoder
    from kold_span.training.averaging import WeightEMA
    from kold_span.training.datamodule import WindowsDataModule
    from kold_span.training.module import MultiTaskModule
    from kold_span.training.progress import progress_callbacks
    from kold_span.training.resume import RandomState

    started = time.time()
    slow = emulated_bf16_warning(config.trainer, torch.cuda.is_available(), cpu_has_native_bf16())
    if slow:
        warnings.warn(slow, stacklevel=2)
    if config.trainer.threads:
        torch.set_num_threads(config.trainer.threads)
    run_dir = run_directory(config, resume)
    pl.seed_everything(config.seed, workers=True, verbose=False)

    splits = load_splits(config)
    extra = ngram_extra(config, splits)
    # Only now: a run that fails on its data leaves no run directory behind.
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=1, ensure_ascii=False))
    tasks = build_tasks(config.tasks, splits["train"])
    for cfg, task in zip(config.tasks, tasks):
        if task.kind != "sequence" or task.problem != "single":
            continue
        seen = {label_str(ex.labels[task.source]) for ex in splits["train"] if ex.labels.get(task.source) is not None}
        if len(seen) == 1:
            message = (f"task {task.name!r}: every training example has the label {seen.pop()!r} (data.limit "
                       "keeps the first examples of the file, and some corpora are sorted by label)")
            if cfg.fuse_ngram:  # the n-gram needs two classes: fail now, not after training
                raise DataError(message)
            warnings.warn(message, stacklevel=2)
    scratch = config.model.encoder.scratch
    tokenizer_dir = run_dir / "tokenizer"
    if scratch is not None and (tokenizer_dir / "tokenizer.json").exists():
        # Resuming or re-running: the tokenizer the checkpoints were trained with.
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        if scratch.morpheme_pretokenize:
            attach_morpheme_pretokenizer(tokenizer)
        encoder = scratch_encoder(scratch, len(tokenizer), tokenizer.pad_token_id)
    else:
        tokenizer, encoder = build_encoder(config.model.encoder, tokenizer_texts(splits["train"]))
        save_tokenizer(tokenizer, tokenizer_dir)
    check_window_length(encoder, config.model.max_length)
    if config.model.encoder.freeze_word_embeddings:
        encoder.get_input_embeddings().weight.requires_grad_(False)
    inputs = InputEncoder(tokenizer, config.model.max_length, config.model.stride,
                          config.context.mode, config.context.max_turns)
    tc = config.trainer
    datamodule = WindowsDataModule(splits, tasks, inputs, tc.batch_size, tc.eval_batch_size, tc.num_workers,
                                   cache_dir=Path(config.output_dir) / ".cache",
                                   group_by_length=tc.group_by_length, seed=config.seed)
    datamodule.setup()
    evaluator = None
    if splits["dev"]:
        evaluator = dev_evaluator(tasks, splits["dev"], datamodule.window_meta("dev"), config.align.snap,
                                  config.align.trim)
    model = MultiTaskModel(encoder, tasks, config.model.dropout, config.model.pooling)
    module = MultiTaskModule(model, tasks, tc, evaluator)

    has_dev = bool(splits["dev"])
    monitor = tc.monitor if has_dev else "train/loss"
    checkpoint = ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="best", monitor=monitor,
                                 mode=tc.monitor_mode if has_dev else "min", save_top_k=1,
                                 auto_insert_metric_name=False)
    # last.ckpt is written every epoch by a checkpoint of its own: since Lightning 2.6, save_last on the
    # best-model checkpoint writes it only in epochs with a new best, so --resume would go back to that.
    latest = ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="last", monitor=None, save_top_k=1,
                             enable_version_counter=False)
    callbacks: list[Any] = [checkpoint, latest, LearningRateMonitor(logging_interval="step"), RandomState()]
    callbacks += progress_callbacks(quiet)  # a line every 30 s when stderr is no terminal (nohup, a scheduler)
    if tc.ema_decay is not None:
        callbacks.append(WeightEMA(tc.ema_decay))
    if tc.early_stopping_patience and has_dev:
        # Checked after each validation only: an epoch cut short by max_steps has no dev score to read.
        callbacks.append(EarlyStopping(monitor=monitor, mode=tc.monitor_mode, patience=tc.early_stopping_patience,
                                       check_on_train_epoch_end=False))
    # One version folder per session (logs/version_0, version_1 after --resume): nothing is overwritten.
    version = f"version_{len(list((run_dir / 'logs').glob('version_*')))}"
    loggers = [CSVLogger(run_dir, name="logs", version=version),
               TensorBoardLogger(run_dir, name="logs", version=version)]
    trainer = pl.Trainer(
        accelerator=tc.accelerator, devices=tc.devices, strategy=tc.strategy, num_nodes=tc.num_nodes,
        precision=tc.precision, max_epochs=tc.max_epochs, max_steps=tc.max_steps,
        accumulate_grad_batches=tc.accumulate_grad_batches, gradient_clip_val=tc.gradient_clip_val,
        callbacks=callbacks, logger=loggers, log_every_n_steps=tc.log_every_n_steps,
        check_val_every_n_epoch=tc.check_val_every_n_epoch, deterministic=tc.deterministic,
        enable_progress_bar=tc.progress_bar and not quiet, enable_model_summary=not quiet,
        overfit_batches=tc.overfit_batches, num_sanity_val_steps=0, default_root_dir=str(run_dir),
        limit_val_batches=None if has_dev else 0)
    last = run_dir / "checkpoints" / "last.ckpt"
    trainer.fit(module, datamodule=datamodule, ckpt_path=str(last) if resume and last.exists() else None)
    if not trainer.is_global_zero:
        return RunResult(run_dir, None, {})

    best = checkpoint.best_model_path or str(last)
    if best and Path(best).exists():
        state = torch.load(best, map_location="cpu", weights_only=True)["state_dict"]
        module.load_state_dict(state)
    predictor = Predictor(module.model.cpu(), tokenizer, tasks, max_length=config.model.max_length,
                          stride=config.model.stride, context_mode=config.context.mode,
                          max_turns=config.context.max_turns, snap=config.align.snap, trim=config.align.trim,
                          morpheme_pretokenize=getattr(tokenizer, "kold_morphemes", False),
                          perspective=dataclasses.asdict(config.data.perspective) if config.data.perspective else None)
    # Dev is scored (thresholds, then the reported scores) while the n-grams have seen train only:
    # refitted on train + dev first, they would make the fused dev probabilities look perfect.
    fused = fit_companions(config, predictor, splits, extra)
    tuned = tune_dev_thresholds(config, predictor, splits["dev"])
    results: dict[str, Any] = {"experiment": config.experiment, "run": run_dir.name,
                               "best_checkpoint": best if tc.keep_checkpoints else None,
                               "best_dev_score": _float(checkpoint.best_model_score), "monitor": monitor,
                               "sizes": {k: len(v) for k, v in splits.items()}}
    if splits["dev"]:
        results["dev"] = evaluate_predictor(predictor, splits["dev"], tc.eval_batch_size)
    refit_companions(config, predictor, splits, extra)
    model_dir = predictor.save_pretrained(run_dir / "model")
    if splits["test"]:
        results["test"] = evaluate_predictor(predictor, splits["test"], tc.eval_batch_size)
    if config.data.perspective and splits["test"]:
        results["test_by_trait"] = scores_by_trait(predictor, splits["test"], config.data.perspective.traits,
                                                   tc.eval_batch_size)
    if fused:
        results["ngram_fusion"] = fused
    if tuned:
        results["thresholds"] = tuned
    results["seconds"] = round(time.time() - started, 1)
    (run_dir / "metrics.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    if not tc.keep_checkpoints:
        # The best weights live on in model/; the Lightning checkpoints (weights and optimizer
        # state, twice) are what makes a run directory large.
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    return RunResult(run_dir, model_dir, results)


def _float(value: Any) -> Optional[float]:
    return None if value is None else float(value)
