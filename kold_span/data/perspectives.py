"""Annotator-conditioned (perspectivist) examples: one example per (item, annotator).

With `data.perspective: {label: irony, traits: [gender, age]}` every item becomes one example
per annotator, labelled with that annotator's own label, and the chosen traits are verbalised
as an extra context segment placed after the item's own context (so dialogue truncation,
which keeps the latest turns, keeps it too), e.g. ``annotator: gender female, generation Z``.
With `traits: []` the input carries no trait (the PERSEID "none" setting).
"""
from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from kold_span.data.example import Context, Example, context_turns
from kold_span.errors import ArgumentError

# Generations by age (years) for verbalising `age`; ages are as reported by the corpus.
GENERATIONS = ((28, "generation Z"), (44, "millennial"), (60, "generation X"), (200, "boomer"))


def verbalise(traits: dict[str, Any], keys: Sequence[str]) -> Optional[str]:
    """'annotator: gender female, generation Z' from the chosen trait keys (None if none known)."""
    parts = [trait_phrase(key, traits.get(key)) for key in keys]
    parts = [p for p in parts if p]
    return "annotator: " + ", ".join(parts) if parts else None


def trait_phrase(key: str, value: Any) -> Optional[str]:
    """One trait in words: ages become generations, others 'key value' (None if unknown).

    Example:
        >>> trait_phrase("age", 23), trait_phrase("age", float("nan")), trait_phrase("gender", "Female")
        ('generation Z', None, 'gender female')
    """
    if value is None or value == "":
        return None
    if key == "age" and _is_number(value):
        age = float(value)
        if age != age:  # NaN: a corpus's missing age
            return None
        if not 0 <= age <= GENERATIONS[-1][0]:
            raise ArgumentError(f"age {value!r} is outside 0 … {GENERATIONS[-1][0]}")
        return next(name for limit, name in GENERATIONS if age <= limit)
    return f"{key.replace('_', ' ')} {str(value).lower()}"


def check_perspective(perspective: dict[str, Any], traits: Sequence[str]) -> None:
    """An `ArgumentError` for a trait the model was not trained with, or an age that is no number of years.

    Example:
        >>> try:
        ...     check_perspective({"Gender": "Female"}, ["age", "gender"])
        ... except ArgumentError as err:
        ...     print(err)
        perspective: unknown trait(s) Gender; this model reads age, gender (names as written)
    """
    unknown = [key for key in perspective if key not in traits]
    if unknown:
        raise ArgumentError(f"perspective: unknown trait(s) {', '.join(unknown)}; this model reads "
                            f"{', '.join(traits) or 'no trait'} (names as written)")
    age = perspective.get("age")
    if age not in (None, "") and not _is_number(age):
        raise ArgumentError(f"perspective: age must be a number of years, got {age!r}")
    for key in traits:
        trait_phrase(key, perspective.get(key))


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def with_perspective(context: Context, segment: Optional[str]) -> Context:
    """The context with the annotator segment appended (unchanged without one)."""
    return context if segment is None else context_turns(context) + [segment]


def expand_by_annotator(examples: Iterable[Example], label: str, traits: Sequence[str]) -> list[Example]:
    """One example per annotator who gave `label`; the annotator's traits go into the context."""
    return [Example(id=f"{ex.id}#{ann.annotator}", text=ex.text,
                    context=with_perspective(ex.context, verbalise(ann.traits, traits)),
                    labels={label: ann.labels[label]}, spans={},
                    meta={**ex.meta, "item": ex.id, "annotator": ann.annotator,
                          "traits": {k: ann.traits.get(k) for k in traits}})
            for ex in examples for ann in ex.annotations if ann.labels.get(label) is not None]


def parse_perspective(text: str) -> dict[str, str]:
    """'gender=Female,age=23' → {'gender': 'Female', 'age': '23'} (for `predict --perspective`)."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ArgumentError(f"--perspective {text!r}: expected KEY=VALUE pairs separated by commas")
        out[key.strip()] = value.strip()
    return out
