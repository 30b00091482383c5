"""Corpus splits → tokenized windows (a cached `datasets.Dataset`) → padded batches."""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Sampler

from kold_span.corpora.experiment import SPLITS
from kold_span.data.example import Example, context_turns
from kold_span.models.tasks import Task
from kold_span.models.windows import InputEncoder, collate, encode_example
from kold_span.text.morphemes import prefetch_for
from kold_span.training.sampling import EpochShuffle, FixedOrder, LengthGroupedSampler, ResumableLoader


def windows_dataset(examples: Sequence[Example], tasks: Sequence[Task], encoder: InputEncoder,
                    cache_dir: Optional[Path] = None):
    """Tokenized windows of all examples as a `datasets.Dataset`, cached on disk by content."""
    from datasets import Dataset

    rows = Dataset.from_dict({"example_index": list(range(len(examples)))})

    def featurize(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = defaultdict(list)
        batch_examples = [examples[i] for i in batch["example_index"]]
        prefetch_for(encoder.tokenizer, [t for ex in batch_examples for t in [ex.text, *context_turns(ex.context)]],
                     snap=False)
        for index in batch["example_index"]:
            for window in encode_example(encoder, tasks, examples[index], index):
                for key, value in window.items():
                    out[key].append(value)
        return dict(out)

    kwargs: dict[str, Any] = {}
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fingerprint = _fingerprint(examples, tasks, encoder)
        kwargs = {"cache_file_name": str(cache_dir / f"windows-{fingerprint}.arrow"),
                  "new_fingerprint": fingerprint, "load_from_cache_file": True}
    dataset = rows.map(featurize, batched=True, batch_size=256, remove_columns=["example_index"], **kwargs)
    return dataset.add_column("window_index", list(range(len(dataset))))


def _fingerprint(examples: Sequence[Example], tasks: Sequence[Task], encoder: InputEncoder) -> str:
    """A hash of everything the windows depend on: data, tasks, tokenizer and input policy."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps([ex.text, ex.context, ex.labels, ex.spans], ensure_ascii=False, default=str).encode())
    h.update(json.dumps([t.to_dict() for t in tasks]).encode())
    tok = encoder.tokenizer
    h.update(json.dumps([sorted(tok.get_vocab().items()), type(tok).__name__, tok.name_or_path,
                         getattr(tok, "kold_morphemes", False)]).encode())
    h.update(json.dumps([encoder.max_length, encoder.stride, encoder.context_mode, encoder.max_turns]).encode())
    return h.hexdigest()[:24]


class WindowsDataModule(pl.LightningDataModule):
    """Serves padded batches of windows for train/dev/test.

    With `group_by_length`, training batches hold windows of similar length (LengthGroupedSampler,
    seeded with `seed`) and dev/test windows are served shortest first: less padding, the same
    examples. Off, training batches are plain random draws.

    Example:
        >>> from kold_span.config.schema import ScratchEncoderConfig
        >>> from kold_span.models.backbones import train_tokenizer
        >>> texts = ["너 진짜 바보", "좋은 기사", "한심한 댓글이네", "감사합니다", "바보 같은 말"]
        >>> tokenizer = train_tokenizer(texts, ScratchEncoderConfig(vocab_size=60, morpheme_pretokenize=False))
        >>> train = [Example(str(i), text, labels={"OFF": "바보" in text}) for i, text in enumerate(texts)]
        >>> task = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> data = WindowsDataModule({"train": train}, [task], InputEncoder(tokenizer, 16, 4, "none"), batch_size=2)
        >>> data.setup()  # tokenizes the windows (Lightning calls it before fitting)
        >>> [batch["input_ids"].shape[0] for batch in data.train_dataloader()]  # 5 windows in batches of 2
        [2, 2, 1]
    """

    def __init__(self, splits: dict[str, list[Example]], tasks: Sequence[Task], encoder: InputEncoder,
                 batch_size: int = 16, eval_batch_size: int = 64, num_workers: int = 0,
                 cache_dir: Optional[Path] = None, group_by_length: bool = False, seed: int = 0,
                 val_splits: Sequence[str] = ("dev",)):
        super().__init__()
        self.splits, self.tasks, self.encoder = splits, list(tasks), encoder
        self.val_splits = list(val_splits)  # validated in this order (the first one is monitored)
        self.batch_size, self.eval_batch_size, self.num_workers = batch_size, eval_batch_size, num_workers
        self.cache_dir = cache_dir
        self.group_by_length, self.seed = group_by_length, seed
        self.datasets: dict[str, Any] = {}

    def setup(self, stage: Optional[str] = None) -> None:
        for name in [*SPLITS, *self.val_splits]:
            if name not in self.datasets and self.splits.get(name):
                self.datasets[name] = windows_dataset(self.splits[name], self.tasks, self.encoder, self.cache_dir)

    def window_meta(self, split: str) -> list[dict[str, Any]]:
        """Offsets, text masks and owners of a split's windows (for merging outputs)."""
        self.setup()
        return self.datasets[split].select_columns(["example_index", "offsets", "text_mask"]).to_list()

    def window_lengths(self, split: str) -> list[int]:
        """The token count of each of a split's windows."""
        self.setup()
        return [len(ids) for ids in self.datasets[split]["input_ids"]]

    def _loader(self, split: str, batch_size: int, shuffle: bool) -> DataLoader:
        pad_id = self.encoder.tokenizer.pad_token_id or 0
        sampler: Optional[Sampler[int]] = None
        if self.group_by_length:
            lengths = self.window_lengths(split)
            if shuffle:
                sampler = LengthGroupedSampler(lengths, batch_size, self.seed)
            else:
                # Outputs are keyed by window_index, so any order gives the same scores.
                sampler = FixedOrder(sorted(range(len(lengths)), key=lengths.__getitem__))
        elif shuffle:
            sampler = EpochShuffle(len(self.datasets[split]), self.seed)
        # The loader's own seeds (its workers') come from a generator of its own, so building an
        # iterator draws nothing from the global one that dropout uses (see training/resume.py).
        generator = torch.Generator().manual_seed(self.seed)
        # Training batches resume inside an epoch (trainer.checkpoint_every_n_steps); dev and test restart.
        kind = ResumableLoader if shuffle else DataLoader
        return kind(self.datasets[split], batch_size=batch_size, sampler=sampler, generator=generator,
                    num_workers=self.num_workers, collate_fn=partial(collate, tasks=self.tasks, pad_id=pad_id))

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", self.batch_size, shuffle=True)

    def val_dataloader(self) -> Union[DataLoader, list[DataLoader]]:
        loaders = [self._loader(name, self.eval_batch_size, shuffle=False)
                   for name in self.val_splits if name in self.datasets]
        return loaders[0] if len(loaders) == 1 else loaders  # one split: a loader, as Lightning reads it plainly

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", self.eval_batch_size, shuffle=False)
