"""Which letters a character stands for, read from Unicode's own data; and the one leet table.

A disguise swaps a letter for a character that a reader still reads as that letter: a circled
`ⓘ`, a small capital `ᴅ`, a turned `ɐ`, a regional indicator `🇮`, a superscript `ᵗ`, a
Cyrillic `і`. No list of blocks says which: `readings(char)` asks the Unicode database, so a
character from a block never seen before is read the same way:

- its compatibility decomposition, of every kind (`<circle>`, `<square>`, `<super>`, `<sub>`,
  `<small>`, `<compat>` for parenthesized letters and ligatures, `<font>`, `<wide>`...), where that
  is letters once its enclosing parentheses or full stop and its combining marks are left out
  (`⒜` → `a`, `ﬁ` → `fi`, `㉮` → `가`, `㉠` → `ㄱ`);
- its name, where the name says which Latin letter it is (`LATIN LETTER SMALL CAPITAL D`,
  `LATIN SMALL LETTER TURNED A`, `REGIONAL INDICATOR SYMBOL LETTER I`, `TURNED CAPITAL F`,
  `LATIN SMALL LETTER O WITH STROKE`), for characters of the Latin and Common scripts;
- Unicode's confusables (TR39, through the `confusable-homoglyphs` package): the ASCII letters it
  is listed as a look-alike of (Cyrillic `і` → `i`, Greek `ο` → `o`, Cherokee `Ꭺ` → `A`).

Why data and not tables: every Unicode version adds letter-like characters, and the database
already says what each is. `text.normalize` reads a word by these letters only where that spells
a common word (its `letters` step); this module only says what each character could stand for.

`LEET` is the one table of digits and symbols read as letters: `text.normalize` reads it
(`1d10t` → `idiot`) and `text.perturb` writes its inverse (`leet_symbols`), so every leet
disguise the perturbations make is one the normalizer can read back.

Example:
    >>> [readings(c) for c in "ⓘᴅ\\u0456ɐ"]
    [('i',), ('d',), ('i',), ('a',)]
    >>> readings("a"), readings("가"), readings("①")
    ((), (), ())
"""
from __future__ import annotations

import functools
import string
import unicodedata
from typing import Iterator, Optional

import regex

# Digits and symbols read as the Latin letters they stand for (the common "leetspeak" ones).
LEET = {"0": "o", "1": "il", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g",
        "@": "a", "$": "s", "!": "i", "|": "il"}

_LATIN_OR_COMMON = regex.compile(r"[\p{Latin}\p{Common}]")
_HANGUL_LETTER = regex.compile(r"(?V1)[\p{Hangul}&&\p{L}]")
_MARK = regex.compile(r"\p{M}")
# "... LETTER X", "... CAPITAL X", "... SMALL X", optionally with words between (SMALL CAPITAL,
# TURNED, REVERSED) and "WITH ..." after: the name says the character is the Latin letter X.
_NAMED_LETTER = regex.compile(r"\b(?:LETTER|CAPITAL|SMALL)(?: [A-Z-]+)*? ([A-Z])(?: WITH .*)?$")
# Decompositions that enclose a letter: parenthesized "(a)" and "a." forms.
_ENCLOSED = regex.compile(r"^\((.+)\)$|^(.+)\.$")
MAX_LOOKALIKE_LETTERS = 3


def leet_symbols(letter: str) -> str:
    """The digits and symbols of `LEET` that stand for a letter (what `text.perturb` writes for it).

    Example:
        >>> leet_symbols("i"), leet_symbols("l"), leet_symbols("z")
        ('1!|', '1|', '')
    """
    return "".join(symbol for symbol, letters in LEET.items() if letter.lower() in letters)


@functools.lru_cache(maxsize=8192)
def readings(char: str) -> tuple[str, ...]:
    """The letters a non-ASCII character stands for by Unicode's data (lowercase, sorted), else ().

    Latin letters (one or a few: `ﬁ` → "fi") or Hangul (a syllable or a compatibility jamo);
    none for ASCII, for Hangul letters themselves, or for characters the data does not make a letter.

    Example:
        >>> readings("🇮"), readings("ᵗ"), readings("ﬁ"), readings("㉮"), readings("Ω")
        (('i',), ('t',), ('fi',), ('가',), ())
    """
    if char.isascii() or _HANGUL_LETTER.match(char) or unicodedata.category(char)[0] not in "LNS":
        return ()  # marks, tags, controls and unassigned code points stand for no letter
    if unicodedata.decomposition(char) and not unicodedata.decomposition(char).startswith("<"):
        return ()  # a letter with an accent (canonical decomposition) is a letter of its own language: `á`, `ñ`
    found = {r for r in (decomposition_letters(char), name_letter(char)) if r}
    found.update(lookalike_letters(char))
    return tuple(sorted(r.lower() for r in found))


def is_capital(char: str) -> bool:
    """Whether a character that stands for a letter stands for a capital (its category or name says so).

    Example:
        >>> is_capital("🅐"), is_capital("ᴀ"), is_capital("Ꭺ"), is_capital("ɐ")
        (True, False, True, False)
    """
    name = unicodedata.name(char, "")
    return unicodedata.category(char) == "Lu" or (" CAPITAL " in f" {name} " and "SMALL CAPITAL" not in name)


@functools.lru_cache(maxsize=8192)
def decomposition_letters(char: str) -> Optional[str]:
    """The letters a character's compatibility decomposition (any tag) spells, else None.

    Example:
        >>> decomposition_letters("⒜"), decomposition_letters("🄰"), decomposition_letters("ᵃ")
        ('a', 'A', 'a')
        >>> decomposition_letters("㉠"), decomposition_letters("①"), decomposition_letters("é")
        ('ㄱ', None, None)
    """
    if not unicodedata.decomposition(char).startswith("<"):
        return None  # no decomposition, or a canonical one (an accented letter: read by its name)
    folded = _MARK.sub("", unicodedata.normalize("NFKD", char))
    enclosed = _ENCLOSED.match(folded)
    if enclosed:
        folded = enclosed.group(1) or enclosed.group(2)
    if folded.isascii() and folded.isalpha():
        return folded
    composed = unicodedata.normalize("NFC", folded)
    if len(composed) == 1 and "\u1100" <= composed <= "\u11ff":
        return _compatibility_jamo(composed)
    return composed if composed and all("\uac00" <= c <= "\ud7a3" for c in composed) else None


def _compatibility_jamo(jamo: str) -> Optional[str]:
    """A conjoining jamo as its compatibility letter, by name (HANGUL CHOSEONG X → HANGUL LETTER X)."""
    name = unicodedata.name(jamo, "")
    for part in ("CHOSEONG ", "JUNGSEONG ", "JONGSEONG "):
        name = name.replace(part, "LETTER ")
    try:
        return unicodedata.lookup(name)
    except KeyError:
        return None


@functools.lru_cache(maxsize=8192)
def name_letter(char: str) -> Optional[str]:
    """The Latin letter a character of the Latin or Common script is, as its name says, else None.

    Example:
        >>> name_letter("ᴅ"), name_letter("ɐ"), name_letter("🇮"), name_letter("Ⅎ"), name_letter("ø")
        ('d', 'a', 'i', 'F', 'o')
        >>> name_letter("ə"), name_letter("і")  # a schwa is no Latin letter X; Cyrillic is read by look-alikes
        (None, None)
    """
    if char.isascii() or not _LATIN_OR_COMMON.match(char) or _MARK.match(char):
        return None
    name = unicodedata.name(char, "")
    found = _NAMED_LETTER.search(name)
    return None if not found else (found.group(1) if is_capital(char) else found.group(1).lower())


@functools.lru_cache(maxsize=1)
def confusables_data() -> dict:
    """Unicode's confusables (TR39), as the confusable-homoglyphs package ships them."""
    from confusable_homoglyphs import confusables

    return confusables.confusables_data


@functools.lru_cache(maxsize=8192)
def lookalike_letters(char: str) -> tuple[str, ...]:
    """The ASCII letters (one to three) Unicode's confusables data lists a non-ASCII character as a look-alike of.

    A capital also stands for the capital ASCII letters the data gives its look-alike as: the data makes
    `I` itself an `l`, so the capitals it lists as an `l` (Cyrillic `І`, Greek `Ι`) are an `I` too.

    Example:
        >>> lookalike_letters("\\u0456"), lookalike_letters("\\u03bf"), lookalike_letters("가")
        (('i',), ('o',), ())
        >>> lookalike_letters("\\u0406"), lookalike_letters("\\u2113")  # Cyrillic І; the script ℓ stays an l
        (('I', 'l'), ('l',))
    """
    if char.isascii():
        return ()
    data = confusables_data()
    targets = {entry["c"] for entry in data.get(char, ())}
    if is_capital(char):
        targets |= {letter for letter in string.ascii_uppercase
                    if any(entry["c"] in targets for entry in data.get(letter, ()))}
    return tuple(sorted(t for t in targets
                        if t.isascii() and t.isalpha() and len(t) <= MAX_LOOKALIKE_LETTERS))


def letter_characters(limit: int = 0x20000) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every character below `limit` that stands for letters, with its readings: the database enumerated
    (by default the first two planes: above them lie ideographs, tags and private use).

    Example:
        >>> dict(letter_characters(0x250))["ø"], len(dict(letter_characters(0x80)))
        (('o',), 0)
    """
    for code in range(0x80, limit):
        char = chr(code)
        if unicodedata.category(char)[0] not in "LNS":
            continue
        found = readings(char)
        if found:
            yield char, found
