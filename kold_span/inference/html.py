"""Predictions rendered as an HTML page with displaCy's span style, written whole or not at all."""
from __future__ import annotations

import html
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Union

from kold_span.data.atomic import atomic_write
from kold_span.data.example import Example, context_turns

HEAD = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>kold-span predictions</title>"
        "</head><body style='font-family: sans-serif; max-width: 60em; margin: auto'>\n")
TAIL = "</body></html>\n"


@contextmanager
def html_page(path: Union[str, Path]) -> Iterator["HtmlWriter"]:
    """An `HtmlWriter` whose page replaces `path` when the block ends without an error (`atomic_write`).

    On an error the previous page at `path` is left as it was, never a page without its closing tags.

    Example:
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> with html_page(Path(tmp.name) / "pages" / "p.html") as page:
        ...     page.add(Example(id="1", text="좋은 기사"), {"labels": {}, "spans": []})
        >>> (Path(tmp.name) / "pages" / "p.html").read_text(encoding="utf-8").endswith("</body></html>\\n")
        True
        >>> tmp.cleanup()
    """
    with atomic_write(path) as f:
        f.write(HEAD)
        yield HtmlWriter(f)
        f.write(TAIL)


class HtmlWriter:
    """Renders predictions into an open page (see `html_page`), spans highlighted in displaCy's span style."""

    def __init__(self, file: IO[str]):
        import spacy
        from spacy.vocab import Vocab

        self.vocab = Vocab()
        self.displacy = spacy.displacy
        self.file = file

    def add(self, example: Example, prediction: dict[str, Any]) -> None:
        """Render one comment with its labels and spans."""
        from spacy.tokens import Doc, Span

        cuts = {c for s in prediction["spans"] for c in (s["start"], s["end"])}
        words, spaces, starts = doc_words(example.text, cuts)
        doc = Doc(self.vocab, words=words, spaces=spaces)
        spans = []
        for s in prediction["spans"]:
            first = next(i for i, st in enumerate(starts) if st >= s["start"])
            last = max(i for i, st in enumerate(starts) if st < s["end"])
            spans.append(Span(doc, first, last + 1, label=f"{s['type']} {s['score']:.2f}"))
        doc.spans["sc"] = spans
        labels = ", ".join(f"{name}: {html.escape(str(v['label']))}" for name, v in prediction["labels"].items())
        context = "<br>".join(html.escape(turn) for turn in context_turns(example.context))  # one line a turn
        self.file.write(f"<div style='margin: 1.5em 0'><div style='color: #666'>#{html.escape(example.id)} "
                        f"{context}</div><div><b>{labels}</b></div>\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # spaCy warns about comments with no span
            markup = self.displacy.render(doc, style="span", page=False, jupyter=False)
        self.file.write(markup)
        self.file.write("</div>\n")


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
