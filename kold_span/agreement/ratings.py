"""Examples with per-annotator `Annotation`s → one label's ratings table (per item, annotator → value).

The table is the input of every coefficient in `kold_span.agreement.coefficients`. Labels may be
bool, str, int or float, one kind per label; None and NaN mean "not labelled".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Optional, Sequence

from kold_span.data.example import Example
from kold_span.errors import DataError

LabelKind = str  # "bool", "number" or "text": one per label, see `label_kind`


@dataclass
class RatingsTable:
    """One label's ratings (items = examples with at least one rating) and what was left out."""

    label: str
    ratings: list[dict[str, Hashable]]
    examples: list[Example]  # aligned with `ratings`
    value_kind: Optional[LabelKind] = None  # of every value (None when nothing was rated)
    unrated_examples: int = 0  # examples with no rating of the label
    missing_values: int = 0  # annotations without the label, or with None
    duplicate_annotations: int = 0  # an annotator's second annotation of one example (the first is kept)


def label_kind(value: Any) -> Optional[LabelKind]:
    """"bool", "number" (int or float) or "text" (str); None for anything else (a list, a dict).

    Example:
        >>> label_kind(True), label_kind(3), label_kind(0.5), label_kind("yes"), label_kind(["a"])
        ('bool', 'number', 'number', 'text', None)
    """
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, (int, float)) else ("text" if isinstance(value, str) else None)


def default_label(examples: Sequence[Example]) -> str:
    """The first annotation label key (in order of appearance) whose values are single bool, str or numbers.

    None values are allowed (they mean "not labelled"); a key with any list or dict
    value (KOLD's TGT, GRP) is skipped.

    Example:
        >>> from kold_span.data import Annotation
        >>> ex = Example(id="1", text="t", annotations=[Annotation("a", {"TGT": ["group"], "OFF": True})])
        >>> default_label([ex])
        'OFF'
    """
    kinds: dict[str, set[type]] = {}
    for example in examples:
        for annotation in example.annotations:
            for key, value in annotation.labels.items():
                kinds.setdefault(key, set()).add(type(value))
    for key, types in kinds.items():
        present = types - {type(None)}
        if present and present <= {bool, str, int, float}:
            return key
    raise DataError(f"no annotation label holds single bool, str, int or float values (label keys seen: "
                    f"{sorted(kinds)}); the corpus may carry no per-annotator labels")


def default_span_type(examples: Sequence[Example]) -> Optional[str]:
    """The first span type found in the annotations, or None when no annotation has spans."""
    for example in examples:
        for annotation in example.annotations:
            for name in annotation.spans:
                return name
    return None


def ratings_table(examples: Sequence[Example], label: str) -> RatingsTable:
    """Per example, annotator → value of `label`; examples nobody labelled are left out.

    None and a float NaN (how table exports write an empty cell) mean "not labelled". A value of `label` that is not
    a single bool, str or number, or values that mix kinds (``1`` and ``"1"``, or ``True`` and ``1``, would count as
    one label or two), are a `DataError`.
    """
    table = RatingsTable(label=label, ratings=[], examples=[])
    first: Optional[str] = None  # where the first value was seen, for the error on a mix of kinds
    for example in examples:
        item: dict[str, Hashable] = {}
        for annotation in example.annotations:
            value = annotation.labels.get(label)
            where = f"example {example.id!r} (annotator {annotation.annotator!r})"
            if value is None or (isinstance(value, float) and math.isnan(value)):
                table.missing_values += 1
                continue
            kind = label_kind(value)
            if kind is None:
                raise DataError(f"label {label!r} of {where} is a {type(value).__name__}; agreement needs one "
                                f"value per annotator, pick a bool, str or number label with --label")
            if table.value_kind is None:
                table.value_kind, first = kind, f"{where}: {value!r}"
            elif kind != table.value_kind:
                raise DataError(f"label {label!r} mixes kinds of values: {first} is {table.value_kind}, {where}: "
                                f"{value!r} is {kind}; write every value of the label as one kind")
            if annotation.annotator in item:
                table.duplicate_annotations += 1
                continue
            item[annotation.annotator] = value
        if item:
            table.ratings.append(item)
            table.examples.append(example)
        else:
            table.unrated_examples += 1
    return table
