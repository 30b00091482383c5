"""`kold-span pretrain`: masked-language-model pretraining of a scratch encoder on raw texts.

texts (corpus readers, plain text files, unlabeled BEEP!) → tokenizer trained on them →
`BertForMaskedLM` of the configured size → a local encoder directory that
`encoders.load_pretrained(DIR)` loads (config + weights + tokenizer, and a marker file
re-attaching the Kiwi pre-tokenizer), to be named as `model.encoder.name_or_path: DIR`.

The config is one YAML file, validated like the experiment configs (a mistyped key fails
with its name and the file):

    texts:
      - {beep_unlabeled: ../shared/data/beep}
      - {reader: unsmile, path: ../shared/data/unsmile}
      - {file: my_comments.txt}        # one text per line
    encoder: {vocab_size: 16000, hidden_size: 256, layers: 4, heads: 4, morpheme_pretokenize: true}
    max_steps: 2000
    output: checkpoints/pretrained/ko-beep-mlm
"""
from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from kold_span.config.checks import value_checker
from kold_span.config.loading import load_dataclass
from kold_span.config.schema import ScratchEncoderConfig
from kold_span.data.jsonl import require_path, utf8_lines
from kold_span.errors import DataError
from kold_span.training.optim import adamw, lr_factor, warmup_steps
from kold_span.training.sampling import LengthGroupedSampler

logger = logging.getLogger(__name__)

METRICS_FILE = "pretrain_metrics.json"
CONFIG_FILE = "pretrain_config.json"


@dataclass
class TextSource:
    """Where texts come from: exactly one of `reader` (+ `path`), `file` or `beep_unlabeled`."""

    reader: Optional[str] = None  # a corpus reader name (kold, beep, unsmile, kocosa, ...)
    path: Optional[str] = None  # the reader's file or directory
    options: dict[str, Any] = field(default_factory=dict)  # reader keyword options
    file: Optional[str] = None  # a plain UTF-8 text file, one text per line
    beep_unlabeled: Optional[str] = None  # the BEEP! directory holding the unlabeled comments


@dataclass
class PretrainConfig:
    """One pretraining run: texts, encoder sizes, masking and optimisation, output directory."""

    texts: list[TextSource] = field(default_factory=list)
    include_context: bool = True  # also train on the titles / dialogue turns the readers give as context
    encoder: ScratchEncoderConfig = field(default_factory=ScratchEncoderConfig)
    max_length: int = 64  # tokens per text, [CLS] and [SEP] included
    mlm_probability: float = 0.15
    batch_size: int = 32
    lr: float = 5e-4
    weight_decay: float = 0.01
    max_steps: Optional[int] = None  # when set, wins over `epochs`
    epochs: int = 1
    warmup_ratio: float = 0.06
    max_minutes: Optional[float] = None  # stop (learning rate decayed to 0) after this long, whatever the steps
    heldout_fraction: float = 0.02  # texts kept out of training for the final masked-token loss
    log_every_n_steps: int = 50
    threads: Optional[int] = None  # torch CPU threads; 1 is often fastest on a machine shared with other jobs
    seed: int = 13
    output: str = "checkpoints/pretrained/mlm"
    limit_texts: Optional[int] = None  # keep a random N of the texts (debugging)


@dataclass
class PretrainResult:
    """The saved encoder directory, its metrics, and the trained tokenizer and model in memory."""

    directory: Path
    metrics: dict[str, Any]
    tokenizer: Any
    model: Any  # the trained BertForMaskedLM (its encoder is `model.bert`)


def load_pretrain_config(path: Union[str, Path], overrides: Iterable[str] = ()) -> PretrainConfig:
    """Read and validate a pretraining config, as experiment configs are read (`config.loading.load_dataclass`).

    Overrides are `key=value` strings (`encoder.layers=2`).
    """
    return load_dataclass(PretrainConfig, path, overrides, check_pretrain_config)


def check_pretrain_config(config: PretrainConfig, where: str) -> None:
    """Value checks that types alone cannot express; `where` names the file and overrides in the error.

    Example:
        >>> check_pretrain_config(PretrainConfig(texts=[TextSource(file="a.txt")]), "p.yaml")
        >>> check_pretrain_config(PretrainConfig(texts=[TextSource(file="a.txt")], mlm_probability=1.5),
        ...                       "p.yaml + --set mlm_probability=1.5")
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: p.yaml + --set mlm_probability=1.5: mlm_probability must be between 0 and 1
    """
    from kold_span import corpora

    need = value_checker(where)
    need(bool(config.texts), "at least one entry under 'texts' is required")
    for i, source in enumerate(config.texts):
        kinds = [k for k in ("reader", "file", "beep_unlabeled") if getattr(source, k)]
        need(len(kinds) == 1, f"texts[{i}] needs exactly one of 'reader' (with 'path'), 'file' or "
                              f"'beep_unlabeled', got {kinds or 'none'}")
        if source.reader:
            need(source.reader in corpora.available(),
                 f"texts[{i}].reader {source.reader!r} is unknown; known readers: {', '.join(corpora.available())}")
            need(bool(source.path), f"texts[{i}].path is required with 'reader'")
        else:
            need(source.path is None and not source.options,
                 f"texts[{i}]: 'path' and 'options' go only with 'reader'")
    need(config.encoder.tokenizer in ("wordpiece", "unigram"),
         f"encoder.tokenizer must be 'wordpiece' or 'unigram', got {config.encoder.tokenizer!r}")
    need(8 <= config.max_length <= config.encoder.max_position,
         f"max_length must be between 8 and encoder.max_position ({config.encoder.max_position})")
    need(0.0 < config.mlm_probability < 1.0, "mlm_probability must be between 0 and 1")
    need(0.0 <= config.heldout_fraction < 0.5, "heldout_fraction must be in [0, 0.5)")
    need(0.0 <= config.warmup_ratio < 1.0, "warmup_ratio must be in [0, 1)")
    need(config.batch_size > 0 and config.log_every_n_steps > 0, "batch_size and log_every_n_steps must be positive")
    need(config.max_steps is None or config.max_steps > 0, "max_steps must be positive (or left out)")
    need(config.max_steps is not None or config.epochs > 0, "epochs must be positive when max_steps is not set")
    need(config.max_minutes is None or config.max_minutes > 0, "max_minutes must be positive (or left out)")
    need(config.threads is None or config.threads > 0, "threads must be positive (or left out)")
    need(config.limit_texts is None or config.limit_texts > 1, "limit_texts must be at least 2")


def read_texts(sources: list[TextSource], include_context: bool) -> list[str]:
    """All non-blank texts of the sources, each once, in source order."""
    from kold_span import corpora
    from kold_span.training.run import tokenizer_texts

    texts: list[str] = []
    for i, source in enumerate(sources):
        path = source.file or source.beep_unlabeled or source.path
        if path:
            require_path(path, f"texts[{i}]")
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
    """Log-frequency of every token in `features` (add-one smoothed, special tokens left out)."""
    import torch

    ids = [i for f in features for i, special in zip(f["input_ids"], f["special_tokens_mask"]) if not special]
    counts = torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=vocab_size).double() + 1.0
    return (counts / counts.sum()).log()


def heldout_loss(model, tokenizer, features: list[dict[str, list[int]]], config: PretrainConfig,
                 unigram=None) -> tuple[Optional[float], Optional[float]]:
    """(model, unigram) mean masked-token loss on held-out texts, with the same seeded masks at every call.

    The unigram loss predicts each masked token by its training frequency (`unigram_log_probs`):
    a model loss near it means the encoder has learnt token frequencies but little from context.
    """
    import torch
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
            if unigram is not None:
                total_unigram -= float(unigram[batch["labels"][batch["labels"] != -100]].sum())
    model.train()
    if not count:
        return None, None
    return total / count, (total_unigram / count if unigram is not None else None)


def pretrain(config: PretrainConfig, quiet: bool = False) -> PretrainResult:
    """Train a tokenizer and a BERT masked LM on the configured texts; save them as an encoder directory."""
    import torch
    from transformers import BertForMaskedLM

    from kold_span.models.backbones import scratch_encoder, train_tokenizer

    def say(message: str) -> None:
        if not quiet:
            logger.info(message)

    started = time.time()
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    heldout_texts, train_texts = _split_texts(config, generator)
    say(f"{len(heldout_texts) + len(train_texts)} texts ({len(train_texts)} train, {len(heldout_texts)} held out); "
        f"training the tokenizer")
    tokenizer = train_tokenizer(train_texts, config.encoder)
    train_features = _features(tokenizer, train_texts, config.max_length)
    heldout_features = _features(tokenizer, heldout_texts, config.max_length)
    # The same BertConfig as a scratch encoder of these sizes, so fine-tuning sees the same architecture.
    model = BertForMaskedLM(scratch_encoder(config.encoder, len(tokenizer), tokenizer.pad_token_id).config)
    params = sum(p.numel() for p in model.parameters())
    say(f"vocab {len(tokenizer)}, {params / 1e6:.1f}M parameters")

    metrics = train_masked_lm(model, tokenizer, train_features, config, say)
    heldout, unigram = heldout_loss(model, tokenizer, heldout_features, config,
                                    unigram_log_probs(train_features, len(tokenizer)))
    metrics.update({
        "heldout_loss": heldout, "heldout_perplexity": math.exp(heldout) if heldout is not None else None,
        "heldout_unigram_loss": unigram,
        "texts": len(train_texts) + len(heldout_texts), "train_texts": len(train_texts),
        "heldout_texts": len(heldout_texts), "vocab_size": len(tokenizer), "parameters": params})
    directory = Path(config.output)
    save_encoder_directory(directory, model, tokenizer, config)
    metrics["seconds"] = round(time.time() - started, 1)
    (directory / METRICS_FILE).write_text(json.dumps(metrics, indent=1), encoding="utf-8")
    perplexity = metrics["heldout_perplexity"]
    say(f"held-out masked-token loss {heldout if heldout is None else round(heldout, 4)} "
        f"(perplexity {perplexity if perplexity is None else round(perplexity, 1)}; "
        f"token frequencies alone: {unigram if unigram is None else round(unigram, 4)}); "
        f"{metrics['steps']} steps, {metrics['seconds']}s in all; encoder saved to {directory}")
    return PretrainResult(directory, metrics, tokenizer, model)


def _split_texts(config: PretrainConfig, generator) -> tuple[list[str], list[str]]:
    """(held-out, train) texts: all texts of the sources shuffled, cut to `limit_texts`."""
    import torch

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


def train_masked_lm(model, tokenizer, features: list[dict[str, list[int]]], config: PretrainConfig,
                    say: Callable[[str], None]) -> dict[str, Any]:
    """Train `model` (a BertForMaskedLM) in place with 80/10/10 masking; returns steps and the loss log.

    Batches of similar lengths (`LengthGroupedSampler`), AdamW and the warm-up schedule of
    fine-tuning (`training.optim`).
    """
    import torch
    from transformers import DataCollatorForLanguageModeling

    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability, seed=config.seed)
    optimizer = adamw(model.parameters(), config.lr, config.weight_decay)
    sampler = LengthGroupedSampler([len(f["input_ids"]) for f in features], config.batch_size, config.seed,
                                   world_size=1)
    steps_per_epoch = math.ceil(len(features) / config.batch_size)
    total_steps = config.max_steps or steps_per_epoch * config.epochs
    warmup = warmup_steps(total_steps, config.warmup_ratio)
    time_limit = config.max_minutes * 60 if config.max_minutes else None
    say(f"{total_steps} steps of {config.batch_size} texts ({steps_per_epoch} per epoch)"
        + (f", at most {config.max_minutes} min" if time_limit else ""))
    loss_log: list[list[float]] = []
    window: list[float] = []
    step, skipped, stop_reason = 0, 0, None
    started = time.time()
    model.train()
    epoch = 0
    while stop_reason is None:
        sampler.set_epoch(epoch)
        for batch_indices in sampler.batches():
            elapsed = time.time() - started
            if step >= total_steps:
                stop_reason = "max_steps"
                break
            if time_limit and elapsed >= time_limit:
                stop_reason = "max_minutes"
                break
            # Time spent counts as steps when it is further along, so a time limit still ends with the lr at 0.
            position = max(step, elapsed / time_limit * total_steps if time_limit else 0.0)
            for group in optimizer.param_groups:
                group["lr"] = config.lr * lr_factor(position, total_steps, warmup)
            loss, n_masked = masked_lm_loss(model, collator([features[i] for i in batch_indices]))
            if n_masked == 0:  # a batch of very short texts can draw no mask at all
                skipped += 1
                continue
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            window.append(loss.item())
            if step % config.log_every_n_steps == 0:
                loss_log.append([step, sum(window) / len(window)])
                say(f"step {step}/{total_steps}  loss {loss_log[-1][1]:.4f}  "
                    f"lr {optimizer.param_groups[0]['lr']:.2e}  {time.time() - started:.0f}s")
                window = []
        epoch += 1
    if window:
        loss_log.append([step, sum(window) / len(window)])
    return {"steps": step, "stop_reason": stop_reason, "skipped_batches": skipped,
            "final_train_loss": loss_log[-1][1] if loss_log else None,
            "train_seconds": round(time.time() - started, 1), "train_loss_log": loss_log}


def save_encoder_directory(directory: Path, model, tokenizer, config: PretrainConfig) -> None:
    """Save the encoder, its tokenizer, the Kiwi marker and the config so `load_pretrained(directory)` works."""
    from kold_span.models.backbones import TOKENIZER_MARKER, save_tokenizer

    directory.mkdir(parents=True, exist_ok=True)
    # Only the encoder is saved (no MLM head): AutoModel then loads it without unexpected-key reports.
    model.bert.save_pretrained(str(directory))
    save_tokenizer(tokenizer, directory)
    marker = directory / TOKENIZER_MARKER
    if config.encoder.morpheme_pretokenize:
        marker.write_text(json.dumps({"morpheme_pretokenize": True}) + "\n", encoding="utf-8")
    elif marker.exists():
        marker.unlink()
    (directory / CONFIG_FILE).write_text(json.dumps(asdict(config), indent=1, ensure_ascii=False), encoding="utf-8")


def _features(tokenizer, texts: list[str], max_length: int) -> list[dict[str, list[int]]]:
    """Token ids and special-token masks of each text, truncated to `max_length`."""
    if not texts:
        return []
    encoded = tokenizer(texts, truncation=True, max_length=max_length, return_special_tokens_mask=True)
    return [{"input_ids": ids, "special_tokens_mask": special}
            for ids, special in zip(encoded["input_ids"], encoded["special_tokens_mask"])]
