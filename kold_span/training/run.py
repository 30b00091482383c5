"""`kold-span train`: build → fit → calibrate → save_and_score, one function each.

`build` reads the data and makes the tokenizer, encoder, data module and Lightning module;
`fit` trains them (`trainer_for`) and loads the best checkpoint's weights; `calibrate`
(`training.calibration`) makes the choices on dev; `save_and_score` saves the calibrated model directory,
scores it (`training.evaluators`) and writes metrics.json. `train` runs the four in order, in the
run's folder (`training.run_folder`).
"""
from __future__ import annotations

import logging
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from kold_span.config.schema import Config, TrainerConfig
from kold_span.data.atomic import check_replaceable, write_text_atomic
from kold_span.data.example import Example, context_turns, label_str
from kold_span.data.jsonl import finite_or_null, json_text
from kold_span.errors import ArgumentError, ConfigError, DataError, NonFiniteError, OutputTargetError
from kold_span.evaluation.operating_points import decision_label
from kold_span.evaluation.task_scores import benign_scores
from kold_span.models.kinds import Decoding, build_tasks
from kold_span.models.model_dir import MODEL_DIRECTORY, is_model_dir
from kold_span.models.tasks import Task
from kold_span.text.normalize import normalize_example
from kold_span.text.perturb import disguised, disguised_copies
from kold_span.training.calibration import Calibration, NgramExtra, calibrate, ngram_extra
from kold_span.training.evaluators import dev_evaluator, evaluate_predictor, scores_by_trait
from kold_span.training.run_folder import launched_worker, run_directory, run_lock

log = logging.getLogger(__name__)
DEV_PERTURBED = "dev_perturbed"  # the disguised dev split of data.augment.evasion

if TYPE_CHECKING:
    from kold_span.inference.predictor import Predictor
    from kold_span.models.network import MultiTaskModel
    from kold_span.training.datamodule import WindowsDataModule
    from kold_span.training.module import MultiTaskModule


@dataclass
class RunResult:
    """What `train` returns: where the run is, its model directory and its metrics.json content."""

    run_dir: Path
    model_dir: Optional[Path]
    metrics: dict[str, Any]


@dataclass
class Built:
    """What a run trains: its directory, data and tasks, the tokenizer and the Lightning pieces."""

    config: Config
    run_dir: Path
    splits: dict[str, list[Example]]
    extra: NgramExtra  # the examples offered to n-gram companions (read before training: a bad file fails first)
    tasks: list[Task]
    tokenizer: Any
    datamodule: WindowsDataModule
    module: MultiTaskModule


@dataclass
class Fitted:
    """A trained model, holding its best checkpoint's weights, and what its fit reports."""

    model: MultiTaskModel
    best_checkpoint: str  # the best checkpoint's path; last.ckpt's when no score picked one
    best_score: Optional[float]  # the monitored score of the best checkpoint (None before any was taken)
    monitor: str  # the monitored metric: trainer.monitor, or train/loss without a dev split


def train(config: Config, resume: bool = False, quiet: bool = False, overwrite: bool = False) -> RunResult:
    """Train one run end to end and export its best checkpoint, calibrated, as a model directory.

    The run folder is locked for the whole run (`run_lock`): a second run into it is refused at once.
    Its `model/` is replaced whole at the end (`Predictor.save_pretrained`), so a run stopped while it
    exports leaves the model that was there; a `model/` that holds something else than a model is
    refused before training unless `overwrite`. `resume` continues the run's last checkpoint (`run_directory` says
    which run); `quiet` shows no progress bar or model summary. Returns the run directory, the model directory and
    the metrics written to metrics.json; under distributed training, the processes other than the first return no
    model and no metrics.
    """
    started = time.time()
    run_dir = run_directory(config, resume)
    with run_lock(run_dir):
        if not launched_worker():
            check_replaceable(run_dir / "model", is_model_dir, MODEL_DIRECTORY, overwrite)
            if not resume and not overwrite:
                check_no_unfinished_run(run_dir)
        built = build(config, resume, run_dir)
        fitted = fit(built, resume, quiet)
        if fitted is None:
            return RunResult(built.run_dir, None, {})
        trained = predictor_for(config, fitted.model, built.tokenizer, built.tasks)
        calibration = calibrate(config.tasks, trained, built.splits, built.extra, config.context.mode != "none",
                                config.trainer.eval_batch_size)
        return save_and_score(built, fitted, trained, calibration, started, overwrite)


def check_no_unfinished_run(run_dir: Path) -> None:
    """An `OutputTargetError` when `run_dir` holds an unfinished run: a last checkpoint and no model exported after
    it (a run killed midway, or a rerun of a finished one killed midway). A fresh run would start it over and write
    its checkpoint over that one: the epochs done would be lost without a word."""
    last = run_dir / "checkpoints" / "last.ckpt"
    model = run_dir / "model"
    if not last.exists() or is_model_dir(model) and model.stat().st_mtime >= last.stat().st_mtime:
        return
    raise OutputTargetError(f"{run_dir} holds an unfinished run ({last}, no model exported after it): --resume "
                            "continues it; --overwrite starts it over; or name another run (run=NAME)")


def build(config: Config, resume: bool = False, run_dir: Optional[Path] = None) -> Built:
    """The data, tokenizer, encoder, data module and Lightning module of a run, in its run directory.

    Seeds everything first, so the encoder's initial weights follow `config.seed`. The run
    directory (`run_directory`, unless given) is created only once the data has been read: a run
    that fails on its data leaves none.
    """
    import pytorch_lightning as pl
    import torch

    from kold_span.corpora.experiment import load_splits
    from kold_span.inference.runtimes import cpu_has_bf16
    from kold_span.models.network import MultiTaskModel
    from kold_span.models.windows import InputEncoder
    from kold_span.training.datamodule import WindowsDataModule
    from kold_span.training.module import MultiTaskModule

    check_trainer_settings(config.trainer)
    slow = emulated_bf16_warning(config.trainer, torch.cuda.is_available(), cpu_has_bf16())
    if slow:
        warnings.warn(slow, stacklevel=3)
    if config.trainer.threads:
        torch.set_num_threads(config.trainer.threads)
    run_dir = run_dir or run_directory(config, resume)
    pl.seed_everything(config.seed, workers=True, verbose=False)

    # Disguised first, then normalized: with both on, the model trains on what the normalizer leaves of a disguise.
    splits = with_evasion(config, load_splits(config))
    extra = ngram_extra(config, splits)  # held out by the texts as read
    splits, extra = normalized_splits(splits, extra, config.normalize.steps())
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / "config.json", json_text(config.to_dict(), indent=1))
    tasks = build_tasks(config.tasks, splits["train"])
    check_label_variety(config, tasks, splits["train"])
    check_decision_labels(config, tasks)
    tokenizer, encoder = tokenizer_and_encoder(config, splits["train"], run_dir / "tokenizer")
    inputs = InputEncoder(tokenizer, config.model.max_length, config.model.stride,
                          config.context.mode, config.context.max_turns)
    tc = config.trainer
    datamodule = WindowsDataModule(splits, tasks, inputs, tc.batch_size, tc.eval_batch_size, tc.num_workers,
                                   cache_dir=Path(config.output_dir) / ".cache",
                                   group_by_length=tc.group_by_length, seed=config.seed,
                                   val_splits=("dev", DEV_PERTURBED))
    datamodule.setup()
    evaluators = {split: dev_evaluator(Decoding(tasks, config.align.snap, config.align.trim), splits[split],
                                       datamodule.window_meta(split))
                  for split in ("dev", DEV_PERTURBED) if splits.get(split)}
    model = MultiTaskModel(encoder, tasks, config.model.dropout, config.model.pooling)
    return Built(config, run_dir, splits, extra, tasks, tokenizer, datamodule,
                 MultiTaskModule(model, tasks, tc, evaluators.get("dev"), evaluators.get(DEV_PERTURBED)))


def with_evasion(config: Config, splits: dict[str, list[Example]]) -> dict[str, list[Example]]:
    """`data.augment.evasion`: disguised copies of a share of train added to it, and a disguised dev beside dev.

    Off (the key is null), the splits come back as they are. The disguised dev (`dev_perturbed`)
    holds every dev example with one kind drawn for it, gold spans mapped; it is scored after each
    epoch and at the end, never used to choose checkpoints, thresholds or fusion weights.
    """
    evasion = config.data.augment.evasion
    if evasion is None:
        return splits
    seed = config.seed if evasion.seed is None else evasion.seed
    copies = disguised_copies(splits["train"], evasion.kinds, evasion.probability, seed,
                              evasion.word_probability, evasion.targets)
    out = {**splits, "train": splits["train"] + copies}
    if evasion.dev and splits["dev"]:
        out[DEV_PERTURBED] = disguised(splits["dev"], evasion.kinds, seed, evasion.word_probability, evasion.targets)
    log.info("data.augment.evasion: %d disguised copies added to %d training examples%s", len(copies),
             len(splits["train"]), "; dev also scored disguised" if DEV_PERTURBED in out else "")
    return out


def normalized_splits(splits: dict[str, list[Example]], extra: NgramExtra, steps: Optional[Sequence[str]]
                      ) -> tuple[dict[str, list[Example]], NgramExtra]:
    """Every split and extra n-gram file as the model reads them (`normalize.enabled`): texts
    normalized, gold spans moved onto them.

    Dev and test are then scored on the normalized text; the exported model normalizes its inputs
    with the same steps and maps its spans back to the text it was given.
    """
    if steps is None:
        return splits, extra
    splits = {name: [normalize_example(e, steps) for e in examples] if examples else examples
              for name, examples in splits.items()}
    extra = {task: ([normalize_example(e, steps) for e in kept], left_out) for task, (kept, left_out) in extra.items()}
    return splits, extra


def check_label_variety(config: Config, tasks: Sequence[Task], train: Sequence[Example]) -> None:
    """Warn when a single-label sequence task sees one label only in training; fail if its n-gram is fused.

    The n-gram needs two classes: failing here spares a training run that could not be calibrated.
    """
    for cfg, task in zip(config.tasks, tasks):
        if not task.kind.single_label(task.problem):
            continue
        seen = {label_str(ex.labels[task.source]) for ex in train if ex.labels.get(task.source) is not None}
        if len(seen) == 1:
            message = (f"task {task.name!r}: every training example has the label {seen.pop()!r} (data.limit "
                       "keeps the first examples of the file, and some corpora are sorted by label)")
            if cfg.fuse_ngram:
                raise DataError(message)
            warnings.warn(message, stacklevel=4)


def check_decision_labels(config: Config, tasks: Sequence[Task]) -> None:
    """Refuse a `decision:` label its task cannot be cut on, once the labels are known: before training, not at its
    end, where the policies are chosen."""
    for i, (cfg, task) in enumerate(zip(config.tasks, tasks)):
        if cfg.decision is not None:
            try:
                decision_label(task, cfg.decision.label)
            except ArgumentError as err:
                raise ConfigError(f"tasks[{i}].decision.label: {err}") from None


def tokenizer_and_encoder(config: Config, train: Sequence[Example], tokenizer_dir: Path) -> tuple[Any, Any]:
    """The run's tokenizer and encoder, checked to read windows of `model.max_length` tokens.

    A scratch encoder's tokenizer is trained on `train` and saved in `tokenizer_dir`; when one is
    already there (resuming, or re-running a run), it is the one the checkpoints were trained with.
    """
    from transformers import AutoTokenizer

    from kold_span.models.backbones import (attach_morpheme_pretokenizer, build_encoder, check_vocabulary,
                                            save_tokenizer, scratch_encoder)

    scratch = config.model.encoder.scratch
    if scratch is not None and (tokenizer_dir / "tokenizer.json").exists():
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), trust_remote_code=False)
        if scratch.morpheme_pretokenize:
            attach_morpheme_pretokenizer(tokenizer)
        encoder = scratch_encoder(scratch, len(tokenizer), tokenizer.pad_token_id)
    else:
        tokenizer, encoder = build_encoder(config.model.encoder, tokenizer_texts(train))
        save_tokenizer(tokenizer, tokenizer_dir)
    name = config.model.encoder.name_or_path
    check_vocabulary(tokenizer, encoder, f"model.encoder.name_or_path={name}" if name else "model.encoder.scratch",
                     ConfigError)
    check_window_length(encoder, config.model.max_length)
    if config.model.encoder.freeze_word_embeddings:
        encoder.get_input_embeddings().weight.requires_grad_(False)
    return tokenizer, encoder


def fit(built: Built, resume: bool = False, quiet: bool = False) -> Optional[Fitted]:
    """Train `built.module` with Lightning and load its best checkpoint's weights into the model.

    Returns None in the processes of distributed training other than the first: only that one exports.
    """
    import torch

    trainer, checkpoint, monitor = lightning_trainer(built, quiet)
    last = built.run_dir / "checkpoints" / "last.ckpt"
    trainer.fit(built.module, datamodule=built.datamodule, ckpt_path=str(last) if resume and last.exists() else None)
    if not trainer.is_global_zero:
        return None
    best = checkpoint.best_model_path or str(last)
    if best and Path(best).exists():
        built.module.load_state_dict(torch.load(best, map_location="cpu", weights_only=True)["state_dict"])
    best_score = checkpoint.best_model_score
    return Fitted(built.module.model, best, None if best_score is None else float(best_score), monitor)


def lightning_trainer(built: Built, quiet: bool = False):
    """(the Lightning Trainer, its best-model checkpoint callback, the monitored metric) for a run."""
    from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint

    tc, run_dir = built.config.trainer, built.run_dir
    has_dev = bool(built.splits["dev"])
    monitor = tc.monitor if has_dev else "train/loss"
    checkpoint = ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="best", monitor=monitor,
                                 mode=tc.monitor_mode if has_dev else "min", save_top_k=1,
                                 auto_insert_metric_name=False)
    callbacks: list[Any] = [checkpoint]
    if tc.early_stopping_patience and has_dev:
        # Checked after each validation only: an epoch cut short by max_steps has no dev score to read.
        callbacks.append(EarlyStopping(monitor=monitor, mode=tc.monitor_mode, patience=tc.early_stopping_patience,
                                       check_on_train_epoch_end=False))
    trainer = trainer_for(tc, run_dir, quiet, callbacks, limit_val_batches=None if has_dev else 0)
    return trainer, checkpoint, monitor


# The trainer keys that go to Lightning's Trainer as they are, the machine's first: Lightning checks them all.
LIGHTNING_KEYS = ("accelerator", "devices", "strategy", "precision", "num_nodes", "max_epochs", "max_steps",
                  "accumulate_grad_batches", "gradient_clip_val", "log_every_n_steps", "check_val_every_n_epoch",
                  "deterministic", "overfit_batches")


def check_trainer_settings(tc: TrainerConfig, prefix: str = "trainer.") -> None:
    """A `ConfigError` naming the trainer key Lightning refuses (an unknown accelerator, strategy or precision,
    GPUs this machine lacks, a value out of its range), before any data is read; and more CPU processes than the
    machine has CPUs.

    Lightning is asked by building a Trainer of these settings, which starts nothing. Its
    message names what it refuses; the key named first in it is the key reported, after `prefix`
    (pretraining's config has these keys at its top).
    """
    import pytorch_lightning as pl

    settings = {key: getattr(tc, key) for key in LIGHTNING_KEYS if hasattr(tc, key)}
    shown = ", ".join(f"{prefix}{key}={value!r}" for key, value in list(settings.items())[:5])
    lightning_log = logging.getLogger("pytorch_lightning")
    level = lightning_log.level
    try:
        # Quiet: "GPU available: False" and the like are said again by the Trainer that trains.
        lightning_log.setLevel(logging.WARNING)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer = pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                                 enable_model_summary=False, **settings)
    except Exception as err:  # Lightning's MisconfigurationException, ValueError, TypeError, a missing package
        message = " ".join(str(err).split())[:300]
        named = min((key for key in settings if key in message.lower()), key=message.lower().find, default=None)
        keys = f"{prefix}{named}={settings[named]!r}" if named else shown
        raise ConfigError(f"{keys}: Lightning cannot train with it ({type(err).__name__}: {message})") from None
    finally:
        lightning_log.setLevel(level)
    cpus = os.cpu_count() or 1
    if trainer.accelerator.__class__.__name__ == "CPUAccelerator" and trainer.num_devices > cpus:
        raise ConfigError(f"{prefix}devices={tc.devices!r}: {trainer.num_devices} training processes on a machine of "
                          f"{cpus} CPUs; use at most {cpus} (or accelerator: gpu)")


def trainer_for(tc: TrainerConfig, run_dir: Path, quiet: bool = False, callbacks: Sequence[Any] = (),
                latest: Optional[Any] = None, **options: Any):
    """The Lightning Trainer of `train` and `pretrain`, with `callbacks` and Trainer `options` added.

    It writes checkpoints/last.ckpt every epoch (`latest` replaces the ModelCheckpoint that does)
    and every `tc.checkpoint_every_n_steps` optimizer steps inside one, random state and the
    training loader's place in the epoch included; logs the learning rate, CSV and TensorBoard
    logs, progress lines off a terminal; averages weights with `tc.ema_decay`; and stops with a
    `NonFiniteError` at a loss or gradient norm that is not finite (`training.divergence`).
    """
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import LearningRateMonitor, ModelCheckpoint
    from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger

    from kold_span.training.averaging import WeightEMA
    from kold_span.training.divergence import StopOnNonFinite
    from kold_span.training.progress import progress_callbacks
    from kold_span.training.resume import LoaderPosition, RandomState, StepCheckpoint

    # last.ckpt is written every epoch by a checkpoint of its own: since Lightning 2.6, save_last on the
    # best-model checkpoint writes it only in epochs with a new best, so --resume would go back to that.
    if latest is None:
        latest = ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="last", monitor=None, save_top_k=1,
                                 enable_version_counter=False)
    callbacks = [*callbacks, latest, LearningRateMonitor(logging_interval="step"), RandomState(),
                 LoaderPosition(), StopOnNonFinite()]
    every = getattr(tc, "checkpoint_every_n_steps", None)  # pretrain's config has no such key
    if every:
        callbacks.append(StepCheckpoint(dirpath=run_dir / "checkpoints", filename="last", monitor=None, save_top_k=1,
                                        every_n_train_steps=every, enable_version_counter=False))
    callbacks += progress_callbacks(quiet)  # a line every 30 s when stderr is no terminal (nohup, a scheduler)
    if tc.ema_decay is not None:
        callbacks.append(WeightEMA(tc.ema_decay))
    # One version folder per session (logs/version_0, version_1 after --resume): nothing is overwritten.
    version = f"version_{len(list((run_dir / 'logs').glob('version_*')))}"
    loggers = [CSVLogger(run_dir, name="logs", version=version),
               TensorBoardLogger(run_dir, name="logs", version=version)]
    settings = dict(
        accelerator=tc.accelerator, devices=tc.devices, strategy=tc.strategy, num_nodes=tc.num_nodes,
        precision=tc.precision, max_epochs=tc.max_epochs, max_steps=tc.max_steps,
        accumulate_grad_batches=tc.accumulate_grad_batches, gradient_clip_val=tc.gradient_clip_val,
        callbacks=callbacks, logger=loggers, log_every_n_steps=tc.log_every_n_steps,
        check_val_every_n_epoch=tc.check_val_every_n_epoch, deterministic=tc.deterministic,
        enable_progress_bar=tc.progress_bar and not quiet, enable_model_summary=not quiet,
        overfit_batches=tc.overfit_batches, num_sanity_val_steps=0, default_root_dir=str(run_dir))
    return pl.Trainer(**{**settings, **options})


def predictor_for(config: Config, model: MultiTaskModel, tokenizer: Any, tasks: Sequence[Task]) -> Predictor:
    """The trained model as an uncalibrated `Predictor` on the CPU, reading inputs as the run did."""
    from kold_span.inference.predictor import Predictor, PredictorSettings

    settings = PredictorSettings.from_run(config, getattr(tokenizer, "kold_morphemes", False))
    return Predictor(model.cpu(), tokenizer, tasks, settings, precision="fp32")  # dev scored alike on every CPU


def save_and_score(built: Built, fitted: Fitted, trained: Predictor, calibration: Calibration,
                   started: float, overwrite: bool = False) -> RunResult:
    """Save the calibrated model directory, score dev and test, write metrics.json; drop checkpoints if asked.

    Dev is scored with the n-grams fitted on train only (`Calibration.dev_companions`): refitted
    on train + dev first, they would make the fused dev scores look perfect. Test is scored with
    the model as saved.
    """
    from kold_span.corpora.experiment import BENIGN

    config, splits, run_dir = built.config, built.splits, built.run_dir
    tc = config.trainer
    results: dict[str, Any] = {"experiment": config.experiment, "run": run_dir.name,
                               "best_checkpoint": fitted.best_checkpoint if tc.keep_checkpoints else None,
                               "best_dev_score": fitted.best_score, "monitor": fitted.monitor,
                               "sizes": {k: len(v) for k, v in splits.items()}}
    for split in ("dev", DEV_PERTURBED):
        if splits.get(split):
            results[split] = evaluate_predictor(calibration.apply_to(trained, dev=True), splits[split],
                                                tc.eval_batch_size)
    predictor = calibration.apply_to(trained)
    model_dir = predictor.save_pretrained(run_dir / "model", overwrite=overwrite)
    if splits["test"]:
        results["test"] = evaluate_predictor(predictor, splits["test"], tc.eval_batch_size)
    if splits.get(BENIGN):  # held-out negatives (data.negatives): how many the saved model flags
        benign = splits[BENIGN]
        rows = predictor.predict([e.text for e in benign], [e.context for e in benign], tc.eval_batch_size)
        results[BENIGN] = benign_scores(predictor.tasks, benign, rows)
    if config.data.perspective and splits["test"]:
        results["test_by_trait"] = scores_by_trait(predictor, splits["test"], config.data.perspective.traits,
                                                   tc.eval_batch_size)
    if calibration.fusion:
        results["ngram_fusion"] = calibration.fusion
    if calibration.thresholds:
        results["thresholds"] = calibration.thresholds
    if calibration.temperature_report:  # ECE before and after, on dev (test's after is test/<task>/ece)
        results["temperature"] = calibration.temperature_report
    if calibration.decisions or calibration.decision_errors:
        results["decision"] = {**calibration.decisions, **{f"{name}/unmet": message
                                                           for name, message in calibration.decision_errors.items()}}
    results["seconds"] = round(time.time() - started, 1)
    write_text_atomic(run_dir / "metrics.json", json_text(finite_or_null(results), indent=1))
    if not tc.keep_checkpoints:
        # The best weights live on in model/; the Lightning checkpoints (weights and optimizer
        # state, twice) are what makes a run directory large.
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    return RunResult(run_dir, model_dir, results)


def tokenizer_texts(examples: list[Example]) -> list[str]:
    """Texts and contexts a scratch tokenizer is trained on."""
    contexts = sorted({turn for ex in examples for turn in context_turns(ex.context)})
    return [ex.text for ex in examples] + contexts


def check_window_length(encoder: Any, max_length: int) -> None:
    """A `ConfigError` unless the encoder reads a window of `max_length` tokens (one forward pass of one window),
    and a `NonFiniteError` if what it gives is not finite.

    Asking the model is the one check that holds for every architecture: RoBERTa-style encoders
    reserve position slots for padding, others count positions from zero.
    """
    import torch

    ids = torch.zeros((1, max_length), dtype=torch.long)
    try:
        with torch.no_grad():
            output = encoder(input_ids=ids, attention_mask=torch.ones_like(ids))
    except (IndexError, RuntimeError) as err:
        limit = getattr(getattr(encoder, "config", None), "max_position_embeddings", None)
        raise ConfigError(f"model.max_length={max_length}: the encoder cannot read windows that long (its "
                          f"max_position_embeddings is {limit}; RoBERTa-style encoders keep 2 of them for "
                          "padding); lower model.max_length (long texts are read in overlapping windows)") from err
    if not bool(torch.isfinite(output[0]).all()):
        raise NonFiniteError("the encoder's outputs are NaN or infinite before any training: its weights hold NaN, "
                             "or its config a value such as layer_norm_eps below 0")


def emulated_bf16_warning(trainer: TrainerConfig, cuda_available: bool, native_bf16: bool) -> Optional[str]:
    """The warning for bf16 autocast on a CPU without bf16 instructions, or None when it does not apply.

    Such a CPU emulates bf16 matrix products, many times slower than float32 ones (measured in
    docs/BENCHMARKS.md, "float32 vs bf16").

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
            "bf16 is emulated there and training runs many times slower than in float32 (docs/BENCHMARKS.md); "
            "--set trainer.precision=32-true trains in float32 instead")


