"""Examples → model inputs: `[CLS] context [SEP] text [SEP]` windows with each task's targets.

Truncation cuts the context first (down to a quarter of the window); a text longer
than what is left is split into overlapping windows (`stride` tokens shared) so
that every character is scored. Token offsets always point into the text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from kold_span.data.example import Context, Example
from kold_span.errors import ConfigError
from kold_span.models.kinds import kind_of
from kold_span.models.tasks import Task

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
        """The context as one string and whether it is a dialogue (cut from the left).

        Example:
            >>> InputEncoder(tokenizer=None, max_turns=2).context_string(["A: 안녕", "B: 네", "A: 밥 먹었어?"])
            ('B: 네 / A: 밥 먹었어?', True)
        """
        if self.context_mode == "none" or context is None:
            return None, False
        if isinstance(context, str):
            return (context if context.strip() else None), False
        turns = [t for t in context if t and t.strip()]
        if self.max_turns is not None:
            turns = turns[len(turns) - self.max_turns:] if self.max_turns > 0 else []
        return (TURN_SEPARATOR.join(turns) if turns else None), True

    def _template(self, pair: bool) -> tuple[list[int], list[int], list[int]]:
        """The special tokens around (context, text): prefix, middle and suffix ids."""
        cache = self.__dict__.setdefault("_templates", {})
        if pair not in cache:
            enc = self.tokenizer("a", "b") if pair else self.tokenizer("a")
            ids, seq = enc["input_ids"], enc.sequence_ids()
            content = [i for i, s in enumerate(seq) if s is not None]
            last = 1 if pair else 0
            first_last = [i for i, s in enumerate(seq) if s == last]
            first_ctx = [i for i, s in enumerate(seq) if s == 0]
            prefix = ids[:content[0]]
            middle = ids[first_ctx[-1] + 1:first_last[0]] if pair else []
            suffix = ids[first_last[-1] + 1:]
            cache[pair] = (prefix, middle, suffix)
        return cache[pair]

    def encode(self, text: str, context: Context = None) -> list[dict[str, Any]]:
        """All windows of one example: input ids, masks, text offsets and a text-token mask."""
        return self.encode_many([text], [context])[0]

    def encode_many(self, texts: Sequence[str], contexts: Sequence[Context]) -> list[list[dict[str, Any]]]:
        """`encode` for many examples, with one batched tokenizer call for all their strings."""
        pairs = [(text, self.context_string(context)) for text, context in zip(texts, contexts, strict=True)]
        if not pairs:
            return []
        strings = list(dict.fromkeys([text for text, _ in pairs] + [ctx for _, (ctx, _) in pairs if ctx is not None]))
        # Whole texts are tokenized before they are cut into windows, so a text longer than the model's
        # window is expected here: transformers' warning that it "will result in indexing errors" is wrong.
        enc = self.tokenizer(strings, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        tokens = {s: (ids, [tuple(o) for o in offsets])
                  for s, ids, offsets in zip(strings, enc["input_ids"], enc["offset_mapping"])}
        return [self._windows(tokens[text], tokens[ctx][0] if ctx is not None else [], is_dialogue)
                for text, (ctx, is_dialogue) in pairs]

    def _windows(self, text_tokens: tuple[list[int], list[tuple[int, int]]], ctx_ids: list[int],
                 is_dialogue: bool) -> list[dict[str, Any]]:
        text_ids, text_offsets = text_tokens
        if ctx_ids:
            prefix, middle, suffix = self._template(pair=True)
            budget = self.max_length - len(prefix) - len(middle) - len(suffix)
            # an empty text still needs its one position of room (its window holds no text token)
            keep = min(len(ctx_ids), max(budget - max(len(text_ids), 1), budget // 4))
            # Titles keep their beginning; dialogues keep their latest turns.
            ctx_ids = ctx_ids[len(ctx_ids) - keep:] if is_dialogue else ctx_ids[:keep]
        if not ctx_ids:
            prefix, middle, suffix = self._template(pair=False)
        room = self.max_length - len(prefix) - len(ctx_ids) - len(middle) - len(suffix)
        if room < 1:
            raise ConfigError(f"model.max_length={self.max_length} leaves no room for the text")
        stride = max(0, min(self.stride, room // 2))
        windows, start = [], 0
        while True:
            piece = slice(start, start + room)
            head = prefix + ctx_ids + middle
            ids = head + text_ids[piece] + suffix
            n_text = len(text_ids[piece])
            text_mask = [0] * len(head) + [1] * n_text + [0] * len(suffix)
            windows.append({
                "input_ids": ids,
                "attention_mask": [1] * len(ids),
                "token_type_ids": [0] * len(head) + [1 if ctx_ids else 0] * (n_text + len(suffix)),
                # tuples of ints, shared with the tokens: the collector stops tracking them, where a list per
                # token (17,000 in a 20,000-character comment) was walked by every full collection
                "offsets": [(0, 0)] * len(head) + text_offsets[piece] + [(0, 0)] * len(suffix),
                "text_mask": text_mask,
            })
            if start + room >= len(text_ids):
                return windows
            start += room - stride


def encode_example(encoder: InputEncoder, tasks: Sequence[Task], example: Example,
                   index: int) -> list[dict[str, Any]]:
    """Windows of one example with every task's target attached (by the task's kind)."""
    windows = encoder.encode(example.text, example.context)
    for window in windows:
        window["example_index"] = index
    for task in tasks:
        kind_of(task).add_targets(task, example, windows)
    return windows


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
        batch.update(kind_of(task).collate(task, windows))
    return batch
