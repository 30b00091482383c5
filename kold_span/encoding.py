"""Examples → model inputs: `[CLS] context [SEP] text [SEP]` windows with BIO targets.

Truncation cuts the context first (down to a quarter of the window); a text longer
than what is left is split into overlapping windows (`stride` tokens shared) so
that every character is scored. Token offsets always point into the text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from kold_span.align import IGNORE_INDEX, spans_to_tags
from kold_span.data import Context, Example
from kold_span.tasks import SPAN_TAGS, Task

TURN_SEPARATOR = " / "


@dataclass
class InputEncoder:
    """Tokenizes (context, text) pairs into windows for one tokenizer and context policy."""

    tokenizer: Any
    max_length: int = 128
    stride: int = 32
    context_mode: str = "auto"
    max_turns: Optional[int] = None

    def context_string(self, context: Context) -> tuple[Optional[str], bool]:
        """The context as one string and whether it is a dialogue (cut from the left)."""
        if self.context_mode == "none" or context is None:
            return None, False
        if isinstance(context, str):
            return (context if context.strip() else None), False
        turns = [t for t in context if t and t.strip()]
        if self.max_turns is not None:
            turns = turns[len(turns) - self.max_turns:] if self.max_turns > 0 else []
        return (TURN_SEPARATOR.join(turns) if turns else None), True

    def _cut_context(self, context: str, keep: int, from_left: bool) -> Optional[str]:
        """Keep `keep` tokens of the context: the first ones, or the last ones for dialogues."""
        if keep <= 0:
            return None
        offsets = self.tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        if len(offsets) <= keep:
            return context
        return context[offsets[-keep][0]:] if from_left else context[:offsets[keep - 1][1]]

    def encode(self, text: str, context: Context = None) -> list[dict[str, Any]]:
        """All windows of one example: input ids, masks, text offsets and a text-token mask."""
        tok = self.tokenizer
        ctx, is_dialogue = self.context_string(context)
        if ctx is not None:
            budget = self.max_length - tok.num_special_tokens_to_add(pair=True)
            text_len = len(tok(text, add_special_tokens=False)["input_ids"])
            ctx_len = len(tok(ctx, add_special_tokens=False)["input_ids"])
            keep = min(ctx_len, max(budget - text_len, budget // 4))
            ctx = self._cut_context(ctx, keep, is_dialogue)
        if ctx is None:
            budget = self.max_length - tok.num_special_tokens_to_add(pair=False)
            stride = max(0, min(self.stride, budget // 2 - 1))
            enc = tok(text, truncation=True, max_length=self.max_length, stride=stride,
                      return_overflowing_tokens=True, return_offsets_mapping=True)
            text_seq = 0
        else:
            ctx_tokens = len(tok(ctx, add_special_tokens=False)["input_ids"])
            room = self.max_length - tok.num_special_tokens_to_add(pair=True) - ctx_tokens
            stride = max(0, min(self.stride, room // 2 - 1))
            enc = tok(ctx, text, truncation="only_second", max_length=self.max_length, stride=stride,
                      return_overflowing_tokens=True, return_offsets_mapping=True)
            text_seq = 1
        windows = []
        for w in range(len(enc["input_ids"])):
            seq_ids = enc.sequence_ids(w)
            text_mask = [1 if s == text_seq else 0 for s in seq_ids]
            first_text = text_mask.index(1) if 1 in text_mask else len(text_mask)
            windows.append({
                "input_ids": list(enc["input_ids"][w]),
                "attention_mask": [1] * len(seq_ids),
                "token_type_ids": [0 if (text_seq == 0 or i < first_text) else 1 for i in range(len(seq_ids))],
                "offsets": [list(o) if m else [0, 0] for o, m in zip(enc["offset_mapping"][w], text_mask)],
                "text_mask": text_mask,
            })
        return windows


def span_targets(task: Task, example: Example, window: dict[str, Any]) -> list[int]:
    """BIO tag ids of one span task for one window (ignore index outside the text)."""
    tags = spans_to_tags(example.spans.get(task.source, []), [tuple(o) for o in window["offsets"]],
                         segment_mask=[bool(m) for m in window["text_mask"]], text=example.text)
    return [IGNORE_INDEX if t is None else SPAN_TAGS.index(t[0]) for t in tags]


def encode_example(encoder: InputEncoder, tasks: Sequence[Task], example: Example,
                   index: int) -> list[dict[str, Any]]:
    """Windows of one example with every task's target attached."""
    windows = encoder.encode(example.text, example.context)
    seq_targets = {t.name: missing_as_ignored(t, t.target(example)) for t in tasks if t.kind == "sequence"}
    for window in windows:
        window["example_index"] = index
        for task in tasks:
            if task.kind == "span":
                window[f"tags_{task.name}"] = span_targets(task, example, window)
            else:
                window[f"target_{task.name}"] = seq_targets[task.name]
    return windows


def missing_as_ignored(task: Task, target: Any) -> Any:
    """A missing sequence label: the ignore index (single) or an empty vector (multi/soft)."""
    if target is not None:
        return target
    return IGNORE_INDEX if task.problem == "single" else []


def collate(windows: list[dict[str, Any]], tasks: Sequence[Task], pad_id: int):
    """Pad a list of windows into tensors (dynamic padding to the longest window)."""
    import torch

    length = max(len(w["input_ids"]) for w in windows)

    def pad(key: str, value: int) -> "torch.Tensor":
        return torch.tensor([list(w[key]) + [value] * (length - len(w[key])) for w in windows], dtype=torch.long)

    batch = {"input_ids": pad("input_ids", pad_id), "attention_mask": pad("attention_mask", 0),
             "token_type_ids": pad("token_type_ids", 0),
             "window_index": torch.tensor([w.get("window_index", -1) for w in windows], dtype=torch.long)}
    for task in tasks:
        if task.kind == "span":
            key = f"tags_{task.name}"
            if key in windows[0]:
                batch[key] = pad(key, IGNORE_INDEX)
            continue
        key = f"target_{task.name}"
        if key not in windows[0]:
            continue
        if task.problem == "single":
            batch[key] = torch.tensor([w[key] for w in windows], dtype=torch.long)
        else:
            batch[key] = torch.tensor([w[key] or [0.0] * task.num_outputs for w in windows], dtype=torch.float)
            batch[f"mask_{task.name}"] = torch.tensor([1.0 if w[key] else 0.0 for w in windows])
    return batch
