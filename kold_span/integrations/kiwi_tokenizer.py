"""A spaCy tokenizer that splits Korean into Kiwi morphemes, `kold_span.KiwiTokenizer.v1`.

spaCy's own Korean tokenizer needs MeCab, and its rule-based one splits at spaces only, so a
span inside an eojeol (놈 in 놈들이다) cannot become a `Span`. Here every Kiwi morpheme
boundary and every whitespace boundary is a token boundary, the tokens cover the text
exactly (`doc.text == text`), and a token's tag is its morphemes' Kiwi tags (`VV+EP` for a
contracted 봤). Spans the model snapped to morphemes therefore align with
`alignment_mode="strict"`.

    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "kold_span.KiwiTokenizer.v1"}}})
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Union

from kold_span.errors import needs_extra
from kold_span.text.morphemes import morpheme_tags

with needs_extra("spacy"):
    from spacy.language import Language
    from spacy.tokens import Doc
    from spacy.util import registry
    from spacy.vocab import Vocab

SPACE_TAG = "_SP"  # spaCy's tag for whitespace tokens


def doc_words(text: str, cuts: set[int]) -> tuple[list[str], list[bool], list[int]]:
    """spaCy words (with trailing-space flags and start offsets) cut at spaces and at `cuts`.

    Example:
        >>> doc_words("너 진짜 바보냐", {5, 7})  # a span [5, 7) cuts the last word
        (['너', '진짜', '바보', '냐'], [True, True, False, False], [0, 2, 5, 7])
    """
    bounds = {0, len(text)} | set(cuts)
    bounds |= {i for i in range(1, len(text)) if text[i].isspace() != text[i - 1].isspace()}
    words: list[str] = []
    spaces: list[bool] = []
    starts: list[int] = []
    ordered = sorted(bounds)
    for a, b in zip(ordered, ordered[1:]):
        piece = text[a:b]
        if piece == " " and words and not spaces[-1] and not words[-1].isspace():
            spaces[-1] = True
            continue
        words.append(piece)
        spaces.append(False)
        starts.append(a)
    return words, spaces, starts


def morpheme_words(text: str) -> tuple[list[str], list[bool], list[str]]:
    """The words, trailing-space flags and Kiwi tags of `text` cut at every morpheme and space boundary.

    A single space after a word is that word's trailing space; other whitespace is a token tagged
    `_SP`. A piece of several morphemes (Kiwi gives a contracted syllable one morpheme per part,
    with the same offsets) is tagged with their tags joined by "+"; so is a piece that two
    overlapping morphemes share (Kiwi reads 해서 as 해 (0, 1) and 해서 (0, 2)).

    Example:
        >>> morpheme_words("저 놈들이다")
        (['저', '놈', '들', '이', '다'], [True, False, False, False, False], ['MM', 'NNB', 'XSN', 'VCP', 'EF'])
        >>> morpheme_words("뉴스 봤는데")[0::2]
        (['뉴스', '봤', '는데'], ['NNG', 'VV+EP', 'EC'])
        >>> morpheme_words("해서")[0::2]
        (['해', '서'], ['VV+EC', 'EC'])
    """
    tags = morpheme_tags(text)
    words, spaces, starts = doc_words(text, {cut for start, end, _ in tags for cut in (start, end)})
    word_tags = []
    for word, start in zip(words, starts):
        end = start + len(word)
        names = dict.fromkeys(tag for s, e, tag in tags if s < end and start < e)
        word_tags.append(SPACE_TAG if word.isspace() else "+".join(names))
    return words, spaces, word_tags


class KiwiTokenizer:
    """Text → `Doc` of Kiwi morphemes; holds no state of its own (Kiwi's model ships with kiwipiepy)."""

    def __init__(self, vocab: Vocab):
        self.vocab = vocab

    def __call__(self, text: str) -> Doc:
        words, spaces, tags = morpheme_words(text)
        return Doc(self.vocab, words=words, spaces=spaces, tags=tags)

    # spaCy saves and loads a pipeline's tokenizer with these; there is nothing to write.
    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """Nothing to save: the tokenizer is rebuilt from the pipeline's config."""

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "KiwiTokenizer":
        """Nothing to load."""
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        """Nothing to save."""
        return b""

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> "KiwiTokenizer":
        """Nothing to load."""
        return self


@registry.tokenizers("kold_span.KiwiTokenizer.v1")
def create_kiwi_tokenizer() -> Callable[[Language], KiwiTokenizer]:
    """The `[nlp.tokenizer]` entry of a config: `@tokenizers = "kold_span.KiwiTokenizer.v1"`."""

    def make(nlp: Language) -> KiwiTokenizer:
        return KiwiTokenizer(nlp.vocab)

    return make
