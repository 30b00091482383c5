"""`kold-span pretrain`: masked-language-model pretraining of a scratch encoder on raw texts.

texts (corpus readers, plain text files, unlabeled BEEP!) → tokenizer trained on them →
`BertForMaskedLM` of the configured size, trained by `train`'s Lightning Trainer (`run.trainer_for`)
→ a local encoder directory that `encoders.load_pretrained(DIR)` loads (config + weights +
tokenizer, and a marker file re-attaching the Kiwi pre-tokenizer), to be named as
`model.encoder.name_or_path: DIR`; checkpoints and logs go to `DIR-run` (docs/ENCODERS.md).

The config (`config.schema.PretrainConfig`) is one YAML file, validated like the experiment
configs (a mistyped key fails with its name and the file):

    texts:
      - {beep_unlabeled: ../shared/data/beep}
      - {reader: unsmile, path: ../shared/data/unsmile}
      - {file: my_comments.txt}        # one text per line
    encoder: {vocab_size: 16000, hidden_size: 256, layers: 4, heads: 4, morpheme_pretokenize: true}
    max_steps: 2000
    output: checkpoints/pretrained/ko-beep-mlm
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Optional

import pytorch_lightning as pl
import torch

from kold_span.config.schema import PretrainConfig, TextSource, TrainerConfig
from kold_span.data.atomic import check_replaceable, replace_directory, write_text_atomic
from kold_span.data.jsonl import finite_or_null, json_text, require_path, utf8_lines
from kold_span.errors import DataError
from kold_span.training.optim import lightning_optimizers
from kold_span.training.sampling import LengthGroupedSampler

logger = logging.getLogger(__name__)

METRICS_FILE = "pretrain_metrics.json"
CONFIG_FILE = "pretrain_config.json"
PRETRAINED_ENCODER = "an encoder directory of kold-span pretrain"


@dataclass
class PretrainResult:
    """The saved encoder directory, its metrics, and the trained tokenizer and model in memory."""

    directory: Path
    metrics: dict[str, Any]
    tokenizer: Any
    model: Any  # the trained BertForMaskedLM (its encoder is `model.bert`)


def read_texts(sources: list[TextSource], include_context: bool) -> list[str]:
    """All non-blank texts of the sources, each once, in source order (every path and reader checked first)."""
    from kold_span import corpora
    from kold_span.training.run import tokenizer_texts

    for i, source in enumerate(sources):
        path = source.file or source.beep_unlabeled or source.path
        if path:
            require_path(path, f"texts[{i}]")
        if source.reader:
            corpora.get_reader(source.reader)
    texts: list[str] = []
    for i, source in enumerate(sources):
        if source.file:
            with Path(source.file).open("rb") as f:
                try:
                    texts += [line.rstrip("\r\n") for line in utf8_lines(f, source.file)]
                except DataError as err:
                    raise DataError(f"texts[{i}]: {err}") from None
            continue
        if source.beep_unlabeled:
            examples = corpora.read("beep", source.beep_unlabeled, unlabeled=True)
        else:
            examples = corpora.read(source.reader, source.path, **source.options)
        texts += tokenizer_texts(examples) if include_context else [ex.text for ex in examples]
    return list(dict.fromkeys(t.strip() for t in texts if t.strip()))


def masked_lm_loss(model, batch: dict[str, Any], reduction: str = "mean"):
    """Cross-entropy on the masked positions only (the vocabulary projection of the others is wasted work)."""
    import torch.nn.functional as F

    hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    selected = batch["labels"] != -100
    logits = model.cls(hidden[selected])
    return F.cross_entropy(logits, batch["labels"][selected], reduction=reduction), int(selected.sum())


def unigram_log_probs(features: list[dict[str, list[int]]], vocab_size: int):
    """Log-frequency of every token in `features` (add-one smoothed, special tokens left out).

    Example:
        >>> features = [{"input_ids": [2, 5, 5, 3], "special_tokens_mask": [1, 0, 0, 1]}]
        >>> round(float(unigram_log_probs(features, vocab_size=6).exp()[5]), 3)  # (2 + 1) / (2 + 6)
        0.375
    """
    ids = [i for f in features for i, special in zip(f["input_ids"], f["special_tokens_mask"]) if not special]
    counts = torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=vocab_size).double() + 1.0
    return (counts / counts.sum()).log()


def heldout_loss(model, tokenizer, features: list[dict[str, list[int]]], config: PretrainConfig,
                 unigram: torch.Tensor) -> tuple[Optional[float], Optional[float]]:
    """(model, unigram) mean masked-token loss on held-out texts, with the same seeded masks at every call.

    The unigram loss predicts each masked token by its training frequency (`unigram_log_probs`):
    a model loss near it means the encoder has learnt token frequencies but little from context.
    """
    from transformers import DataCollatorForLanguageModeling

    if not features:
        return None, None
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability,
                                               seed=config.seed + 1)
    batch_size = config.batch_size * 2
    total, total_unigram, count = 0.0, 0.0, 0
    model.eval()
    with torch.no_grad():
        for start in range(0, len(features), batch_size):
            batch = collator(features[start:start + batch_size])
            loss, n = masked_lm_loss(model, batch, reduction="sum")
            total, count = total + float(loss), count + n
            total_unigram -= float(unigram[batch["labels"][batch["labels"] != -100]].sum())
    model.train()
    return (None, None) if not count else (total / count, total_unigram / count)


class MaskedLMModule(pl.LightningModule):
    """Trains a `BertForMaskedLM` on its masked tokens (`masked_lm_loss`) with `training.optim`'s optimizer.

    Every `every` steps (and at `max_steps`) it says the mean loss since the last line and keeps
    it in `losses`, which travel in checkpoints. A batch of very short texts can draw no mask at
    all: it is skipped (counted in `skipped`).
    """

    def __init__(self, model: Any, trainer_config: TrainerConfig, every: int, say: Callable[[str], None],
                 minutes: Optional[float] = None):
        super().__init__()
        self.model, self.cfg, self.every, self.say, self.minutes = model, trainer_config, every, say, minutes
        self.losses: list[list[float]] = []  # [step, mean training loss]
        self.window: list[float] = []
        self.skipped = 0

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> Optional[torch.Tensor]:
        loss, n_masked = masked_lm_loss(self.model, batch)
        if n_masked == 0:
            self.skipped += 1
            return None
        self.log("train/loss", loss, prog_bar=True, batch_size=batch["input_ids"].size(0))
        self.window.append(loss.item())
        step, total = self.global_step + 1, self.trainer.max_steps
        if step % self.every == 0 or step == total:
            self.losses.append([step, sum(self.window) / len(self.window)])
            self.window = []
            if self.trainer.is_global_zero:
                self.say(f"step {step}/{total}  loss {self.losses[-1][1]:.4f}  "
                         f"lr {self.optimizers().param_groups[0]['lr']:.2e}")
        return loss

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["train_loss_log"] = self.losses

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.losses = checkpoint["train_loss_log"]

    def configure_optimizers(self) -> dict[str, Any]:
        return lightning_optimizers(self, self.cfg, self.minutes)


def pretrain(config: PretrainConfig, quiet: bool = False, resume: bool = False,
             overwrite: bool = False) -> Optional[PretrainResult]:
    """Train a tokenizer and a BERT masked LM on the configured texts; save them as an encoder directory.

    The run folder (`OUTPUT-run`) is locked for the whole run: a second run into it is refused. The
    encoder directory is replaced whole at the end (`data.atomic.replace_directory`); a non-empty
    `output` that is not a pretrained encoder (a trained model, say) is refused before any work
    unless `overwrite`. `quiet` writes no log lines, progress bar or model summary; `resume` continues
    `OUTPUT-run/checkpoints/last.ckpt`, with the tokenizer saved beside it. Returns the encoder directory, its
    metrics, the tokenizer and the model; None in the processes of distributed training other than the first (only
    that one saves).
    """
    from kold_span.training.run_folder import launched_worker, run_lock

    with run_lock(Path(f"{config.output}-run")):
        if not launched_worker():
            check_replaceable(Path(config.output), pretrained_encoder, PRETRAINED_ENCODER, overwrite)
        return _pretrain(config, quiet, resume, overwrite)


def pretrained_encoder(directory: Path) -> bool:
    """Whether `directory` is an encoder `pretrain` wrote (what it replaces without `overwrite`)."""
    return (directory / CONFIG_FILE).is_file()


def _pretrain(config: PretrainConfig, quiet: bool, resume: bool, overwrite: bool) -> Optional[PretrainResult]:
    """`pretrain` once its run folder is locked and its output checked."""
    from transformers import AutoTokenizer, BertForMaskedLM, DataCollatorForLanguageModeling

    from kold_span.models.backbones import (attach_morpheme_pretokenizer, save_tokenizer, scratch_encoder,
                                            train_tokenizer)
    from kold_span.training.resume import EpochEndCheckpoint
    from kold_span.training.run import check_trainer_settings, trainer_for

    def say(message: str) -> None:
        if not quiet:
            logger.info(message)

    started = time.time()
    run_dir = Path(f"{config.output}-run")
    last = run_dir / "checkpoints" / "last.ckpt"
    if resume and not last.exists():
        raise FileNotFoundError(f"--resume: {last} does not exist (a run that never finished an epoch?)")
    check_trainer_settings(_trainer_config(config, 1), prefix="")
    if config.threads:
        torch.set_num_threads(config.threads)
    pl.seed_everything(config.seed, workers=True, verbose=False)
    heldout_texts, train_texts = _split_texts(config, torch.Generator().manual_seed(config.seed))
    say(f"{len(heldout_texts) + len(train_texts)} texts ({len(train_texts)} train, {len(heldout_texts)} held out); "
        f"{'reading the tokenizer of the run' if resume else 'training the tokenizer'}")
    if resume:  # the tokenizer the checkpoint was trained with
        tokenizer = AutoTokenizer.from_pretrained(str(run_dir / "tokenizer"), trust_remote_code=False)
        if config.encoder.morpheme_pretokenize:
            attach_morpheme_pretokenizer(tokenizer)
    else:
        tokenizer = train_tokenizer(train_texts, config.encoder)
        save_tokenizer(tokenizer, run_dir / "tokenizer")
    train_features = _features(tokenizer, train_texts, config.max_length)
    heldout_features = _features(tokenizer, heldout_texts, config.max_length)
    # The same BertConfig as a scratch encoder of these sizes, so fine-tuning sees the same architecture.
    model = BertForMaskedLM(scratch_encoder(config.encoder, len(tokenizer), tokenizer.pad_token_id).config)
    params = sum(p.numel() for p in model.parameters())
    total_steps = config.max_steps or math.ceil(len(train_features) / config.batch_size) * config.epochs
    say(f"vocab {len(tokenizer)}, {params / 1e6:.1f}M parameters; {total_steps} steps of {config.batch_size} texts"
        + (f", at most {config.max_minutes} min" if config.max_minutes else ""))

    module = MaskedLMModule(model, _trainer_config(config, total_steps), config.log_every_n_steps, say,
                            config.max_minutes)
    max_time = timedelta(minutes=config.max_minutes) if config.max_minutes else None
    # No model summary: Lightning prints it to stdout, and the sizes are said above.
    trainer = trainer_for(module.cfg, run_dir, quiet, latest=EpochEndCheckpoint(last), limit_val_batches=0,
                          max_time=max_time, enable_model_summary=False)
    # Masks are drawn from torch's generator, which `RandomState` carries through a resume.
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability)
    sampler = LengthGroupedSampler([len(f["input_ids"]) for f in train_features], config.batch_size, config.seed)
    # The loader's own generator: building its iterator draws nothing from the global one.
    loader = torch.utils.data.DataLoader(train_features, batch_size=config.batch_size, sampler=sampler,
                                         collate_fn=collator, generator=torch.Generator().manual_seed(config.seed))
    train_started = time.time()
    trainer.fit(module, train_dataloaders=loader, ckpt_path=str(last) if resume else None)
    if not trainer.is_global_zero:
        return None
    model, losses = module.model.cpu(), module.losses
    if module.window:  # stopped by max_minutes
        losses.append([trainer.global_step, sum(module.window) / len(module.window)])
    metrics = {"steps": trainer.global_step,
               "stop_reason": "max_steps" if trainer.global_step >= total_steps else "max_minutes",
               "skipped_batches": module.skipped, "final_train_loss": losses[-1][1] if losses else None,
               "train_seconds": round(time.time() - train_started, 1), "train_loss_log": losses}
    heldout, unigram = heldout_loss(model, tokenizer, heldout_features, config,
                                    unigram_log_probs(train_features, len(tokenizer)))
    metrics.update({
        "heldout_loss": heldout, "heldout_perplexity": math.exp(heldout) if heldout is not None else None,
        "heldout_unigram_loss": unigram,
        "texts": len(train_texts) + len(heldout_texts), "train_texts": len(train_texts),
        "heldout_texts": len(heldout_texts), "vocab_size": len(tokenizer), "parameters": params})
    directory = Path(config.output)
    with replace_directory(directory, pretrained_encoder, PRETRAINED_ENCODER, overwrite) as staging:
        save_encoder_directory(staging, model, tokenizer, config)
        metrics["seconds"] = round(time.time() - started, 1)
        write_text_atomic(staging / METRICS_FILE, json_text(finite_or_null(metrics), indent=1))
    perplexity = metrics["heldout_perplexity"]
    say(f"held-out masked-token loss {heldout if heldout is None else round(heldout, 4)} "
        f"(perplexity {perplexity if perplexity is None else round(perplexity, 1)}; "
        f"token frequencies alone: {unigram if unigram is None else round(unigram, 4)}); "
        f"{metrics['steps']} steps, {metrics['seconds']}s in all; encoder saved to {directory}")
    return PretrainResult(directory, metrics, tokenizer, model)


def _trainer_config(config: PretrainConfig, total_steps: int) -> TrainerConfig:
    """The trainer keys of an experiment that a pretraining config sets: its steps, optimisation and devices."""
    return TrainerConfig(accelerator=config.accelerator, devices=config.devices, strategy=config.strategy,
                         precision=config.precision, max_epochs=-1, max_steps=total_steps,
                         batch_size=config.batch_size, lr=config.lr, weight_decay=config.weight_decay,
                         warmup_ratio=config.warmup_ratio, gradient_clip_val=config.gradient_clip_val,
                         log_every_n_steps=config.log_every_n_steps, threads=config.threads, progress_bar=False)


def _split_texts(config: PretrainConfig, generator) -> tuple[list[str], list[str]]:
    """(held-out, train) texts: all texts of the sources shuffled, cut to `limit_texts`."""
    texts = read_texts(config.texts, config.include_context)
    texts = [texts[i] for i in torch.randperm(len(texts), generator=generator).tolist()]
    if config.limit_texts:
        texts = texts[:config.limit_texts]
    if len(texts) < 2:
        raise DataError(f"pretraining needs at least 2 non-blank texts, the sources gave {len(texts)}")
    n_heldout = round(len(texts) * config.heldout_fraction)
    if config.heldout_fraction > 0:
        n_heldout = min(max(n_heldout, 1), len(texts) - 1)
    return texts[:n_heldout], texts[n_heldout:]


def save_encoder_directory(directory: Path, model, tokenizer, config: PretrainConfig) -> None:
    """Save the encoder, its tokenizer, the Kiwi marker and the config into the new folder `directory`, so that
    `load_pretrained(directory)` works."""
    from kold_span.models.backbones import TOKENIZER_MARKER, save_tokenizer

    directory.mkdir(parents=True, exist_ok=True)
    # Only the encoder is saved (no MLM head): AutoModel then loads it without unexpected-key reports.
    model.bert.save_pretrained(str(directory))
    save_tokenizer(tokenizer, directory)
    marker = directory / TOKENIZER_MARKER
    if config.encoder.morpheme_pretokenize:
        write_text_atomic(marker, json_text({"morpheme_pretokenize": True}) + "\n")
    elif marker.exists():
        marker.unlink()
    write_text_atomic(directory / CONFIG_FILE, json_text(asdict(config), indent=1))


def _features(tokenizer, texts: list[str], max_length: int) -> list[dict[str, list[int]]]:
    """Token ids and special-token masks of each text, truncated to `max_length`."""
    if not texts:
        return []
    encoded = tokenizer(texts, truncation=True, max_length=max_length, return_special_tokens_mask=True)
    return [{"input_ids": ids, "special_tokens_mask": special}
            for ids, special in zip(encoded["input_ids"], encoded["special_tokens_mask"])]
