"""Selecting examples: `data.filter` (`keep_example`), and seeded, stratified dev/test sides carved out of train."""
from __future__ import annotations

import random
from collections import defaultdict
from typing import Any, Optional

from kold_span.data.example import Example, label_str


def carve(examples: list[Example], fraction: float, seed: int,
          stratify: Optional[str] = None) -> tuple[list[Example], list[Example]]:
    """Split off `fraction` of the examples, per stratum when a label key is given.

    Examples sharing `meta["group"]` (say a comment and its rewrite) move together, counted as one and
    stratified by the first one's label; without groups each example is its own.

    Example:
        >>> examples = [Example(id=str(i), text="t", labels={"OFF": i < 4}) for i in range(10)]
        >>> kept, carved = carve(examples, 0.5, seed=1, stratify="OFF")
        >>> len(kept), len(carved), sum(ex.labels["OFF"] for ex in carved)  # half of 4 offensive, half of 6 not
        (5, 5, 2)
        >>> twins = [Example(id=f"{i}{side}", text="t", meta={"group": i}) for i in range(4) for side in "ab"]
        >>> sorted(ex.id for ex in carve(twins, 0.5, seed=1)[1])
        ['0a', '0b', '3a', '3b']
    """
    groups: dict[tuple[str, Any], list[Example]] = {}
    for i, ex in enumerate(examples):
        groups.setdefault(("group", ex.meta["group"]) if "group" in ex.meta else ("index", i), []).append(ex)
    strata: dict[str, list[list[Example]]] = defaultdict(list)
    for members in groups.values():
        strata[label_str(members[0].labels.get(stratify)) if stratify else ""].append(members)
    rng = random.Random(seed)
    kept, carved = [], []
    for key in sorted(strata):
        stratum = list(strata[key])
        rng.shuffle(stratum)
        n = round(len(stratum) * fraction)
        carved += [ex for members in stratum[:n] for ex in members]
        kept += [ex for members in stratum[n:] for ex in members]
    order = {ex.id: i for i, ex in enumerate(examples)}
    return sorted(kept, key=lambda e: order[e.id]), sorted(carved, key=lambda e: order[e.id])


def keep_example(example: Example, data_filter: dict[str, Any]) -> bool:
    """Whether an example passes `data.filter`: every listed label (or `meta.KEY`) equals its value."""
    def value_of(key: str) -> Any:
        return example.meta.get(key[5:]) if key.startswith("meta.") else example.labels.get(key)
    return all(value_of(key) == value for key, value in data_filter.items())
