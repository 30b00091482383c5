"""An experiment's train/dev/test examples: read with its corpus reader, filtered, carved, expanded."""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

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
    if data.negatives is not None:  # each source split on its own, so each keeps its held-out and dev shares
        parts = [read_negatives(source, data.split_seed) for source in data.negative_sources()]
        splits[BENIGN] = [ex for part in parts for ex in part.held_out]
        splits["train"] = splits["train"] + [ex for part in parts for ex in part.train]
        splits["dev"] = splits["dev"] + [ex for part in parts for ex in part.dev]
    if data.speaker_swap:
        splits["train"] = swap_share(splits["train"], data.speaker_swap, config.seed)
    if data.perspective is not None:
        # Split by item first, so one item's annotators never straddle train and test.
        splits = {name: expand_by_annotator(exs, data.perspective.label, data.perspective.traits)
                  for name, exs in splits.items()}
        if not splits["train"]:
            raise ConfigError(f"data.perspective: no annotation carries the label {data.perspective.label!r}")
    return splits


class NegativeParts(NamedTuple):
    """One `data.negatives` source split three ways."""

    train: list[Example]  # trained on
    dev: list[Example]  # scored with dev (`dev_fraction`)
    held_out: list[Example]  # scored as `benign` after training (`holdout_fraction`)


def read_negatives(negatives: NegativesConfig, seed: int) -> NegativeParts:
    """Benign texts of another corpus, relabelled, split (seeded) into those trained on, dev and held out.

    Each keeps its text, loses its context (the main corpus decides what context means) and its own
    labels and spans (its spans too unless `keep_spans`), and gets `negatives.labels`; its id is prefixed
    "negative:" so that it never collides with an id of the main corpus. The held-out share is carved
    first, then the dev share from the rest (so a source's held-out texts do not depend on `dev_fraction`).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from kold_span.data.jsonl import write_jsonl
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = Path(folder.name) / "benign.jsonl"
        >>> _ = write_jsonl([Example(id=str(i), text=f"a fine day {i}", labels={"lang": "en" if i < 8 else "es"})
        ...                  for i in range(10)], path)
        >>> parts = read_negatives(NegativesConfig(reader="jsonl", path=str(path), labels={"toxic": False},
        ...                                        filter={"lang": "en"}, holdout_fraction=0.25, dev_fraction=0.25),
        ...                        seed=13)
        >>> len(parts.train), len(parts.dev), len(parts.held_out)
        (4, 2, 2)
        >>> parts.held_out[0].labels, parts.held_out[0].spans, parts.held_out[0].id.startswith("negative:")
        ({'toxic': False}, {}, True)
        >>> folder.cleanup()
    """
    require_path(negatives.path, "data.negatives.path")
    read = partial(corpora.read, negatives.reader, **negatives.reader_options)
    kept = [ex for ex in read(negatives.path) if keep_example(ex, negatives.filter)][:negatives.limit]
    if not kept:
        raise ConfigError(f"data.negatives: no text left in {negatives.path} after filter={negatives.filter}")
    relabelled = [Example(id=f"negative:{ex.id}", text=ex.text, labels=dict(negatives.labels),
                          spans=ex.spans if negatives.keep_spans else {}, meta=ex.meta) for ex in kept]
    rest, held_out = (carve(relabelled, negatives.holdout_fraction, seed, None) if negatives.holdout_fraction
                      else (relabelled, []))
    if not negatives.dev_fraction:
        return NegativeParts(rest, [], held_out)
    train, dev = carve(rest, negatives.dev_fraction / (1 - negatives.holdout_fraction), seed, None)
    return NegativeParts(train, dev, held_out)
