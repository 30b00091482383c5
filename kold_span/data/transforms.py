"""Transforms of examples for training: KoCoSa's speaker-swap augmentation.

For a random share of the dialogues the speaker marks A and B are exchanged, so a model cannot
learn which letter tends to answer sarcastically (the KoCoSa paper's augmentation).
"""
from __future__ import annotations

import random
import re
from dataclasses import replace

from kold_span.data.example import Example

_MARK = re.compile(r"^([A-Z]):")
_SWAP = {"A": "B", "B": "A"}
_SPEAKER_LETTER = re.compile(r"(?<![A-Za-z])[AB](?![A-Za-z])")


def swap_share(examples: list[Example], share: float, seed: int) -> list[Example]:
    """The examples, with exactly round(share × n) of them, chosen with `seed`, speaker-swapped."""
    chosen = set(random.Random(seed).sample(range(len(examples)), round(share * len(examples))))
    return [swap_speakers(ex) if i in chosen else ex for i, ex in enumerate(examples)]


def swap_speakers(example: Example) -> Example:
    """A copy of a KoCoSa example with speakers A and B exchanged (marks, meta and explanation).

    >>> ex = Example(id="x", text="B: 참 잘했네", context=["A: 시험 망쳤어"],
    ...              meta={"speakers": ["A"], "response_speaker": "B", "explanation": "B가 A를 비꼼",
    ...                    "speakers_swapped": False})
    >>> swapped = swap_speakers(ex)
    >>> swapped.context, swapped.text, swapped.meta["explanation"]
    (['B: 시험 망쳤어'], 'A: 참 잘했네', 'A가 B를 비꼼')
    """
    def swap_mark(turn: str) -> str:
        return _MARK.sub(lambda m: f"{_SWAP.get(m.group(1), m.group(1))}:", turn, count=1)

    meta = dict(example.meta)  # the KoCoSa reader's keys, where present (a JSONL file may lack them)
    if "speakers" in meta:
        meta["speakers"] = [_SWAP.get(s, s) for s in meta["speakers"]]
    if "response_speaker" in meta:
        meta["response_speaker"] = _SWAP.get(meta["response_speaker"], meta["response_speaker"])
    if "explanation" in meta:
        meta["explanation"] = _SPEAKER_LETTER.sub(lambda m: _SWAP[m.group(0)], meta["explanation"])
    meta["speakers_swapped"] = not meta.get("speakers_swapped", False)
    context = [swap_mark(t) for t in example.context] if isinstance(example.context, list) else example.context
    return replace(example, text=swap_mark(example.text), context=context, labels=dict(example.labels), meta=meta)
