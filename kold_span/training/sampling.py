"""Orders of training items for one epoch: length-grouped, shuffled by epoch, or fixed.

Each order is drawn from a seed and the epoch number, not from torch's global generator, so a
resumed run sees the batches it would have seen. Fine-tuning (`datamodule`) and pretraining
(`pretrain`) hand them to a DataLoader.
"""
from __future__ import annotations

import itertools
import random
from typing import Any, Iterator, Optional, Sequence

import torch
from torch.utils.data import DataLoader, Sampler


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


class ResumableLoader(DataLoader):
    """A DataLoader that resumes inside an epoch: it skips the batches its checkpoint says were taken.

    `state_dict` holds how many batches the current epoch's iterator has handed out (Lightning
    saves it in every checkpoint and warns on a mid-epoch resume of a loader without one);
    `load_state_dict` makes the next iteration skip that many batches of the epoch's order. The
    skipped batches are dropped as lists of indices, before any window is read, and the order
    itself is the epoch's seeded one (`LengthGroupedSampler`, `EpochShuffle`), so the resumed
    epoch serves the batches the uninterrupted one served next, drawing no random number more or
    less. A count of 0 or of a whole epoch skips nothing: the checkpoint was taken between epochs.

    Example:
        >>> loader = ResumableLoader(list(range(10)), batch_size=4, sampler=EpochShuffle(10, seed=1))
        >>> whole = [b.tolist() for b in loader]
        >>> taken = iter(loader); first = next(taken).tolist(); state = loader.state_dict(); state
        {'batches': 1}
        >>> again = ResumableLoader(list(range(10)), batch_size=4, sampler=EpochShuffle(10, seed=1))
        >>> again.load_state_dict(state)
        >>> [first] + [b.tolist() for b in again] == whole, [len(b) for b in again]
        (True, [4, 4, 2])
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._taken = 0  # batches handed out by the current epoch's iterator
        self._skip = 0  # batches the next iterator skips (set by load_state_dict)

    def state_dict(self) -> dict[str, int]:
        return {"batches": self._taken}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        taken = int(state.get("batches", 0))
        self._skip = taken if 0 < taken < len(self) else 0

    def __iter__(self) -> Iterator[Any]:
        self._taken = 0
        return self._batches()

    def _batches(self) -> Iterator[Any]:
        # The skip is read at the first batch, not when the iterator is made: Lightning makes the
        # training iterator before it restores the checkpoint (to count the steps of the schedule).
        skip, self._skip = self._skip, 0
        self._taken = skip
        if skip:
            # A loader of the same data, workers and collation over the batches left of this epoch's order.
            left = list(itertools.islice(iter(self.batch_sampler), skip, None))
            batches: Iterator[Any] = iter(DataLoader(
                self.dataset, batch_sampler=left, num_workers=self.num_workers, collate_fn=self.collate_fn,
                pin_memory=self.pin_memory, timeout=self.timeout, worker_init_fn=self.worker_init_fn,
                generator=self.generator))
        else:
            batches = super().__iter__()
        for batch in batches:
            self._taken += 1
            yield batch


def _world_size() -> int:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size()
    return 1
