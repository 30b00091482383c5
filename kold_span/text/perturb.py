"""Seeded evasion perturbations: words disguised the way people slip a comment past a filter.

Each kind (`EvasionKind`) disguises one word at a time and returns its edits; `perturb` picks the
words (each with `probability`, only those inside `within` when given), applies the edits through
`AlignedText.edit`, and so returns the disguised text with its alignment to the original: a gold
span maps onto the disguised text with `from_original` (`perturb_example` does that for every span
of an example). The same text, kind, seed and options give the same output, whatever else is
perturbed before or after it (the random draws are seeded by the text itself, not by a shared
generator).

Words are Unicode words (`text.words.word_offsets`); characters are grapheme clusters, so an
insertion never lands between a letter and its combining mark. Where a kind has nothing to disguise
in a word (`keyboard` on a Latin word, `leet` on a Hangul one), the word stays as written.

Example:
    >>> disguised = perturb("너 진짜 바보", EvasionKind.SPACED_SYLLABLES, seed=0, probability=1.0)
    >>> disguised.text, disguised.from_original(5, 7)
    ('너 진 짜 바 보', (6, 9))
    >>> perturb("시발", EvasionKind.KEYBOARD, seed=0, probability=1.0).text
    'tlqkf'
"""
from __future__ import annotations

import random
import unicodedata
from dataclasses import replace
from functools import lru_cache
from typing import Callable, Iterable, Optional, Sequence, Union

import regex

from kold_span.config.choices import EvasionKind, Targets
from kold_span.data.example import Example, Span
from kold_span.errors import ArgumentError
from kold_span.text.aligned import AlignedText, Replacement
from kold_span.text.hangul import KEYBOARD, keys_for, syllables
from kold_span.text.letters import is_capital, leet_symbols, letter_characters
from kold_span.text.words import word_offsets

# A kind's edits of one word: (start, end, new) on the word, sorted, not overlapping; [] = no change.
WordEdit = Callable[[str, random.Random], list[Replacement]]

_GRAPHEME = regex.compile(r"\X")
_HANGUL_SYLLABLES = range(0xAC00, 0xD7A4)
_VOWELS = frozenset("aeiouAEIOU")
_ZERO_WIDTH_SPACE = "\u200b"
# (opening, closing) controls that change nothing a reader sees on left-to-right text: an
# embedding, an override and two isolates, each closed by its own terminator.
_BIDI_PAIRS = (("\u202a", "\u202c"), ("\u202d", "\u202c"), ("\u2066", "\u2069"), ("\u2068", "\u2069"))
_SEPARATORS = ".,-_~*"
_CONFUSABLE_SCRIPTS = ("CYRILLIC ", "GREEK ")


def perturb(text: str, kind: Union[EvasionKind, str, Sequence[Union[EvasionKind, str]]], seed: Union[int, str],
            probability: float = 0.5, within: Optional[Sequence[Span]] = None) -> AlignedText:
    """`text` with words disguised by `kind`, aligned to the original; with the text and kind(s), `seed` decides
    every random choice.

    `kind` is an `EvasionKind` (or its name), or several as `--perturb` names them ("all", "leet,nfd" or a list):
    each disguised word then gets one of them. Each word is disguised with `probability`; with `within`, only
    words overlapping one of those spans (gold spans: the words that matter).

    Example:
        >>> t = perturb("you idiot", "leet", seed=1, probability=1.0, within=[(4, 9)])
        >>> t.text[:4], t.text[4:] != "idiot", t.from_original(4, 9)
        ('you ', True, (4, 9))
    """
    kinds = kinds_of(kind)
    rng = random.Random(f"{seed}\x00{'+'.join(k.value for k in kinds)}\x00{text}")
    edits: list[Replacement] = []
    words = word_offsets(text)
    for i, (start, end) in enumerate(words):
        if within is not None and not any(s < end and start < e for s, e in within):
            continue
        if rng.random() >= probability:
            continue
        drawn = kinds[0] if len(kinds) == 1 else kinds[rng.randrange(len(kinds))]
        if drawn in GAP_EDITS:  # a kind that edits what follows the word: up to the next word
            gap_end = words[i + 1][0] if i + 1 < len(words) else end
            edits += [(end + s, end + e, new) for s, e, new in GAP_EDITS[drawn](text[end:gap_end], rng)]
        else:
            edits += [(start + s, start + e, new) for s, e, new in WORD_EDITS[drawn](text[start:end], rng)]
    return AlignedText.identity(text).edit(sorted(edits))


def kinds_of(kind: Union[EvasionKind, str, Sequence[Union[EvasionKind, str]]]) -> list[EvasionKind]:
    """The kinds `perturb` draws from: one kind, or several named as `--perturb` names them.

    Example:
        >>> [k.value for k in kinds_of("leet")], [k.value for k in kinds_of("nfd,leet")]
        (['leet'], ['nfd', 'leet'])
        >>> kinds_of("all") == list(EvasionKind)
        True
    """
    if isinstance(kind, EvasionKind):
        return [kind]
    if isinstance(kind, str) and kind in EvasionKind.values():
        return [EvasionKind(kind)]
    return parse_kinds(kind, "perturb()")


def perturb_example(example: Example, kind: Union[EvasionKind, str], seed: Union[int, str],
                    probability: float = 0.5, targets: Union[Targets, str] = Targets.ALL) -> Example:
    """A copy of `example` whose text is disguised by `kind`, every span mapped onto the new text.

    With `targets="spans"` only words inside the example's gold spans (of any type) are disguised;
    an example without spans then stays as it is. The context is left as written. `meta` records
    the kind under "evasion" (several: comma-separated). A span whose characters were all removed (a
    deletion) is dropped.

    Example:
        >>> ex = Example(id="1", text="너 진짜 바보", labels={"OFF": True}, spans={"OFF": [(5, 7)]})
        >>> out = perturb_example(ex, "spaced_syllables", seed=0, probability=1.0, targets="spans")
        >>> out.text, out.spans, out.span_texts("OFF"), out.meta
        ('너 진짜 바 보', {'OFF': [(5, 8)]}, ['바 보'], {'evasion': 'spaced_syllables'})
    """
    targets = Targets.parse(targets, "targets")
    within = None
    if targets is Targets.SPANS:
        within = [span for spans in example.spans.values() for span in spans]
    aligned = perturb(example.text, kind, seed, probability, within)
    annotations = [replace(a, spans=aligned.spans_from_original(a.spans)) for a in example.annotations]
    return replace(example, text=aligned.text, spans=aligned.spans_from_original(example.spans),
                   annotations=annotations, labels=dict(example.labels),
                   meta={**example.meta, "evasion": ",".join(k.value for k in kinds_of(kind))})


def disguised(examples: Sequence[Example], kinds: Sequence[Union[EvasionKind, str]], seed: Union[int, str],
              probability: float = 0.5, targets: Union[Targets, str] = Targets.ALL) -> list[Example]:
    """Every example disguised by one kind drawn for it (seeded), ids kept: a disguised dev split.

    Example:
        >>> dev = [Example("1", "너 진짜 바보", spans={"OFF": [(5, 7)]}), Example("2", "좋은 기사")]
        >>> [(ex.meta["evasion"], ex.text, ex.spans) for ex in disguised(dev, ["fullwidth", "keyboard"], 3, 1.0)]
        [('keyboard', 'sj wlsWk qkqh', {'OFF': [(9, 13)]}), ('fullwidth', '좋은 기사', {})]
    """
    rng = random.Random(f"{seed}\x00disguised")
    return [perturb_example(ex, kinds[rng.randrange(len(kinds))], seed, probability, targets) for ex in examples]


def disguised_copies(examples: Sequence[Example], kinds: Sequence[Union[EvasionKind, str]], share: float,
                     seed: Union[int, str], probability: float = 0.5,
                     targets: Union[Targets, str] = Targets.ALL) -> list[Example]:
    """Disguised copies of round(share × n) examples chosen with `seed`, to add beside the originals.

    Each copy gets one kind drawn for it and the id "<id>~<kind>"; a copy that came out unchanged
    (nothing in it to disguise) is left out.

    Example:
        >>> train = [Example(str(i), text) for i, text in enumerate(["너 진짜 바보", "you idiot", "좋은 기사", "ㅋ"])]
        >>> [(ex.id, ex.text) for ex in disguised_copies(train, ["spaced_syllables"], 1.0, seed=0, probability=1.0)]
        [('0~spaced_syllables', '너 진 짜 바 보'), ('1~spaced_syllables', 'y o u i d i o t'), ('2~spaced_syllables', '좋 은 기 사')]
    """
    chosen = sorted(random.Random(f"{seed}\x00copies").sample(range(len(examples)), round(share * len(examples))))
    copies = disguised([examples[i] for i in chosen], kinds, seed, probability, targets)
    return [replace(copy, id=f"{ex.id}~{copy.meta['evasion']}") for ex, copy in zip((examples[i] for i in chosen), copies)
            if copy.text != ex.text]


# -- one function per kind: a word → its edits ------------------------------------------------

def _clusters(word: str) -> list[Span]:
    """The grapheme clusters of a word as (start, end) pairs."""
    return [m.span() for m in _GRAPHEME.finditer(word)]


def _inner_boundary(word: str, rng: random.Random) -> Optional[int]:
    """A random offset between two grapheme clusters of `word`, or None for a one-cluster word."""
    clusters = _clusters(word)
    return None if len(clusters) < 2 else clusters[rng.randrange(1, len(clusters))][0]


def _some(items: Sequence[int], rng: random.Random) -> list[int]:
    """A random non-empty subset of `items` (each kept with chance 1/2), in order; [] for no items."""
    if not items:
        return []
    chosen = [i for i in items if rng.random() < 0.5]
    return chosen or [rng.choice(items)]


def _is_syllable(char: str) -> bool:
    return ord(char) in _HANGUL_SYLLABLES


def nfd(word: str, rng: random.Random) -> list[Replacement]:
    """Every precomposed character decomposed (Unicode NFD): 바보 → ᄇ ᅡ ᄇ ᅩ as conjoining jamo."""
    return [(i, i + 1, d) for i, c in enumerate(word) if (d := unicodedata.normalize("NFD", c)) != c]


@lru_cache(maxsize=None)
def compatibility_jamo(syllable: str) -> str:
    """A Hangul syllable spelt in compatibility jamo (the letters a keyboard types one by one).

    From Unicode's own data: the syllable's conjoining jamo (NFD), each renamed from "HANGUL
    CHOSEONG/JUNGSEONG/JONGSEONG X" to the compatibility letter "HANGUL LETTER X".

    Example:
        >>> compatibility_jamo("시"), compatibility_jamo("닭")
        ('ㅅㅣ', 'ㄷㅏㄺ')
    """
    letters = []
    for jamo in unicodedata.normalize("NFD", syllable):
        name = unicodedata.name(jamo)
        for part in ("CHOSEONG ", "JUNGSEONG ", "JONGSEONG "):
            name = name.replace(part, "LETTER ")
        letters.append(unicodedata.lookup(name))
    return "".join(letters)


def compat_jamo(word: str, rng: random.Random) -> list[Replacement]:
    """The word's first Hangul syllable as compatibility jamo: 시발 → ㅅㅣ발."""
    first = next((i for i, c in enumerate(word) if _is_syllable(c)), None)
    return [] if first is None else [(first, first + 1, compatibility_jamo(word[first]))]


def zero_width(word: str, rng: random.Random) -> list[Replacement]:
    """A zero-width space between two of the word's characters."""
    at = _inner_boundary(word, rng)
    return [] if at is None else [(at, at, _ZERO_WIDTH_SPACE)]


def bidi(word: str, rng: random.Random) -> list[Replacement]:
    """The word between a bidi control and its terminator (an embedding, override or isolate)."""
    opening, closing = rng.choice(_BIDI_PAIRS)
    return [(0, 0, opening), (len(word), len(word), closing)]


def fullwidth(word: str, rng: random.Random) -> list[Replacement]:
    """Every ASCII letter and digit as its fullwidth form: idiot → ｉｄｉｏｔ."""
    return [(i, i + 1, chr(ord(c) + 0xFEE0)) for i, c in enumerate(word) if c.isascii() and c.isalnum()]


@lru_cache(maxsize=None)
def latin_lookalikes(letter: str) -> tuple[str, ...]:
    """Cyrillic and Greek letters that Unicode's confusables data lists as look-alikes of a Latin letter.

    Example:
        >>> [unicodedata.name(c) for c in latin_lookalikes("a")], latin_lookalikes("k")
        (['GREEK SMALL LETTER ALPHA', 'CYRILLIC SMALL LETTER A'], ())
    """
    from confusable_homoglyphs import confusables

    found = confusables.is_confusable(letter, greedy=True, preferred_aliases=["cyrillic", "greek"]) or []
    # Letters of the same case only: the data also lists modifier letters and symbols.
    category = unicodedata.category(letter)
    return tuple(sorted({g["c"] for entry in found for g in entry["homoglyphs"]
                         if len(g["c"]) == 1 and g["n"].startswith(_CONFUSABLE_SCRIPTS)
                         and unicodedata.category(g["c"]) == category}))


def confusables(word: str, rng: random.Random) -> list[Replacement]:
    """Some ASCII letters as Cyrillic or Greek look-alikes: idiot → іdіot."""
    able = [i for i, c in enumerate(word) if c.isascii() and c.isalpha() and latin_lookalikes(c)]
    return [(i, i + 1, rng.choice(latin_lookalikes(word[i]))) for i in _some(able, rng)]


def leet(word: str, rng: random.Random) -> list[Replacement]:
    """Some ASCII letters as digits or symbols (`text.letters.LEET`, the table the normalizer reads): idiot → 1d10t."""
    able = [i for i, c in enumerate(word) if c.isascii() and leet_symbols(c)]
    return [(i, i + 1, rng.choice(leet_symbols(word[i]))) for i in _some(able, rng)]


def separators(word: str, rng: random.Random) -> list[Replacement]:
    """A separator inside the word (씨.발), or an inner vowel of a Latin word starred out (f*ck)."""
    vowels = [i for i, c in enumerate(word[1:-1], 1) if c in _VOWELS]
    if vowels and rng.random() < 0.5:
        at = rng.choice(vowels)
        return [(at, at + 1, "*")]
    at = _inner_boundary(word, rng)
    return [] if at is None else [(at, at, rng.choice(_SEPARATORS))]


def digit_insert(word: str, rng: random.Random) -> list[Replacement]:
    """A digit inside the word: 시발 → 시1발."""
    at = _inner_boundary(word, rng)
    return [] if at is None else [(at, at, str(rng.randrange(10)))]


def spaced_syllables(word: str, rng: random.Random) -> list[Replacement]:
    """A space between every two characters of the word: 씨발 → 씨 발."""
    return [(start, start, " ") for start, _ in _clusters(word)[1:]]


def keyboard(word: str, rng: random.Random) -> list[Replacement]:
    """Each Hangul syllable as the English keys that type it on a 2-beolsik keyboard: 시발 → tlqkf."""
    return [(i, i + 1, keys_for(c)) for i, c in enumerate(word) if _is_syllable(c)]


def elongation(word: str, rng: random.Random) -> list[Replacement]:
    """A letter repeated two to four more times (a vowel where a Latin word has one): stupid → stuuupid."""
    clusters = [(s, e) for s, e in _clusters(word) if word[s].isalpha()]
    if not clusters:
        return []
    vowels = [(s, e) for s, e in clusters if word[s] in _VOWELS]
    start, end = rng.choice(vowels or clusters)
    return [(start, end, word[start:end] * rng.randint(3, 5))]


def char_swap(word: str, rng: random.Random) -> list[Replacement]:
    """Two neighbouring characters exchanged (never two equal ones)."""
    clusters = _clusters(word)
    pairs = [i for i in range(len(clusters) - 1)
             if word[slice(*clusters[i])] != word[slice(*clusters[i + 1])]]
    if not pairs:
        return []
    i = rng.choice(pairs)
    (s1, e1), (s2, e2) = clusters[i], clusters[i + 1]
    return [(s1, e2, word[s2:e2] + word[s1:e1])]


def deletion(word: str, rng: random.Random) -> list[Replacement]:
    """One character left out (of a word of two characters or more)."""
    clusters = _clusters(word)
    if len(clusters) < 2:
        return []
    start, end = rng.choice(clusters)
    return [(start, end, "")]


def duplication(word: str, rng: random.Random) -> list[Replacement]:
    """One character doubled."""
    start, end = rng.choice(_clusters(word))
    return [(start, end, word[start:end] * 2)]


# The keyboard's letter rows, each shifted half a key right of the one above (QWERTY, which the
# Korean 2-set layout shares): two keys are neighbours when they touch.
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


@lru_cache(maxsize=None)
def key_neighbours(key: str) -> str:
    """The letter keys touching a key on a QWERTY keyboard (the same row, and the rows above and below).

    Example:
        >>> key_neighbours("s"), key_neighbours("p")
        ('adwezx', 'ol')
    """
    for r, row in enumerate(_ROWS):
        if key in row:
            i = row.index(key)
            near = [row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)]
            if r > 0:
                near += [_ROWS[r - 1][j] for j in (i, i + 1) if j < len(_ROWS[r - 1])]
            if r + 1 < len(_ROWS):
                near += [_ROWS[r + 1][j] for j in (i - 1, i) if 0 <= j < len(_ROWS[r + 1])]
            return "".join(near)
    return ""


def adjacent_key(word: str, rng: random.Random) -> list[Replacement]:
    """One letter typed with a neighbouring key: stupid → stupis; a Hangul syllable retyped with one of its
    keys on the 2-set layout slipped to a neighbour, where that still spells one syllable (바보 → 바뵤)."""
    options = []
    for i, c in enumerate(word):
        if c.isascii() and c.isalpha():
            options += [(i, n.upper() if c.isupper() else n) for n in key_neighbours(c.lower())]
        elif _is_syllable(c):
            keys = keys_for(c)
            for k, key in enumerate(keys):
                for n in key_neighbours(key.lower()):
                    typed = syllables("".join(KEYBOARD[x] for x in keys[:k] + n + keys[k + 1:]))
                    if typed and len(typed) == 1 and typed[0][2] != c:
                        options.append((i, typed[0][2]))
    if not options:
        return []
    i, new = rng.choice(sorted(set(options)))
    return [(i, i + 1, new)]


def dropped_vowels(word: str, rng: random.Random) -> list[Replacement]:
    """The vowels after a Latin word's first letter left out (stupid → stpd, where a consonant stays
    beside them); a Hangul word written as its initial consonants (병신 → ㅂㅅ)."""
    if len(word) > 1 and all(_is_syllable(c) for c in word):
        return [(i, i + 1, compatibility_jamo(c)[0]) for i, c in enumerate(word)]
    inner = [i for i, c in enumerate(word[1:], 1) if c in _VOWELS]
    consonants = [c for c in word if c.isascii() and c.isalpha() and c not in _VOWELS]
    return [] if not inner or len(consonants) < 2 else [(i, i + 1, "") for i in inner]


# Spellings English readers sound out the same (each way): hand-listed, as no package lists
# respellings; each rule applies where its pattern stands in the word.
_RESPELLINGS = (("ph", "f"), ("f", "ph"), ("ck", "k"), ("c(?=[aou])", "k"), ("s(?=[^h]|$)", "z"), ("z", "s"),
                ("x", "ks"), ("oo", "u"), ("ee", "i"), ("qu", "kw"), ("er$", "a"), ("(?<=[^aeiou])y$", "ie"),
                ("ou", "u"), ("^you$", "u"), ("^are$", "r"), ("^the$", "da"), ("th", "d"), ("igh", "y"))
# Korean initials that sound alike (plain, tense and aspirated stops; plain and tense s) and vowels
# that Seoul speech no longer tells apart.
_SOUND_ALIKE_JAMO = ("ㄱㄲㅋ", "ㄷㄸㅌ", "ㅂㅃㅍ", "ㅅㅆ", "ㅈㅉㅊ", "ㅐㅔ", "ㅒㅖ", "ㅙㅚㅞ")


def sound_alike(word: str, rng: random.Random) -> list[Replacement]:
    """One spelling swapped for one that sounds the same: fuck → phuck, sucks → suks; a Hangul syllable's
    initial or vowel for a sound-alike one (씨발 → 시발, 개새끼 → 게새끼)."""
    options: list[Replacement] = []
    lower = word.lower()
    if word.isascii():
        for pattern, new in _RESPELLINGS:
            options += [(m.start(), m.end(), new.upper() if word.isupper() else new)
                        for m in regex.finditer(pattern, lower)]
    for i, c in enumerate(word):
        if _is_syllable(c):
            options += [(i, i + 1, other) for other in _sound_alike_syllables(c)]
    return [rng.choice(options)] if options else []


@lru_cache(maxsize=None)
def _sound_alike_syllables(syllable: str) -> tuple[str, ...]:
    """The syllables that differ from one by a sound-alike initial or vowel."""
    import hangul_jamo

    lead, vowel, tail = hangul_jamo.decompose_syllable(syllable)
    found = []
    for group in _SOUND_ALIKE_JAMO:
        for part, rebuild in ((lead, lambda x: (x, vowel, tail)), (vowel, lambda x: (lead, x, tail))):
            if part in group:
                found += [hangul_jamo.compose_jamo_characters(*rebuild(x)) for x in group if x != part]
    return tuple(found)


def joined(gap: str, rng: random.Random) -> list[Replacement]:
    """The spaces after a word left out, joining it to the next: you idiot → youidiot (a gap of spaces only)."""
    return [(0, len(gap), "")] if gap and gap.isspace() else []


@lru_cache(maxsize=None)
def letter_likes(letter: str) -> tuple[str, ...]:
    """Every character Unicode's data makes this letter and nothing else, of its case (the database enumerated).

    Example:
        >>> all(c in letter_likes("i") for c in "ⓘɪ🇮ᵢ"), "Ⓘ" in letter_likes("i"), "Ⓘ" in letter_likes("I")
        (True, False, True)
    """
    # Not a character whose compatibility form is something else (𝟎 looks like an o but is a zero).
    return tuple(c for c, found in _letter_characters() if found == (letter.lower(),)
                 and is_capital(c) == letter.isupper() and not _is_ascii_other(unicodedata.normalize("NFKC", c)))


def _is_ascii_other(text: str) -> bool:
    return text.isascii() and not text.isalpha()


@lru_cache(maxsize=1)
def _letter_characters() -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(letter_characters())


def letter_like(word: str, rng: random.Random) -> list[Replacement]:
    """Some ASCII letters as characters Unicode's data makes them (circled, small capital, regional indicator,
    superscript, look-alike...): idiot → ⓘdɪ🇴t."""
    able = [i for i, c in enumerate(word) if c.isascii() and c.isalpha() and letter_likes(c)]
    return [(i, i + 1, rng.choice(letter_likes(word[i]))) for i in _some(able, rng)]


_MASKS = "*#@%_$!"


def masks(word: str, rng: random.Random) -> list[Replacement]:
    """One or two inner letters of a Latin word of four or more as symbols (fuck → f#@k), or an inner syllable
    of a Hangul word of three or more as a symbol or a Latin letter (개새끼 → 개x끼)."""
    clusters = _clusters(word)
    if len(clusters) < (3 if all(_is_syllable(word[s]) for s, _ in clusters) else 4):
        return []
    inner = clusters[1:-1]
    at = rng.randrange(len(inner))
    width = 1 if _is_syllable(word[inner[at][0]]) or len(inner) < 2 else rng.choice((1, 2))
    chosen = inner[at:at + width]
    return [(s, e, rng.choice(_MASKS + ("x" if _is_syllable(word[s]) else ""))) for s, e in chosen]


WORD_EDITS: dict[EvasionKind, WordEdit] = {
    EvasionKind.NFD: nfd, EvasionKind.COMPAT_JAMO: compat_jamo, EvasionKind.ZERO_WIDTH: zero_width,
    EvasionKind.BIDI: bidi, EvasionKind.FULLWIDTH: fullwidth, EvasionKind.CONFUSABLES: confusables,
    EvasionKind.LEET: leet, EvasionKind.SEPARATORS: separators, EvasionKind.DIGIT_INSERT: digit_insert,
    EvasionKind.SPACED_SYLLABLES: spaced_syllables, EvasionKind.KEYBOARD: keyboard,
    EvasionKind.ELONGATION: elongation, EvasionKind.CHAR_SWAP: char_swap, EvasionKind.DELETION: deletion,
    EvasionKind.DUPLICATION: duplication, EvasionKind.ADJACENT_KEY: adjacent_key,
    EvasionKind.DROPPED_VOWELS: dropped_vowels, EvasionKind.SOUND_ALIKE: sound_alike,
    EvasionKind.LETTER_LIKE: letter_like, EvasionKind.MASKS: masks,
}
# Kinds that edit the gap after a word (its spaces, up to the next word) instead of the word.
GAP_EDITS: dict[EvasionKind, WordEdit] = {EvasionKind.JOINED: joined}


def parse_kinds(names: Union[str, Iterable[str]], what: str = "--perturb") -> list[EvasionKind]:
    """Kinds named by "all", a comma-separated string or a list of names, each once, in the order given.

    Example:
        >>> [k.value for k in parse_kinds("leet, nfd,leet")]
        ['leet', 'nfd']
        >>> len(parse_kinds("all")) == len(EvasionKind)
        True
    """
    items = [n.strip() for n in names.split(",")] if isinstance(names, str) else [str(n) for n in names]
    items = [n for n in items if n]
    if items == ["all"]:
        return list(EvasionKind)
    if not items:
        raise ArgumentError(f"{what} names no perturbation kind; use 'all' or some of {EvasionKind.values()}")
    return list(dict.fromkeys(EvasionKind.parse(n, f"{what} kind") for n in items))
