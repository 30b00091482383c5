"""The closed sets some config keys and options choose from: task kinds, label problems, snap modes, precisions.

Each is a `str`-valued `Enum`, so a member is equal to, hashes as and serialises as its string:
configs, a saved model's `config.json` and JSON outputs hold "span", "multi", "morpheme" as
before, and `TaskKind.SPAN == "span"`. They live in the config layer because the config
validates them; every other layer imports them from here.

What a kind or problem *is* (which options apply to it) is stated here once, as methods of
its member. What it *does* lives a layer up: `kold_span.models.kinds` (targets, loss,
probabilities, decoding, scores and thresholds, one module per kind; `kold_span.models.kinds.problems`
for the label problems). A new kind is a member here and its module under `models/kinds/`.
"""
from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar

from kold_span.errors import ArgumentError

C = TypeVar("C", bound="Choice")


class Choice(str, Enum):
    """A `str`-valued enum member that prints, formats and serialises as its value."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The allowed strings, in definition order."""
        return tuple(member.value for member in cls)

    @classmethod
    def parse(cls: type[C], value: Any, what: str) -> C:
        """The member named by `value` (a member or its string); a ValueError naming `what` otherwise.

        Example:
            >>> Problem.parse("multi", "problem") is Problem.MULTI
            True
            >>> Problem.parse("many", "problem")
            Traceback (most recent call last):
            ...
            kold_span.errors.ArgumentError: problem must be one of ('single', 'multi', 'soft'), got 'many'
        """
        try:
            return cls(value)
        except ValueError:
            raise ArgumentError(f"{what} must be one of {cls.values()}, got {value!r}") from None


class Problem(Choice):
    """How a sequence task's labels relate to an example (span tasks ignore it)."""

    SINGLE = "single"  # one label per example
    MULTI = "multi"  # any set of labels per example, each decided on its own
    SOFT = "soft"  # a distribution over the labels: the annotators' vote shares

    @property
    def label_valued(self) -> bool:
        """Whether the gold is label values read off each example (single, multi), not vote shares (soft)."""
        return self is not Problem.SOFT

    @property
    def thresholded(self) -> bool:
        """Whether each label is predicted on its own at a probability threshold (multi), not the top label."""
        return self is Problem.MULTI


class TaskKind(Choice):
    """What a task's head predicts: labels of the whole text, or BIO tags of its tokens (character spans)."""

    SEQUENCE = "sequence"
    SPAN = "span"

    def takes_threshold(self, problem: Problem) -> bool:
        """Whether `threshold` applies: span tasks (on P(B) + P(I)) and multi-label sequence tasks.

        Example:
            >>> TaskKind.SPAN.takes_threshold(Problem.SINGLE), TaskKind.SEQUENCE.takes_threshold(Problem.SINGLE)
            (True, False)
        """
        return self is TaskKind.SPAN or problem.thresholded

    def label_valued(self, problem: Problem) -> bool:
        """Whether the gold is label values on each example (single- and multi-label sequence tasks).

        Class weights, the fused n-gram model and the label baselines apply to these only.
        """
        return self is TaskKind.SEQUENCE and problem.label_valued

    def takes_decision(self, problem: Problem) -> bool:
        """Whether a decision policy (allow / review / remove) applies: span tasks and single- or multi-label tasks."""
        return self is TaskKind.SPAN or problem.label_valued

    def single_label(self, problem: Problem) -> bool:
        """Whether the task predicts exactly one label per example (a single-label sequence task)."""
        return self is TaskKind.SEQUENCE and problem is Problem.SINGLE

    @property
    def gated(self) -> bool:
        """Whether a task of this kind may be gated by a true/false task (span tasks)."""
        return self is TaskKind.SPAN

    @property
    def main_metric(self) -> str:
        """The metric a task of this kind is usually monitored by."""
        return "char_f1" if self is TaskKind.SPAN else "macro_f1"


class SnapMode(Choice):
    """How predicted spans are widened: not at all, or to whole morphemes (Kiwi), eojeol or words."""

    NONE = "none"
    MORPHEME = "morpheme"  # Kiwi's morphemes (Korean)
    EOJEOL = "eojeol"  # runs of non-space characters, punctuation included
    WORD = "word"  # Unicode default word boundaries (UAX #29): any language, no Kiwi

    @property
    def uses_morphemes(self) -> bool:
        """Whether snapping reads Kiwi's morphemes (worth prefetching for a batch of texts)."""
        return self is SnapMode.MORPHEME


class EvasionKind(Choice):
    """A way of disguising words to slip past a filter (`text.perturb`; `data.augment.evasion`, `kold-span robustness`).

    Example:
        >>> EvasionKind.parse("leet", "kind").value, len(EvasionKind.values())
        ('leet', 21)
    """

    NFD = "nfd"  # Hangul syllables decomposed into conjoining jamo (what macOS and some keyboards produce)
    COMPAT_JAMO = "compat_jamo"  # a word's first syllable as compatibility jamo: 시발 → ㅅㅣ발
    ZERO_WIDTH = "zero_width"  # a zero-width space inside a word
    BIDI = "bidi"  # bidi embedding, override or isolate controls around a word (invisible in display)
    FULLWIDTH = "fullwidth"  # ASCII letters and digits as their fullwidth forms
    CONFUSABLES = "confusables"  # Latin letters as Cyrillic or Greek look-alikes
    LEET = "leet"  # digits and symbols for Latin letters: idiot → 1d10t
    SEPARATORS = "separators"  # a separator inside a word: 씨.발, f*ck
    DIGIT_INSERT = "digit_insert"  # a digit inside a word: 시1발
    SPACED_SYLLABLES = "spaced_syllables"  # a space between each character: 씨 발
    KEYBOARD = "keyboard"  # Hangul typed with the English keys of the 2-beolsik layout: 시발 → tlqkf
    ELONGATION = "elongation"  # a letter repeated: stupid → stuuupid
    CHAR_SWAP = "char_swap"  # two neighbouring characters exchanged
    DELETION = "deletion"  # one character left out
    DUPLICATION = "duplication"  # one character doubled
    ADJACENT_KEY = "adjacent_key"  # a key typed beside the right one (QWERTY, or the Korean 2-set layout)
    DROPPED_VOWELS = "dropped_vowels"  # inner vowels left out (stupid → stpd); Hangul as its initials (병신 → ㅂㅅ)
    SOUND_ALIKE = "sound_alike"  # a spelling that sounds the same: fuck → phuck, 씨발 → 시발
    JOINED = "joined"  # the space after a word left out: you idiot → youidiot
    LETTER_LIKE = "letter_like"  # letters as characters Unicode's data makes them (ⓘ, ᴅ, 🇮, ɪ)
    MASKS = "masks"  # inner letters as symbols: fuck → f#@k, 개새끼 → 개x끼


class Targets(Choice):
    """Which words a perturbation may disguise: any word, or only words inside a gold span."""

    ALL = "all"
    SPANS = "spans"


class Precision(Choice):
    """The number format the network predicts in: chosen for the device (auto), bf16 or fp16 autocast, float32.

    Example:
        >>> Precision.values()
        ('auto', 'bf16', 'fp16', 'fp32')
    """

    AUTO = "auto"
    BF16 = "bf16"
    FP16 = "fp16"
    FP32 = "fp32"


class Runtime(Choice):
    """What runs the network at prediction: torch, ONNX Runtime over the exported graph, or ONNX where there is one.

    Example:
        >>> Runtime.values()
        ('auto', 'torch', 'onnx')
    """

    AUTO = "auto"  # ONNX Runtime when the model directory has an exported graph, else torch
    TORCH = "torch"
    ONNX = "onnx"


class Quantization(Choice):
    """The number format of an exported ONNX graph's weights: float32 as trained, or int8.

    Example:
        >>> Quantization.values()
        ('none', 'int8')
    """

    NONE = "none"
    INT8 = "int8"  # dynamic (activations scaled per batch), or static with a calibration file


class OutputFormat(Choice):
    """What `kold-span predict` writes: JSON lines, or Parquet (`inference.outputs.output_kind`).

    Example:
        >>> OutputFormat.values()
        ('jsonl', 'parquet')
    """

    JSONL = "jsonl"
    PARQUET = "parquet"
