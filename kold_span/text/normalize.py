"""Evasion-robust normalization that keeps an exact map back to the original characters.

People who want a comment past a filter write `시1발`, `씨.발`, `ㅅㅣ발`, `씨 발`, `tlqkf`, `f*ck`,
`1d10t`, Cyrillic look-alikes (`іdіot`), fullwidth letters, zero-width characters inside words,
bidi overrides and decomposed Hangul. `normalize(text, steps)` undoes those, step by named step
(each switchable), and returns a `Normalized`: `aligned`, an `AlignedText` (the normalized text
with every character's source range in the original), and `signals`, how many edits each kind
made, so a moderator sees the obfuscation itself. Spans found on the normalized text go back to the original
with `AlignedText.to_original`, which covers removed characters inside them and never cuts a
grapheme cluster.

The steps run in the order of `STEPS`, each a function registered in `NORMALIZERS` under its name;
docs/ROBUSTNESS.md's table says what each one does and what it leaves alone (the one place that lists
them; `nfc` runs again after the others, which may leave a letter beside a combining mark).

The word lists are wordfreq's (English, Spanish, Korean frequency lists); a word counts when its
Zipf frequency reaches `WORD_ZIPF`. Laughter (`ㅋㅋㅋㅋ`) is left alone; a run of initial consonants
that abbreviates a common Korean word (`ㅅㅂ`, `ㅂㅅ`) stays as written and is counted as the signal
`chosung` (with the `jamo` step). `UNDONE_KINDS` says which perturbations of `text.perturb` the
steps read back, and where. docs/ROBUSTNESS.md says how many ordinary texts each step changes.

Example:
    >>> result = normalize("너 씨.발 \\u200b바보", ("invisible", "separators"))
    >>> result.aligned.text, result.signals
    ('너 씨발 바보', {'invisible': 1, 'separators': 1})
    >>> result.aligned.to_original(2, 4)
    (2, 5)
"""
from __future__ import annotations

import dataclasses
import functools
import math
import unicodedata
from dataclasses import dataclass, field
from itertools import product
from typing import Callable, Iterable, Optional, Sequence

import regex

from kold_span.config.choices import EvasionKind
from kold_span.config.registry import Registry
from kold_span.data.example import Context, Example
from kold_span.text.aligned import AlignedText, Replacement
from kold_span.text.hangul import KEYBOARD, syllables
from kold_span.text.letters import LEET, is_capital, lookalike_letters, readings

STEPS = ("nfc", "width", "invisible", "confusables", "letters", "elongation", "leet", "keyboard", "jamo", "separators",
         "masks", "spaced")
# A word of a word list is one at least this frequent (Zipf scale: 3 = once per million words).
WORD_ZIPF = 3.0
MAX_PASSES = 3

# The perturbation kinds (`text.perturb`) this normalizer reads back, and where it promises to:
# tests/test_roundtrip.py disguises common words by each and checks the words come back.
UNDONE_KINDS: dict[EvasionKind, str] = {
    EvasionKind.NFD: "any text",
    EvasionKind.COMPAT_JAMO: "any Hangul word",
    EvasionKind.ZERO_WIDTH: "any word",
    EvasionKind.BIDI: "any word",
    EvasionKind.FULLWIDTH: "any word",
    EvasionKind.CONFUSABLES: "a common English or Spanish word of 3+ letters (the case Unicode's data gives), "
                             "unless part of it reads as a common word of another language (čan stays)",
    EvasionKind.LETTER_LIKE: "a common English or Spanish word of 3+ letters (the case Unicode's data gives), "
                             "unless part of it reads as a common word of another language (čan stays)",
    EvasionKind.LEET: "a common English or Spanish word that keeps two letters as written, is no number with a "
                      "unit once disguised (1-3 letters, then only digits, or the other way round), does not end "
                      "in @ or @s (tod@s) nor start with @ (a handle) and that no more frequent word spells with "
                      "the same symbols",
    EvasionKind.SEPARATORS: "a common Korean word cut by a separator other than a comma",
    EvasionKind.DIGIT_INSERT: "a common Korean word (not after 제, an ordinal); a common English or Spanish word "
                              "of 4+ letters whose digit reads as no letter of a more frequent word",
    EvasionKind.SPACED_SYLLABLES: "a common Korean word of two syllables; a common English or Spanish word of 3+ "
                                  "letters",
    EvasionKind.KEYBOARD: "a common Korean word of two syllables or more typed without shift, whose keys are no "
                          "English or Spanish word",
    EvasionKind.ELONGATION: "a common English or Spanish word whose letter, once or twice, spells no more "
                            "frequent word (soon stays son)",
}

Counts = dict[str, int]
Step = Callable[[AlignedText], tuple[list[Replacement], Counts]]
# The steps by name; they run in the order of `STEPS`.
NORMALIZERS: Registry[Step] = Registry("normalization step", "steps")


@dataclass(frozen=True)
class Normalized:
    """A normalized text aligned with the original, and how many edits of each kind made it."""

    aligned: AlignedText
    signals: dict[str, int] = field(default_factory=dict)


def check_steps(steps: Iterable[str]) -> tuple[str, ...]:
    """The steps in the order they run; a ValueError names an unknown one."""
    steps = tuple(steps)
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"unknown normalization step(s) {', '.join(map(repr, unknown))}; known: {', '.join(STEPS)}")
    return tuple(s for s in STEPS if s in steps)


def normalize(text: str, steps: Optional[Sequence[str]] = None) -> Normalized:
    """`text` normalized by `steps` (names from `STEPS`, run in that order), with its alignment and signals.

    `signals` holds only the kinds that made an edit.

    Example:
        >>> normalize("ｉｄｉｏｔ").aligned.text, normalize("ㅋㅋㅋ ㅅㅂ").signals
        ('idiot', {'chosung': 1})
    """
    steps = check_steps(STEPS if steps is None else steps)
    aligned = AlignedText.identity(text)
    signals: Counts = {}
    # A step can open a case for an earlier one (a joined word to read again): a text that changed
    # goes through again until nothing changes, so normalizing twice changes nothing.
    for _ in range(MAX_PASSES):
        before = aligned.text
        for name in steps + (("nfc",) if "nfc" in steps and len(steps) > 1 else ()):
            replacements, counts = NORMALIZERS.get(name)(aligned)
            if replacements:
                aligned = aligned.edit(replacements)
            for kind, count in counts.items():
                if count:
                    signals[kind] = signals.get(kind, 0) + count
        if aligned.text == before:
            break
    if "jamo" in steps and (chosung := len(chosung_abbreviations(aligned.text))):
        signals["chosung"] = chosung
    return Normalized(aligned, signals)


# -- nfc and width ------------------------------------------------------------------------
_GRAPHEME = regex.compile(r"\X")


@NORMALIZERS.register("nfc")
def _nfc(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Each grapheme cluster that NFC changes, composed (NFC never crosses a cluster boundary)."""
    if unicodedata.is_normalized("NFC", t.text):
        return [], {}
    edits = [(m.start(), m.end(), unicodedata.normalize("NFC", m.group())) for m in _GRAPHEME.finditer(t.text)
             if not unicodedata.is_normalized("NFC", m.group())]
    if "".join(_apply(t.text, edits)) != unicodedata.normalize("NFC", t.text):
        edits = [(0, len(t.text), unicodedata.normalize("NFC", t.text))]  # a composition across clusters
    return edits, {"nfc": len(edits)}


def _apply(text: str, edits: list[Replacement]) -> list[str]:
    """The pieces of `text` with `edits` applied."""
    pieces, done = [], 0
    for start, end, new in edits:
        pieces += [text[done:start], new]
        done = end
    return pieces + [text[done:]]


_WIDTH_TAGS = ("<wide>", "<narrow>", "<font>")


@functools.lru_cache(maxsize=4096)
def _width_fold(char: str) -> Optional[str]:
    """The plain letter or digit a fullwidth, halfwidth or mathematical one stands for, else None."""
    tag, *code = unicodedata.decomposition(char).split() or [""]
    if tag not in _WIDTH_TAGS or len(code) != 1:
        return None
    # The decomposition itself, not NFKC: halfwidth Hangul letters stay compatibility jamo.
    folded = chr(int(code[0], 16))
    return folded if folded.isalnum() else None


@functools.lru_cache(maxsize=64)
def _is_wide_space(char: str) -> bool:
    """Whether a character is a space other than U+0020 whose compatibility form is a plain space.

    No-break, en, em, thin, hair, narrow no-break, medium mathematical and ideographic spaces;
    not tabs or line breaks (not Zs), nor the Ogham space mark (no compatibility form).
    """
    return char != " " and unicodedata.category(char) == "Zs" and unicodedata.normalize("NFKC", char) == " "


@NORMALIZERS.register("width")
def _width(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Fullwidth, halfwidth and mathematical letters and digits to plain ones; wide and no-break spaces to a space."""
    # Each distinct character is looked up once; a text with none to change is not walked in Python.
    plain = {}
    for c in set(t.text):
        if c == "\u00a0" or (ord(c) > 0x1fff and _is_wide_space(c)):
            plain[c] = " "
        elif ord(c) > 0x2000 and (folded := _width_fold(c)):
            plain[c] = folded
    if not plain:
        return [], {"width": 0, "spaces": 0}
    found = regex.finditer("[" + "".join(f"\\U{ord(c):08x}" for c in plain) + "]", t.text)
    edits = [(m.start(), m.end(), plain[m.group()]) for m in found]
    spaces = sum(1 for *_, new in edits if new == " ")
    return edits, {"width": len(edits) - spaces, "spaces": spaces}


# -- invisible characters -----------------------------------------------------------------
_BIDI = regex.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_INVISIBLE = regex.compile(r"[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200d\u2060-\u2064"
                           r"\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
                           r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_EMOJI = regex.compile(r"\p{Extended_Pictographic}|\p{Regional_Indicator}")
_JOINERS = "\u200c\u200d"
# Scripts that need no joiners: a joiner between letters of these (or digits, spaces) hides a word.
_PLAIN_SCRIPT = regex.compile(r"[\p{Latin}\p{Hangul}\p{Common}\p{Inherited}\p{Han}\p{Cyrillic}\p{Greek}]")


@NORMALIZERS.register("invisible")
def _invisible(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Invisible and control characters removed, bidi controls counted apart; emoji sequences kept whole."""
    counts = {"invisible": 0, "bidi": 0}
    edits: list[Replacement] = []
    text = t.text
    if not _BIDI.search(text) and not _INVISIBLE.search(text):
        return edits, counts
    for cluster in _GRAPHEME.finditer(text):
        emoji = _EMOJI.search(cluster.group()) is not None
        for i in range(cluster.start(), cluster.end()):
            char = text[i]
            if _BIDI.match(char):
                kind = "bidi"
            elif _INVISIBLE.match(char):
                if emoji and (char in _JOINERS or "\ufe00" <= char <= "\ufe0f" or char >= "\U000e0000"):
                    continue
                if char in _JOINERS and not _between_plain(text, i):
                    continue
                kind = "invisible"
            else:
                continue
            counts[kind] += 1
            edits.append((i, i + 1, ""))
    return edits, counts


# Short names for the hidden characters people use most (the others are shown by code point).
_HIDDEN_NAMES = {"\u00ad": "SHY", "\u061c": "ALM", "\u200b": "ZWSP", "\u200c": "ZWNJ", "\u200d": "ZWJ",
                 "\u200e": "LRM", "\u200f": "RLM", "\u202a": "LRE", "\u202b": "RLE", "\u202c": "PDF",
                 "\u202d": "LRO", "\u202e": "RLO", "\u2060": "WJ", "\u2066": "LRI", "\u2067": "RLI",
                 "\u2068": "FSI", "\u2069": "PDI", "\u3164": "HF", "\ufeff": "BOM"}


def hidden_characters(text: str) -> list[tuple[int, str]]:
    """The characters the `invisible` step would remove, as (offset, short name), for showing them.

    Example:
        >>> hidden_characters("a\u200bb\u202ec \U0001F468\u200d\U0001F469 \ufe01")
        [(1, 'ZWSP'), (3, 'RLO'), (10, 'U+FE01')]
    """
    edits, _ = _invisible(AlignedText.identity(text))
    return [(start, _HIDDEN_NAMES.get(text[start], f"U+{ord(text[start]):04X}")) for start, _end, _new in edits]


def _between_plain(text: str, i: int) -> bool:
    """Whether the nearest visible characters around position i are of scripts that need no joiner."""
    neighbours = [text[j] for j in (i - 1, i + 1) if 0 <= j < len(text)]
    return all(_PLAIN_SCRIPT.match(c) for c in neighbours)


# -- look-alike letters -------------------------------------------------------------------
_LETTERS = regex.compile(r"[\p{L}\p{M}]+")
_LATIN = regex.compile(r"\p{Latin}")
_NON_LATIN_LETTER = regex.compile(r"(?!\p{Latin})\p{L}")


@functools.lru_cache(maxsize=8192)
def _latin_lookalike(char: str) -> Optional[str]:
    """The one ASCII letter a non-Latin letter is confusable with, per Unicode's data, else None (also when it
    is several: `І` is an I or an l, which the `letters` step reads by the word they spell)."""
    if _LATIN.match(char) or not char.isalpha():
        return None
    letters = [target for target in lookalike_letters(char) if len(target) == 1]
    return letters[0] if len(letters) == 1 else None


@NORMALIZERS.register("confusables")
def _confusables(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Look-alike letters folded to Latin inside words that are Latin once folded."""
    edits: list[Replacement] = []
    if not _LATIN.search(t.text) or not _NON_LATIN_LETTER.search(t.text):
        return edits, {}
    for word in _LETTERS.finditer(t.text):
        folds = [(i, _latin_lookalike(c)) for i, c in enumerate(word.group()) if not _LATIN.match(c)]
        if not folds or len(folds) == len(word.group()) or any(f is None for _, f in folds):
            continue
        edits += [(word.start() + i, word.start() + i + 1, f) for i, f in folds]
    return edits, {"confusables": len(edits)}


# -- letters from Unicode's data ----------------------------------------------------------
# Characters that may stand for a letter (letters, numbers, symbols, marks): not ASCII, not Hangul letters.
_MAYBE_LETTER = regex.compile(r"(?V1)[[\p{L}\p{N}\p{S}\p{M}]--[\x00-\x7f\uac00-\ud7a3\u1100-\u11ff\u3131-\u318e]]")
_HANGUL_UNIT = regex.compile(r"[\uac00-\ud7a3\u3131-\u318e]")
_MARK = regex.compile(r"\p{M}")
MIN_READ_LETTERS = 3


@NORMALIZERS.register("letters")
def _letters(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Characters that Unicode's data makes letters (`text.letters.readings`) read as those letters, inside a
    word that is no common word of any language as written and spells a common word once read."""
    if not _MAYBE_LETTER.search(t.text):
        return [], {}
    edits: list[Replacement] = []
    count = 0
    for start, end, hangul in _letter_runs(t.text):
        found = _read_hangul(t.text, start, end) if hangul else _read_latin(t.text, start, end)
        if found:
            edits += found
            count += 1
    return edits, {"letters": count}


def _letter_runs(text: str) -> list[tuple[int, int, bool]]:
    """Runs of characters that spell a word with some character that stands for a letter: (start, end, hangul).

    A Latin run holds ASCII letters, combining marks and characters with Latin readings; a Hangul run
    Hangul letters and characters with Hangul readings. Only the characters around a candidate are read.
    """
    runs: list[tuple[int, int, bool]] = []
    done = 0
    for candidate in _MAYBE_LETTER.finditer(text):
        i = candidate.start()
        if i < done:
            continue
        kind = _unit_kind(text[i], "latin" if i > 0 and text[i - 1].isascii() and text[i - 1].isalpha() else None)
        if kind is None or not (readings(text[i]) or _MARK.match(text[i])):
            continue
        start, end = i, i + 1
        while start > 0 and _unit_kind(text[start - 1], kind) == kind:
            start -= 1
        while end < len(text) and _unit_kind(text[end], kind) == kind:
            end += 1
        runs.append((start, end, kind == "hangul"))
        done = end
    return runs


def _unit_kind(char: str, beside: Optional[str]) -> Optional[str]:
    """Whether a character spells a Latin or a Hangul word ("latin", "hangul"), or neither (None); a combining
    mark belongs to the run it is `beside`."""
    if char.isascii():
        return "latin" if char.isalpha() else None
    if _HANGUL_UNIT.match(char):
        return "hangul"
    if _MARK.match(char):
        return beside
    found = readings(char)
    return None if not found else ("hangul" if _HANGUL_UNIT.match(found[0][0]) else "latin")


def _read_latin(text: str, start: int, end: int) -> list[Replacement]:
    """The edits that read a Latin run as the most frequent common word its characters can spell, or []."""
    word = text[start:end]
    if is_native_word(word) or (start > 0 and text[start - 1] in "@#") or not _word_edge(text, start, end):
        return []
    options = [(c.lower(),) if c.isascii() else ("",) if _MARK.match(c) else readings(c) for c in word]
    lengths = {0}
    for choice in options:
        lengths = {n + len(o) for n in lengths for o in choice}
    pattern = "".join("(" + "|".join(map(regex.escape, choice)) + ")" for choice in options)
    best: Optional[tuple[float, str]] = None
    for length in sorted(n for n in lengths if n >= MIN_READ_LETTERS):
        for candidate in best_words(pattern, length, count=1):
            score = _zipf(candidate, ("en", "es"))
            if best is None or score > best[0]:
                best = (score, candidate)
    if best is None:
        return []
    groups = regex.fullmatch(pattern, best[1]).groups()
    return [(start + i, start + i + 1, _in_case(c, letters))
            for i, (c, letters) in enumerate(zip(word, groups)) if not c.isascii()]


def _in_case(char: str, letters: str) -> str:
    """A character's reading in the case Unicode's look-alike data gives it (`І` read as l stays an l, as I a
    capital), else in the character's own case."""
    given = [form for form in (letters, letters.upper()) if form in lookalike_letters(char)]
    return given[0] if given else letters.upper() if is_capital(char) else letters


def _word_edge(text: str, start: int, end: int) -> bool:
    """Whether a run is a whole word: no letter, digit or joining punctuation right before or after it."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (regex.match(r"[\p{L}\p{N}_]", before) or regex.match(r"[\p{L}\p{N}_]", after))


def _read_hangul(text: str, start: int, end: int) -> list[Replacement]:
    """The edits that read characters standing for Hangul letters in a Hangul run (`㉦ㅣ발`, `㉯쁜`) where the run
    then spells a common Korean word (its jamo composed), or []."""
    word = text[start:end]
    if not _word_edge(text, start, end) or len(word) < 2:
        return []
    folded = [c if _HANGUL_UNIT.match(c) else (readings(c) or ("",))[0] for c in word]
    spelled = "".join(folded)
    for run in list(_COMPAT_JAMO.finditer(spelled))[::-1]:
        parsed = syllables(run.group())
        if parsed:
            spelled = spelled[:run.start()] + "".join(s for _, _, s in parsed) + spelled[run.end():]
    if not is_word(spelled, ("ko",)):
        return []
    return [(start + i, start + i + 1, new) for i, (c, new) in enumerate(zip(word, folded)) if c != new]


# -- word lists ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _frequencies(lang: str) -> dict[str, float]:
    """wordfreq's frequency list of a language (word → frequency), loaded once."""
    from wordfreq import get_frequency_dict

    return get_frequency_dict(lang)


def _zipf(word: str, langs: Sequence[str]) -> float:
    """The word's highest Zipf frequency in `langs` (0 for a word in none)."""
    freq = max(_frequencies(lang).get(word, 0.0) for lang in langs)
    return math.log10(freq) + 9 if freq > 0 else 0.0


def is_word(word: str, langs: Sequence[str] = ("en", "es")) -> bool:
    """Whether `word` (lowercased) is a common word of the word lists of `langs`.

    Example:
        >>> is_word("Idiot"), is_word("tlqkf"), is_word("씨발", ("ko",))
        (True, False, True)
    """
    return _zipf(word.lower(), langs) >= WORD_ZIPF


@functools.lru_cache(maxsize=128)
def words_of_length(length: int, langs: tuple[str, ...] = ("en", "es")) -> str:
    """The common words of a length in `langs`, most frequent first, one per line: ASCII letters only for
    Latin-script lists, Hangul syllables only for Korean.

    Example:
        >>> words_of_length(3).split()[:3], words_of_length(2, ("ko",)).split()[0]
        (['the', 'que', 'and'], '에서')
    """
    scores: dict[str, float] = {}
    for lang in langs:
        for word, freq in _frequencies(lang).items():
            if len(word) == length and (all("\uac00" <= c <= "\ud7a3" for c in word) if lang == "ko"
                                        else word.isascii() and word.isalpha()):
                scores[word] = max(scores.get(word, 0.0), freq)
    floor = 10 ** (WORD_ZIPF - 9)
    return "\n".join(w for w in sorted(scores, key=scores.__getitem__, reverse=True) if scores[w] >= floor)


def best_words(pattern: str, length: int, langs: tuple[str, ...] = ("en", "es"), count: int = 2) -> list[str]:
    """The `count` most frequent common words of `length` in `langs` that match the regex `pattern` whole.

    Example:
        >>> best_words("f.ck", 4), best_words("sh.t", 4)
        (['fuck'], ['shit', 'shot'])
    """
    found = regex.finditer(f"^(?:{pattern})$", words_of_length(length, langs), regex.MULTILINE)
    return [m.group() for m, _ in zip(found, range(count))]


# A word of another language as written (any of wordfreq's lists for the scripts a disguise borrows
# from) is that language's word, not a disguise: `før` stays Danish, `он` Russian.
_NATIVE_LANGS = ("en", "es", "de", "fr", "pt", "it", "nl", "pl", "tr", "da", "nb", "sv", "fi", "cs", "sk", "sl", "hu",
                 "ro", "ca", "lv", "lt", "vi", "is", "ru", "uk", "bg", "mk", "el")


@functools.lru_cache(maxsize=None)
def _small_list(lang: str) -> dict[str, float]:
    """wordfreq's small list of a language (its words at Zipf ≥ 3), loaded once."""
    from wordfreq import get_frequency_dict

    return get_frequency_dict(lang, wordlist="small")


def is_native_word(word: str) -> bool:
    """Whether `word` (lowercased) is a common word of any language of `_NATIVE_LANGS`.

    Example:
        >>> is_native_word("før"), is_native_word("он"), is_native_word("іdіot")
        (True, True, False)
    """
    word = word.lower()
    floor = 10 ** (WORD_ZIPF - 9)
    return any(_small_list(lang).get(word, 0.0) >= floor for lang in _NATIVE_LANGS)


# -- elongation ---------------------------------------------------------------------------
_LATIN_WORD = regex.compile(r"(?<![\p{L}\p{N}])\p{Latin}+(?![\p{L}\p{N}])")
_RUN = regex.compile(r"(\p{Latin})\1{2,}")
_ROMAN = regex.compile(r"[IVXLCDM]+")  # XXIII is a number


@NORMALIZERS.register("elongation")
def _elongation(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Letters repeated three times or more squeezed to one or two, whichever spells a word, else two."""
    edits: list[Replacement] = []
    count = 0
    for word in _LATIN_WORD.finditer(t.text):
        runs = list(_RUN.finditer(word.group()))
        if not runs or len({c.lower() for c in word.group()}) == 1 or len(runs) > 4 or _ROMAN.fullmatch(word.group()):
            continue
        scored = [(_zipf(_squeezed(word.group(), runs, choice).lower(), ("en", "es")), choice)
                  for choice in product((1, 2), repeat=len(runs))]
        best, choice = max(scored, key=lambda pair: pair[0])
        keep = choice if best >= WORD_ZIPF else (2,) * len(runs)
        for run, kept in zip(runs, keep):
            edits.append((word.start() + run.start() + kept, word.start() + run.end(), ""))
        count += 1
    return edits, {"elongation": count}


def _squeezed(word: str, runs: list, keep: Sequence[int]) -> str:
    """`word` with each run cut to its number of letters in `keep`."""
    return "".join(_apply(word, [(run.start() + kept, run.end(), "") for run, kept in zip(runs, keep)]))


# -- leet ---------------------------------------------------------------------------------
_LEET = {**LEET, "*": "aeiouy"}  # one star hides a vowel: f*ck, sh*t (other masks: the `masks` step)
_LEET_TOKEN = regex.compile(r"(?<![\p{L}\p{N}@$!|*])[A-Za-z0-9@$!|*]*[A-Za-z][A-Za-z0-9@$!|*]*(?![\p{L}\p{N}])")
_NUMBER_AND_UNIT = regex.compile(r"\d+[A-Za-z]{1,3}|[A-Za-z]{1,3}\d+")
# Spanish writes both genders with a final @ (tod@s, amig@): not a leet a.
_INCLUSIVE_AT = regex.compile(r"@s?$")


@NORMALIZERS.register("leet")
def _leet(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Digits and symbols inside a Latin word read as letters where that spells a common word."""
    edits: list[Replacement] = []
    count = 0
    for token in _LEET_TOKEN.finditer(t.text):
        word = token.group().rstrip("!")
        if word.startswith("@") or _INCLUSIVE_AT.search(word) or not any(c in _LEET for c in word) or len(word) < 3:
            continue
        if sum(c.isalpha() for c in word) < 2 or _NUMBER_AND_UNIT.fullmatch(word) or is_word(word):
            continue
        if any(c.isdigit() and c not in _LEET for c in word):
            continue
        reading = _leet_reading(word)
        if reading is None:
            continue
        upper = word.upper() == word and any(c.isalpha() for c in word)
        for i, (old, new) in enumerate(zip(word, reading)):
            if old != new and not old.isalpha():
                edits.append((token.start() + i, token.start() + i + 1, new.upper() if upper else new))
        count += 1
    return edits, {"leet": count}


@functools.lru_cache(maxsize=4096)
def _leet_reading(word: str) -> Optional[str]:
    """The most frequent common word that `word` spells with its leet characters read as letters; with a star,
    only one clearly more frequent than the next (`MASK_MARGIN`: `b**ch` may be beach or bitch)."""
    if regex.search(r"^\*|\*$|\*{3}", word):
        # a star at an edge is a footnote, emphasis or a cut-off word (jack***); three or more seldom hide as
        # many letters (f****ing, p***y)
        return None
    if "*" in word:  # a star stands for any letter, read only when clearly
        return _clear_reading("".join("[a-z]" if c == "*" else f"[{_LEET[c]}]" if c in _LEET else
                                      regex.escape(c.lower()) for c in word), len(word), ("en", "es"))
    pattern = "".join(f"[{_LEET[c]}]" if c in _LEET else regex.escape(c.lower()) for c in word)
    found = best_words(pattern, len(word), count=1)
    return found[0] if found else None


# -- Hangul: jamo, keyboard ---------------------------------------------------------------
_COMPAT_JAMO = regex.compile(r"[\u3131-\u3163]+")


@NORMALIZERS.register("jamo")
def _jamo(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Runs of compatibility jamo that spell whole syllables recomposed; abbreviations (ㅋㅋ, ㅅㅂ) stay."""
    edits: list[Replacement] = []
    for run in _COMPAT_JAMO.finditer(t.text):
        parsed = syllables(run.group())
        if parsed:
            edits += [(run.start() + s, run.start() + e, syllable) for s, e, syllable in parsed]
    return edits, {"jamo": len(edits)}


_CONSONANT_RUN = regex.compile(r"(?<![\u3131-\u318e\uac00-\ud7a3])[\u3131-\u314e]{2,}(?![\u3131-\u318e\uac00-\ud7a3])")
_LAUGHTER = frozenset("ㅋㅎ")


def chosung_abbreviations(text: str) -> list[tuple[int, int]]:
    """Runs of initial consonants that abbreviate a common Korean word (`ㅅㅂ` for 시발, `ㅂㅅ`): kept as written by
    `jamo`, counted as the signal `chosung`; laughter (`ㅋㅋ`, `ㅎㅎ`) is none.

    Example:
        >>> chosung_abbreviations("ㅅㅂ 뭐야 ㅋㅋㅋ ㅂㅅ"), chosung_abbreviations("ㄱㄴㄷㄹㅁ")
        ([(0, 2), (10, 12)], [])
    """
    return [m.span() for m in _CONSONANT_RUN.finditer(text)
            if not set(m.group()) <= _LAUGHTER and m.group() in _initials_of_words()]


@functools.lru_cache(maxsize=1)
def _initials_of_words() -> frozenset[str]:
    """The initial consonants of every common Korean word of two to four syllables (병신 → ㅂㅅ)."""
    from hangul_jamo import LEADING_CONSONANTS

    leading = list(LEADING_CONSONANTS)
    return frozenset("".join(leading[(ord(c) - 0xAC00) // 588] for c in word)
                     for length in range(2, 5) for word in words_of_length(length, ("ko",)).split())


# Not inside a URL, a path, an e-mail address or a handle (`watch?v=dowO`, `@forofa`).
_KEYBOARD_WORD = regex.compile(r"(?<![\p{L}\p{N}/=?&#@._-])[A-Za-z]{3,}(?![\p{L}\p{N}/=&@_-])")


@NORMALIZERS.register("keyboard")
def _keyboard(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Latin words that are no English or Spanish word but Korean typed on the 2-set layout, as Hangul."""
    edits: list[Replacement] = []
    count = 0
    for word in _KEYBOARD_WORD.finditer(t.text):
        keys = word.group()
        # Any word of the lists at all, however rare, stays: only strings no one writes in English are read.
        if any(c.isupper() and c not in "QWERTOP" for c in keys) or keys.istitle() \
                or _zipf(keys.lower(), ("en", "es")) > 0:
            continue
        parsed = syllables("".join(KEYBOARD[c] for c in keys))
        if not parsed or len(parsed) < 2:
            continue
        edits += [(word.start() + s, word.start() + e, syllable) for s, e, syllable in parsed]
        count += 1
    return edits, {"keyboard": count}


# -- separators inside Hangul words ---------------------------------------------------------
_SYLLABLES = r"[\uac00-\ud7a3]+"
# What may stand between two pieces of a Hangul word: 1-3 punctuation marks, symbols or digits. Not
# sentence punctuation, quotes or brackets, which stand between words in ordinary text (아!내, 런닝'맨').
_SEPARATOR = r"(?:(?![!?,;:'\"`\p{Pi}\p{Pf}\p{Ps}\p{Pe}])[\p{P}\p{S}0-9])"
_PIECE = regex.compile(_SYLLABLES)
# Where a gap can close: Hangul runs joined by separators, and single syllables joined by single spaces
# (a sentence of ordinary words has neither, and asks nothing of the word list).
_SEPARATED = regex.compile(_SYLLABLES + r"(?:" + _SEPARATOR + r"{1,3}" + _SYLLABLES + ")+")
_SPACED = regex.compile(r"(?<![\uac00-\ud7a3])[\uac00-\ud7a3](?: [\uac00-\ud7a3](?![\uac00-\ud7a3]))+")


def _join_pieces(t: AlignedText, across_space: bool) -> list[Replacement]:
    """Gaps between Hangul pieces removed where the joined word is a common Korean word.

    `across_space` False: gaps of separators and digits (`씨.발`, `시1발`); True: one space between two
    single syllables (`씨 발`).
    """
    edits: list[Replacement] = []
    for chain in (_SPACED if across_space else _SEPARATED).finditer(t.text):
        pieces = list(_PIECE.finditer(t.text, chain.start(), chain.end()))
        current = pieces[0]
        joined = current.group()
        for piece in pieces[1:]:
            gap = t.text[current.end():piece.start()]
            spaced = gap == " "
            candidate = joined + piece.group()
            ok = spaced == across_space and not (spaced and (len(joined) > 1 or len(piece.group()) > 1))
            ok = ok and is_word(candidate, ("ko",))
            # 제2의, 제3장: an ordinal, not a word cut by a digit.
            ok = ok and not (joined.endswith("제") and any(c.isdigit() for c in gap))
            if ok:
                edits.append((current.end(), piece.start(), ""))
                joined = candidate
            else:
                joined = piece.group()
            current = piece
    return edits


# A Latin word cut by separators or digits (`st.upid`, `id1iot`): the same separators as in Hangul.
_LATIN_CHAIN = regex.compile(r"(?<![\p{L}\p{N}@#/.:_-])\p{Latin}+(?:" + _SEPARATOR + r"{1,2}\p{Latin}+)+"
                             r"(?![\p{L}\p{N}/@]|[.:_-]\p{L})")
_LATIN_PIECE = regex.compile(r"\p{Latin}+")
MIN_JOINED_LATIN = 4


def _latin_separators(t: AlignedText) -> list[Replacement]:
    """Separators and digits inside a Latin word removed where the joined word is a common English or Spanish word.

    Only where some piece is no word itself (`st.upid` joins; `e-mail`, `some.thing`, `co-op` stay), or
    the separators are digits, which no ordinary word holds (`id1iot`); never a URL, path or handle.
    """
    edits: list[Replacement] = []
    for chain in _LATIN_CHAIN.finditer(t.text):
        pieces = list(_LATIN_PIECE.finditer(t.text, chain.start(), chain.end()))
        joined = "".join(p.group() for p in pieces)
        gaps = [t.text[a.end():b.start()] for a, b in zip(pieces, pieces[1:])]
        if len(joined) < MIN_JOINED_LATIN or not is_word(joined):
            continue
        digits = all(g.isdigit() for g in gaps)
        if not digits and all(is_word(p.group()) for p in pieces):
            continue
        edits += [(a.end(), b.start(), "") for a, b in zip(pieces, pieces[1:])]
    return edits


@NORMALIZERS.register("separators")
def _separators(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Separators and digits between Hangul, or inside a Latin word, removed where the joined word is a common word."""
    edits = sorted(_join_pieces(t, across_space=False) + _latin_separators(t))
    return edits, {"separators": len(edits)}


# Single Latin letters, each a word of its own, three or more in a row apart by single spaces (`s t u p i d`).
_SPACED_LETTERS = regex.compile(r"(?<![\p{L}\p{N}\p{M}][\p{P}\p{S}]?)\p{Latin}(?: \p{Latin}){2,}(?![\p{L}\p{N}\p{M}])")
MAX_SPACED_LETTERS = 60


def _segmentation(letters: str) -> Optional[list[int]]:
    """Where to cut a run of letters into the fewest common English or Spanish words of two letters or more
    (the most frequent ones among equals), one of them at least `MIN_JOINED_LATIN - 1` long; None if none.

    Example:
        >>> _segmentation("youarestupid"), _segmentation("abcd")
        ([3, 6, 12], None)
    """
    # best[i]: (pieces, −Zipf sum, cuts) for letters[:i]
    best: list[Optional[tuple[int, float, list[int]]]] = [(0, 0.0, [])] + [None] * len(letters)
    for end in range(2, len(letters) + 1):
        for start in range(max(0, end - 20), end - 1):
            if best[start] is None:
                continue
            zipf = _zipf(letters[start:end].lower(), ("en", "es"))
            if zipf < WORD_ZIPF:
                continue
            pieces, score, cuts = best[start]
            candidate = (pieces + 1, score - zipf, cuts + [end])
            if best[end] is None or candidate[:2] < best[end][:2]:
                best[end] = candidate
    found = best[len(letters)]
    if found is None:
        return None
    cuts = found[2]
    longest = max(b - a for a, b in zip([0] + cuts, cuts))
    return cuts if longest >= MIN_JOINED_LATIN - 1 else None


def _spaced_letters(t: AlignedText) -> list[Replacement]:
    """Runs of three or more single Latin letters apart by single spaces joined into the common words they spell.

    `s t u p i d` → `stupid`, `y o u i d i o t` → `you idiot`; a run that spells no words stays (`a b c d`).
    """
    edits: list[Replacement] = []
    for run in _SPACED_LETTERS.finditer(t.text):
        letters = run.group()[::2]
        if len(letters) > MAX_SPACED_LETTERS:
            continue
        cuts = _segmentation(letters)
        if cuts is None:
            continue
        inside = [i for i in range(1, len(letters)) if i not in cuts]
        edits += [(run.start() + 2 * i - 1, run.start() + 2 * i, "") for i in inside]
    return edits


@NORMALIZERS.register("spaced")
def _spaced(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """A space between two single syllables removed where they spell a common Korean word (`씨 발`), and
    single Latin letters spaced apart joined into the words they spell (`s t u p i d`).

    It runs after `separators`, so `아 씨.발` is first `아 씨발`, whose space joins nothing.
    """
    edits = sorted(_join_pieces(t, across_space=True) + _spaced_letters(t))
    return edits, {"spaced": len(edits)}


# -- masks: symbols standing for letters ------------------------------------------------------
# A mask: a symbol that hides a letter (f**k, b#tch, sh%t, f♥ck): these ASCII ones, or any other
# symbol (an emoji with its variation selector); never the punctuation words hold (' - . , & / ?).
_MASK = r"(?:[*#%_^~+=@$!]|[\p{So}\p{Sm}\p{Sk}\p{Sc}--\x00-\x7f]\ufe0f?)"
_MASKED_WORD = regex.compile(r"(?V1)(?<![\p{L}\p{N}\p{M}@#/.:_-])[A-Za-z0-9]+(?:" + _MASK + r"+[A-Za-z0-9]+)+"
                             r"(?![\p{L}\p{N}\p{M}/@]|[.:]\p{L})")
_MASK_UNIT = regex.compile(r"(?V1)" + _MASK + r"|.", regex.DOTALL)
# A reading from masks is taken when it is this much more frequent than the next one (Zipf: 0.25 ≈ 1.8×):
# `f**k` is fuck (folk is 14× rarer), `b**ch` stays (beach and bitch are as frequent).
MASK_MARGIN = 0.25
_LONG_MASK = regex.compile(r"(?V1)" + _MASK + r"{3}")
MIN_MASKED_LETTERS = 4
# Hangul pieces around 1-3 units that may hide syllables: Latin letters, consonant jamo, the symbols people
# mask with (* # @ % _ $, ○ ● ★...); not ~ ! + ^ =, which ordinary Korean writes between words (목회자~~이제).
_HANGUL_MASK = r"(?:[A-Za-z\u3131-\u314e*#@%_$]|[\p{So}--\x00-\x7f]\ufe0f?)"
_HANGUL_MASKED = regex.compile(r"(?V1)[\uac00-\ud7a3]+" + _HANGUL_MASK + r"{1,3}[\uac00-\ud7a3]+")


@NORMALIZERS.register("masks")
def _masks(t: AlignedText) -> tuple[list[Replacement], Counts]:
    """Runs of symbols inside a Latin word, and Latin letters, jamo or symbols inside a Hangul word, read as
    the letters they hide where that spells a common word clearly more frequent than any other reading."""
    edits: list[Replacement] = []
    count = 0
    for token in _MASKED_WORD.finditer(t.text):
        found = _read_masked_latin(token.group())
        if found:
            edits += [(token.start() + s, token.start() + e, new) for s, e, new in found]
            count += 1
    for chain in _HANGUL_MASKED.finditer(t.text):
        found = _read_masked_hangul(chain.group())
        if found and not any(s < chain.end() and chain.start() < e for s, e, _ in edits):
            edits += [(chain.start() + s, chain.start() + e, new) for s, e, new in found]
            count += 1
    return sorted(edits), {"masks": count}


def _clear_reading(pattern: str, length: int, langs: tuple[str, ...]) -> Optional[str]:
    """The most frequent common word matching `pattern` when no other comes within `MASK_MARGIN` of it."""
    found = best_words(pattern, length, langs)
    if not found or (len(found) > 1 and _zipf(found[0], langs) - _zipf(found[1], langs) < MASK_MARGIN):
        return None
    return found[0]


@functools.lru_cache(maxsize=4096)
def _read_masked_latin(word: str) -> Optional[tuple[Replacement, ...]]:
    """The edits (on `word`) that read its masks (and leet digits) as one letter each, or None."""
    units = [m.span() for m in _MASK_UNIT.finditer(word)]
    if _LONG_MASK.search(word):
        return None  # three symbols or more in a row seldom hide as many letters (f****ing, p***y)
    if _INCLUSIVE_AT.search(word) or sum(word[s].isalpha() for s, _ in units) < 2 or len(units) < MIN_MASKED_LETTERS:
        return None
    if is_word(word) or any(word[s].isdigit() and word[s] not in LEET for s, _ in units):
        return None
    classes = ["(" + (regex.escape(word[s].lower()) if word[s].isalpha() else f"[{LEET[word[s]]}]"
                      if word[s] in LEET and word[s].isdigit() else "[a-z]") + ")" for s, _ in units]
    reading = _clear_reading("".join(classes), len(units), ("en", "es"))
    if reading is None:
        return None
    upper = word.upper() == word
    return tuple((s, e, new.upper() if upper else new) for (s, e), new in zip(units, reading)
                 if not word[s].isalpha())


@functools.lru_cache(maxsize=4096)
def _read_masked_hangul(chain: str) -> Optional[tuple[Replacement, ...]]:
    """The edits (on `chain`) for a Hangul word with something inside it: left out where the Hangul around
    it spells a common Korean word (`씨x발`), else read as one syllable per unit (`개x끼`; a consonant jamo as
    a syllable it begins, `개ㅅ끼`) where that spells one clearly more frequent than any other; or None."""
    left, right = regex.match(r"[\uac00-\ud7a3]+", chain).end(), regex.search(r"[\uac00-\ud7a3]+$", chain).start()
    gap = chain[left:right]
    latin = any(c.isascii() and c.isalpha() for c in gap)
    if latin and not any("\u3131" <= c <= "\u314e" for c in gap) and is_word(chain[:left] + chain[right:], ("ko",)):
        return ((left, right, ""),)  # letters put in (`씨x발`); a symbol alone is `separators`' to leave out
    units = [m.span() for m in _MASK_UNIT.finditer(gap)]
    # a consonant jamo reads as a syllable it begins, anything else as any syllable
    beginning = [_syllables_beginning(gap[s]) if "\u3131" <= gap[s] <= "\u314e" else None for s, _ in units]
    if "" in beginning:  # a cluster such as ㅄ or ㄳ begins no syllable: it stands for none
        return None
    classes = "".join("(.)" if found is None else f"([{found}])" for found in beginning)
    best: Optional[tuple[float, str, int, int]] = None
    for before in range(1, left + 1):
        for after in range(1, len(chain) - right + 1):
            head, tail = chain[left - before:left], chain[right:right + after]
            reading = _clear_reading(regex.escape(head) + classes + regex.escape(tail), before + len(units) + after,
                                     ("ko",))
            if reading and (best is None or len(reading) > len(best[1])):
                best = (_zipf(reading, ("ko",)), reading, before, after)
    if best is None:
        return None
    syllables_read = best[1][best[2]:best[2] + len(units)]
    return tuple((left + s, left + e, new) for (s, e), new in zip(units, syllables_read))


@functools.lru_cache(maxsize=32)
def _syllables_beginning(consonant: str) -> str:
    """A regex class of the Hangul syllables whose initial consonant is a compatibility jamo, '' for none."""
    from hangul_jamo import LEADING_CONSONANTS

    leading = list(LEADING_CONSONANTS)
    if consonant not in leading:
        return ""
    first = 0xAC00 + leading.index(consonant) * 588
    return f"{chr(first)}-{chr(first + 587)}"



# -- inputs and examples ------------------------------------------------------------------
def normalize_context(context: Context, steps: Sequence[str]) -> Context:
    """A context (None, a string or turns) with each string normalized (contexts carry no spans).

    Example:
        >>> normalize_context(["ｔｉｔｌｅ", "씨.발"], ("width", "separators"))
        ['title', '씨발']
    """
    if isinstance(context, str):
        return normalize(context, steps).aligned.text
    if isinstance(context, list):
        return [normalize(turn, steps).aligned.text if isinstance(turn, str) else turn for turn in context]
    return context


def normalize_example(example: Example, steps: Sequence[str]) -> Example:
    """A gold example as the model trained with `steps` reads it: text and context normalized,
    every span (the example's and each annotator's) moved onto the normalized text (`from_original`).

    A span whose characters were all removed (only invisible characters) is dropped.

    Example:
        >>> gold = Example(id="1", text="너 씨.발", spans={"OFF": [(2, 5)]})
        >>> normalize_example(gold, ("separators",)).spans
        {'OFF': [(2, 4)]}
    """
    aligned = normalize(example.text, steps).aligned
    context = normalize_context(example.context, steps)
    if not aligned.changed and context == example.context:
        return example
    annotations = [dataclasses.replace(a, spans=aligned.spans_from_original(a.spans)) for a in example.annotations]
    return dataclasses.replace(example, text=aligned.text, context=context,
                               spans=aligned.spans_from_original(example.spans), annotations=annotations)
