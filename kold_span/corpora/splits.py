"""An experiment's train/dev/test examples: read with its corpus reader, filtered, carved, expanded."""
from __future__ import annotations

from functools import partial

from kold_span import corpora
from kold_span.config.schema import Config
from kold_span.data.example import Example
from kold_span.data.jsonl import require_path
from kold_span.data.perspectives import expand_by_annotator
from kold_span.data.splits import carve, keep_example
from kold_span.data.transforms import swap_share
from kold_span.errors import ConfigError

SPLITS = ("train", "dev", "test")


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
    if data.speaker_swap:
        splits["train"] = swap_share(splits["train"], data.speaker_swap, config.seed)
    if data.perspective is not None:
        # Split by item first, so one item's annotators never straddle train and test.
        splits = {name: expand_by_annotator(exs, data.perspective.label, data.perspective.traits)
                  for name, exs in splits.items()}
        if not splits["train"]:
            raise ConfigError(f"data.perspective: no annotation carries the label {data.perspective.label!r}")
    return splits
