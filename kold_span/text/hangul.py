"""Hangul syllables from compatibility jamo, and the keys that type them on the Korean 2-set keyboard.

One layout table serves both directions: `text.normalize` reads Korean typed on an English
keyboard back (`tlqkf` → `시발`, `syllables`), `text.perturb` disguises Korean that way
(`keys_for`). Composing and decomposing syllables is hangul-jamo's.
"""
from __future__ import annotations

from typing import Optional

# Two jamo that one syllable writes as one (Hangul orthography): vowels and final clusters.
DOUBLE_VOWELS = {"ㅗㅏ": "ㅘ", "ㅗㅐ": "ㅙ", "ㅗㅣ": "ㅚ", "ㅜㅓ": "ㅝ", "ㅜㅔ": "ㅞ", "ㅜㅣ": "ㅟ", "ㅡㅣ": "ㅢ"}
DOUBLE_FINALS = {"ㄱㅅ": "ㄳ", "ㄴㅈ": "ㄵ", "ㄴㅎ": "ㄶ", "ㄹㄱ": "ㄺ", "ㄹㅁ": "ㄻ", "ㄹㅂ": "ㄼ", "ㄹㅅ": "ㄽ",
                 "ㄹㅌ": "ㄾ", "ㄹㅍ": "ㄿ", "ㄹㅎ": "ㅀ", "ㅂㅅ": "ㅄ"}
# The standard Korean 2-set keyboard (KS X 5002): the jamo on each key, shifted where it differs.
KEYBOARD = dict(zip("qwertyuiopasdfghjklzxcvbnm", "ㅂㅈㄷㄱㅅㅛㅕㅑㅐㅔㅁㄴㅇㄹㅎㅗㅓㅏㅣㅋㅌㅊㅍㅠㅜㅡ"))
KEYBOARD.update(zip("QWERTOP", "ㅃㅉㄸㄲㅆㅒㅖ"))
_KEY_OF = {jamo: key for key, jamo in KEYBOARD.items()}
_PARTS = {whole: pair for pair, whole in {**DOUBLE_VOWELS, **DOUBLE_FINALS}.items()}


def _tables():
    """hangul-jamo's compatibility jamo: leading consonants, vowels and trailing consonants."""
    import hangul_jamo

    return hangul_jamo.LEADING_CONSONANTS, hangul_jamo.VOWELS, hangul_jamo.TRAILING_CONSONANTS


def syllables(jamo: str) -> Optional[list[tuple[int, int, str]]]:
    """A run of compatibility jamo as whole syllables `(start, end, syllable)`, or None if any is left over.

    Example:
        >>> syllables("ㅅㅣㅂㅏㄹ"), syllables("ㅋㅋ")
        ([(0, 2, '시'), (2, 5, '발')], None)
        >>> syllables("ㅇㅗㅏㄴㅈ")
        [(0, 5, '왅')]
    """
    import hangul_jamo

    leading, vowels, trailing = _tables()
    out, i, n = [], 0, len(jamo)
    while i < n:
        start = i
        if jamo[i] not in leading or i + 1 >= n or jamo[i + 1] not in vowels:
            return None
        vowel, i = jamo[i + 1], i + 2
        if i < n and vowel + jamo[i] in DOUBLE_VOWELS:
            vowel, i = DOUBLE_VOWELS[vowel + jamo[i]], i + 1
        final = None
        if i < n and jamo[i] in trailing and not (i + 1 < n and jamo[i + 1] in vowels):
            final, i = jamo[i], i + 1
            pair = final + jamo[i] if i < n else ""
            if pair in DOUBLE_FINALS and not (i + 1 < n and jamo[i + 1] in vowels):
                final, i = DOUBLE_FINALS[pair], i + 1
        out.append((start, i, hangul_jamo.compose_jamo_characters(jamo[start], vowel, final)))
    return out


def keys_for(syllable: str) -> str:
    """The English keys that type one Hangul syllable on the 2-set keyboard (the inverse of `syllables`).

    Example:
        >>> keys_for("시") + keys_for("발"), keys_for("왅"), keys_for("빨")
        ('tlqkf', 'dhksw', 'Qkf')
    """
    import hangul_jamo

    jamo = "".join(part for part in hangul_jamo.decompose_syllable(syllable) if part)
    return "".join(_KEY_OF[j] for whole in jamo for j in _PARTS.get(whole, whole))
