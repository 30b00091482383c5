"""Length-grouped training batches (trainer.group_by_length): same examples, less padding."""
import random
from collections import Counter

import pytest

from kold_span import corpora
from kold_span.config.loading import load_config
from kold_span.corpora.experiment import load_splits
from kold_span.models.backbones import build_encoder
from kold_span.models.kinds import build_tasks
from kold_span.models.windows import InputEncoder
from kold_span.training.datamodule import WindowsDataModule
from kold_span.training.run import tokenizer_texts, train
from kold_span.training.sampling import LengthGroupedSampler

from conftest import FIXTURE, TINY


def batches(order, size):
    return [order[i:i + size] for i in range(0, len(order), size)]


def test_each_window_once_per_epoch_and_batches_of_one_length():
    lengths = [i % 10 for i in range(100)]  # ten windows of each length 0..9
    sampler = LengthGroupedSampler(lengths, batch_size=10, seed=1, pool_batches=10)
    order = list(sampler)
    assert sorted(order) == list(range(100))
    # One pool holds all 100: sorted by length, each batch of 10 is one length.
    assert sorted(len({lengths[i] for i in b}) for b in batches(order, 10)) == [1] * 10
    assert sorted(lengths[b[0]] for b in batches(order, 10)) == list(range(10))


def test_only_the_last_batch_is_short():
    lengths = [7, 3, 9, 1, 5, 2, 8, 4, 6, 0, 12, 11, 10]  # every length once: a length is its rank
    for seed in range(8):
        order = list(LengthGroupedSampler(lengths, batch_size=4, seed=seed, pool_batches=10))
        assert sorted(order) == list(range(13))
        # One pool, sorted: the batches are lengths 0-3, 4-7, 8-11 and 12 alone, in any order but
        # with the short one last, where the DataLoader's own cut into fours meets the same batches.
        cut = [sorted(lengths[i] for i in b) for b in batches(order, 4)]
        assert cut[-1] == [12]
        assert sorted(cut[:-1]) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_grouped_batches_pad_less_than_random_ones():
    lengths = [1 + (i * 37) % 100 for i in range(400)]
    shuffled = list(range(400))
    random.Random(0).shuffle(shuffled)

    def padded(order):
        return sum(len(b) * max(lengths[i] for i in b) for b in batches(order, 16))

    grouped = padded(list(LengthGroupedSampler(lengths, batch_size=16, seed=0)))
    assert grouped < 1.1 * sum(lengths) < padded(shuffled)


def test_order_is_seeded_and_changes_with_the_epoch():
    lengths = list(range(64))
    first = LengthGroupedSampler(lengths, batch_size=8, seed=5)
    again = LengthGroupedSampler(lengths, batch_size=8, seed=5)
    assert list(first) == list(again)
    epoch0 = list(first)
    first.set_epoch(1)
    assert list(first) != epoch0
    assert list(LengthGroupedSampler(lengths, batch_size=8, seed=6)) != epoch0


def test_under_two_ranks_each_rank_batch_is_one_length():
    lengths = [i // 20 for i in range(200)]  # ten lengths, twenty windows each
    order = list(LengthGroupedSampler(lengths, batch_size=10, seed=2, world_size=2, pool_batches=10))
    for rank in (0, 1):
        mine = order[rank::2]  # how the distributed wrapper deals the order out
        assert all(len({lengths[i] for i in b}) == 1 for b in batches(mine, 10))


@pytest.fixture(scope="module")
def tiny_datamodule():
    def build(group_by_length):
        config = load_config(TINY, [f"data.train={FIXTURE}"])
        splits = load_splits(config)
        tasks = build_tasks(config.tasks, splits["train"])
        tokenizer, _ = build_encoder(config.model.encoder, tokenizer_texts(splits["train"]))
        inputs = InputEncoder(tokenizer, config.model.max_length, config.model.stride)
        dm = WindowsDataModule(splits, tasks, inputs, batch_size=4, group_by_length=group_by_length, seed=7)
        dm.setup()
        return dm
    return build


def test_datamodule_serves_the_same_windows_grouped(tiny_datamodule):
    plain, grouped = tiny_datamodule(False), tiny_datamodule(True)
    assert isinstance(grouped.train_dataloader().sampler, LengthGroupedSampler)

    def served(dm):
        seen, padded = Counter(), 0
        for batch in dm.train_dataloader():
            seen.update(batch["window_index"].tolist())
            padded += batch["input_ids"].numel()
        return seen, padded

    plain_seen, plain_padded = served(plain)
    grouped_seen, grouped_padded = served(grouped)
    assert grouped_seen == plain_seen and set(grouped_seen.values()) == {1}
    assert grouped_padded < plain_padded
    lengths = grouped.window_lengths("train")
    assert grouped_padded >= sum(lengths)


@pytest.mark.slow
def test_training_with_grouped_batches_learns(tmp_path):
    config = load_config(TINY, [f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=g", "data.limit=16",
                                "trainer.group_by_length=true"])
    result = train(config, quiet=True)
    from kold_span.inference.predictor import Predictor
    from kold_span.training.evaluators import evaluate_predictor

    scores = evaluate_predictor(Predictor.from_pretrained(result.model_dir), corpora.read("kold", FIXTURE)[:16])
    assert scores["OFF/accuracy"] == 1.0
    assert scores["OFF_span/char_f1"] >= 0.9, scores


def test_a_loader_cuts_the_order_into_length_groups():
    from torch.utils.data import DataLoader

    lengths = [7, 3, 9, 1, 5, 2, 8, 4, 6, 0, 12, 11, 10]  # a length is its rank
    sampler = LengthGroupedSampler(lengths, batch_size=4, seed=3, pool_batches=10, world_size=1)

    def batches() -> list[list[int]]:
        return [batch.tolist() for batch in DataLoader(range(len(lengths)), batch_size=4, sampler=sampler)]

    cut = batches()
    assert [i for batch in cut for i in batch] == sampler.order()
    assert sorted(sorted(lengths[i] for i in b) for b in cut[:-1]) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert [lengths[i] for i in cut[-1]] == [12]
    sampler.set_epoch(1)
    assert batches() != cut
