"""An experiment's train/dev/test examples: read with its corpus reader, filtered, carved, expanded."""
from __future__ import annotations

from functools import partial

from kold_span import corpora
from kold_span.config.schema import Config, NegativesConfig
from kold_span.data.example import Example
from kold_span.data.jsonl import require_path
from kold_span.data.perspectives import expand_by_annotator
from kold_span.data.selection import carve, keep_example
from kold_span.data.transforms import swap_share
from kold_span.errors import ConfigError

SPLITS = ("train", "dev", "test")
BENIGN = "benign"  # the held-out negatives (data.negatives), present only when the config has some


def load_splits(config: Config) -> dict[str, list[Example]]:
    """Read train/dev/test; carve missing dev/test sides out of train (seeded, stratified).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kold_span.config.schema import DataConfig
        >>> from kold_span.data.jsonl import write_jsonl
        >>> folder = tempfile.TemporaryDirectory()
        >>> train = Path(folder.name) / "train.jsonl"
        >>> _ = write_jsonl([Example(id=str(i), text=f"문장 {i}", labels={"OFF": i % 2 == 0}) for i in range(10)], train)
        >>> config = Config(data=DataConfig(reader="jsonl", train=str(train), dev_fraction=0.2, test_fraction=0.2,
        ...                                 stratify="OFF"))
        >>> {name: len(examples) for name, examples in load_splits(config).items()}  # 5 + 5: test, dev take 1 + 1
        {'train': 6, 'test': 2, 'dev': 2}
        >>> folder.cleanup()
    """
    data = config.data
    for name in ("train", "dev", "test"):
        if getattr(data, name):
            require_path(getattr(data, name), f"data.{name}")
    read = partial(corpora.read, data.reader, **data.reader_options)
    train = [ex for ex in read(data.train) if keep_example(ex, data.filter)]
    if data.limit:
        train = train[:data.limit]
    splits = {"train": train}
    for name, fraction in (("test", data.test_fraction), ("dev", data.dev_fraction)):
        path = getattr(data, name)
        if path:
            splits[name] = [ex for ex in read(path) if keep_example(ex, data.filter)]
        elif fraction > 0:
            splits["train"], splits[name] = carve(splits["train"], fraction, data.split_seed, data.stratify)
        else:
            splits[name] = []
    if not splits["train"]:
        raise ConfigError(f"no training examples left in {data.train} after data.filter={data.filter}")
    if data.negatives is not None:  # each source split on its own, so each keeps its held-out share
        parts = [read_negatives(source, data.split_seed) for source in data.negative_sources()]
        splits[BENIGN] = [ex for _, held_out in parts for ex in held_out]
        splits["train"] = splits["train"] + [ex for trained_on, _ in parts for ex in trained_on]
    if data.speaker_swap:
        splits["train"] = swap_share(splits["train"], data.speaker_swap, config.seed)
    if data.perspective is not None:
        # Split by item first, so one item's annotators never straddle train and test.
        splits = {name: expand_by_annotator(exs, data.perspective.label, data.perspective.traits)
                  for name, exs in splits.items()}
        if not splits["train"]:
            raise ConfigError(f"data.perspective: no annotation carries the label {data.perspective.label!r}")
    return splits


def read_negatives(negatives: NegativesConfig, seed: int) -> tuple[list[Example], list[Example]]:
    """Benign texts of another corpus, relabelled, split (seeded) into those trained on and those held out.

    Each keeps its text, loses its context (the main corpus decides what context means) and its own
    labels and spans, and gets `negatives.labels` with no span; its id is prefixed "negative:" so that it
    never collides with an id of the main corpus.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kold_span.data.jsonl import write_jsonl
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = Path(folder.name) / "benign.jsonl"
        >>> _ = write_jsonl([Example(id=str(i), text=f"a fine day {i}", labels={"lang": "en" if i < 8 else "es"})
        ...                  for i in range(10)], path)
        >>> train, held_out = read_negatives(NegativesConfig(reader="jsonl", path=str(path), labels={"toxic": False},
        ...                                                  filter={"lang": "en"}, holdout_fraction=0.25), seed=13)
        >>> len(train), len(held_out), held_out[0].labels, held_out[0].spans, held_out[0].id.startswith("negative:")
        (6, 2, {'toxic': False}, {}, True)
        >>> folder.cleanup()
    """
    require_path(negatives.path, "data.negatives.path")
    read = partial(corpora.read, negatives.reader, **negatives.reader_options)
    kept = [ex for ex in read(negatives.path) if keep_example(ex, negatives.filter)][:negatives.limit]
    if not kept:
        raise ConfigError(f"data.negatives: no text left in {negatives.path} after filter={negatives.filter}")
    benign = [Example(id=f"negative:{ex.id}", text=ex.text, labels=dict(negatives.labels), meta=ex.meta)
              for ex in kept]
    if not negatives.holdout_fraction:
        return benign, []
    return carve(benign, negatives.holdout_fraction, seed, None)
