"""Corpus splits → tokenized windows (a cached `datasets.Dataset`) → padded batches."""
from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any, Optional, Sequence

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Sampler

from kold_span.corpora.splits import SPLITS
from kold_span.data.example import Example, context_turns
from kold_span.models.tasks import Task
from kold_span.models.windows import InputEncoder, collate, encode_example
from kold_span.text.morphemes import prefetch_for


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


class LengthGroupedSampler(Sampler[int]):
    """A shuffled order of windows in which every run of `batch_size` has similar lengths.

    Batches are padded to their longest window, so random batches of short and long texts
    spend most of their compute on padding. Each epoch the indices are shuffled, cut into
    pools of `pool_batches` batches, each pool sorted by length and cut into batches, and the
    batches shuffled, so batches stay random in content and order but not in length. Pools are
    a whole number of batches: only the last batch of the epoch can be short (the DataLoader
    cuts the order into batches of `batch_size` again and must meet the same boundaries). Under
    distributed training each group holds `batch_size` × world size windows, which the
    distributed wrapper deals out one per rank in turn, so every rank's batch comes from one group.

    Example:
        >>> lengths = [5, 1, 4, 2, 3, 6]
        >>> order = LengthGroupedSampler(lengths, batch_size=2, seed=3, world_size=1).order()
        >>> sorted(sorted(lengths[i] for i in order[k:k + 2]) for k in (0, 2, 4))
        [[1, 2], [3, 4], [5, 6]]
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int = 0, pool_batches: int = 50,
                 world_size: Optional[int] = None):
        self.lengths, self.batch_size, self.seed = list(lengths), batch_size, seed
        self.pool_batches, self.world_size, self.epoch = pool_batches, world_size, 0

    def set_epoch(self, epoch: int) -> None:
        """Called by Lightning before each epoch (also after a resume): the epoch seeds the order."""
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        return iter(self.order())

    def order(self) -> list[int]:
        """This epoch's order of window indices."""
        group = self.batch_size * (self.world_size or _world_size())
        rng = random.Random(self.seed * 100_003 + self.epoch)
        indices = list(range(len(self.lengths)))
        rng.shuffle(indices)
        pool = group * self.pool_batches
        batches = []
        for start in range(0, len(indices), pool):
            ranked = sorted(indices[start:start + pool], key=self.lengths.__getitem__)
            batches += [ranked[i:i + group] for i in range(0, len(ranked), group)]
        last = batches.pop() if batches and len(batches[-1]) < group else None
        rng.shuffle(batches)
        return [i for batch in batches + ([last] if last else []) for i in batch]


class EpochShuffle(Sampler[int]):
    """A random order of the windows drawn from the seed and the epoch, not from the global generator.

    A sampler that drew from torch's global generator made the batches of a resumed run depend on
    how many numbers Lightning drew before the first batch, which differs after a restart.

    Example:
        >>> sampler = EpochShuffle(5, seed=1)
        >>> sorted(sampler) == [0, 1, 2, 3, 4], list(sampler) == list(EpochShuffle(5, seed=1))
        (True, True)
        >>> sampler.set_epoch(1); list(sampler) != list(EpochShuffle(5, seed=1))
        True
    """

    def __init__(self, size: int, seed: int = 0):
        self.size, self.seed, self.epoch = size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Called by Lightning before each epoch (also after a resume): the epoch seeds the order."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        order = list(range(self.size))
        random.Random(self.seed * 100_003 + self.epoch).shuffle(order)
        return iter(order)


class FixedOrder(Sampler[int]):
    """The given indices, in the given order."""

    def __init__(self, indices: Sequence[int]):
        self.indices = list(indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self):
        return iter(self.indices)


def _world_size() -> int:
    import torch

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size()
    return 1


class WindowsDataModule(pl.LightningDataModule):
    """Serves padded batches of windows for train/dev/test.

    With `group_by_length`, training batches hold windows of similar length (LengthGroupedSampler,
    seeded with `seed`) and dev/test windows are served shortest first: less padding, the same
    examples. Off, training batches are plain random draws.
    """

    def __init__(self, splits: dict[str, list[Example]], tasks: Sequence[Task], encoder: InputEncoder,
                 batch_size: int = 16, eval_batch_size: int = 64, num_workers: int = 0,
                 cache_dir: Optional[Path] = None, group_by_length: bool = False, seed: int = 0):
        super().__init__()
        self.splits, self.tasks, self.encoder = splits, list(tasks), encoder
        self.batch_size, self.eval_batch_size, self.num_workers = batch_size, eval_batch_size, num_workers
        self.cache_dir = cache_dir
        self.group_by_length, self.seed = group_by_length, seed
        self.datasets: dict[str, Any] = {}

    def setup(self, stage: Optional[str] = None) -> None:
        for name in SPLITS:
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
        return DataLoader(self.datasets[split], batch_size=batch_size, sampler=sampler, generator=generator,
                          num_workers=self.num_workers, collate_fn=partial(collate, tasks=self.tasks, pad_id=pad_id))

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("dev", self.eval_batch_size, shuffle=False) if "dev" in self.datasets else []

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", self.eval_batch_size, shuffle=False)
