"""Predictions as a self-contained HTML page: the text exactly as written, spans in colour, labels with probabilities.

`render_prediction_html(text, prediction)` renders one prediction as an HTML fragment: a pure
function, for `kold-span predict --html` and for any page that shows a prediction (it needs
`PAGE_STYLE`, which `page_head` writes). `HtmlWriter` streams a page of them, one row at a time.

How a fragment reads (the text exactly as written, a bar per span in lanes, badges drawn by CSS, hidden
characters shown, probabilities on hover) is told once, in docs/PREDICTING.md.

Example:
    >>> fragment = render_prediction_html("너 진짜 바보냐", {
    ...     "labels": {"OFF": {"label": True, "probs": {"false": 0.1, "true": 0.9}}},
    ...     "spans": [{"type": "OFF", "start": 5, "end": 7, "score": 0.88}]})
    >>> '<span class="ks-prob">0.90</span>' in fragment, 'data-tag="OFF 0.88"' in fragment
    (True, True)
"""
from __future__ import annotations

import html
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

from kold_span.data.atomic import atomic_write
from kold_span.data.example import Example, context_turns, label_str
from kold_span.errors import DataError
from kold_span.text.normalize import hidden_characters

# Distinct on white and for the common colour-vision deficiencies (Okabe & Ito), then two more.
PALETTE = ("#d55e00", "#0072b2", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#8c564b", "#7f7f7f")
BAR_PX = 3  # height of one span's bar
GAP_PX = 1  # white gap between two lanes of bars

PAGE_STYLE = """
body { font-family: system-ui, "Noto Sans", "Noto Sans CJK KR", sans-serif; max-width: 60em; margin: 0 auto;
       padding: 0 1em 2em; color: #1a1a1a; background: #fff; --ks-bg: #fff; }
.ks-legend { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid #ddd;
             padding: .6em 0; font-size: .85em; line-height: 1.9; }
.ks-key { display: inline-block; padding: 0 .45em; margin-right: .3em; border-bottom: 3px solid var(--ks-c);
          background: color-mix(in srgb, var(--ks-c) 14%, transparent); font-weight: 600; }
.ks-help { color: #555; }
.ks-row { margin: 1.4em 0; padding-bottom: 1em; border-bottom: 1px solid #eee; }
.ks-head { color: #666; font-size: .85em; margin-bottom: .3em; }
.ks-context { white-space: pre-wrap; }
.ks-labels { margin-bottom: .35em; }
.ks-label { display: inline-block; margin-right: 1em; white-space: nowrap; }
.ks-task { color: #555; font-size: .85em; }
.ks-value { font-weight: 600; }
.ks-prob { font-size: .8em; color: #333; background: #eef1f5; border-radius: .3em; padding: 0 .3em; }
.ks-text { white-space: pre-wrap; word-break: keep-all; overflow-wrap: anywhere; font-size: 1.05em;
           line-height: calc(1.7em + 2 * var(--ks-lanes, 0) * 4px); }
.ks-span { background: color-mix(in srgb, var(--ks-c) 14%, transparent);
           -webkit-box-decoration-break: clone; box-decoration-break: clone; }
.ks-hidden { unicode-bidi: isolate; }
.ks-hidden::after { content: attr(data-name); font-size: .6em; font-weight: 700; color: #fff; background: #7a1f1f;
                    border-radius: .25em; padding: 0 .2em; margin: 0 .1em; vertical-align: .15em; }
.ks-signals { font-size: .8em; color: #7a1f1f; background: #fbeaea; border-radius: .3em; padding: 0 .4em; }
.ks-tag::after { content: attr(data-tag); color: var(--ks-c); font-size: .62em; font-weight: 700;
                 vertical-align: .7em; line-height: 1; margin: 0 .2em 0 .1em; white-space: nowrap; }
"""

PAGE_TAIL = "</body></html>\n"


def span_colours(span_types: Iterable[str]) -> dict[str, str]:
    """A colour per span type, from `PALETTE` in the order given (it repeats after 8 types).

    Example:
        >>> span_colours(["OFF", "TGT"])
        {'OFF': '#d55e00', 'TGT': '#0072b2'}
    """
    colours: dict[str, str] = {}
    for span_type in span_types:
        colours.setdefault(span_type, PALETTE[len(colours) % len(PALETTE)])
    return colours


def render_prediction_html(text: str, prediction: Mapping[str, Any],
                           colours: Optional[Mapping[str, str]] = None) -> str:
    """One prediction as an HTML fragment: its labels with probabilities, then the text with its spans.

    `prediction` is ``{"labels": {task: {"label", "probs"}}, "spans": [{"type", "start", "end", "score"}]}``, as
    `Predictor` returns it for `text` (a span outside the text, or empty, is a `DataError`). `colours` maps span
    types to CSS colours; types it lacks get `span_colours` of the sorted types of this prediction. Returns a
    ``<div class="ks-prediction">`` holding a ``ks-labels`` and a ``ks-text`` block, whose rendered text is `text`,
    character for character.

    Example:
        >>> print(render_prediction_html("a <b>", {"labels": {}, "spans": [{"type": "X", "start": 2, "end": 5}]}))
        ... # doctest: +NORMALIZE_WHITESPACE
        <div class="ks-prediction"><div class="ks-labels"></div><div class="ks-text" style="--ks-lanes:1">a <span
        class="ks-span" style="--ks-c:#d55e00;box-shadow:0 1px 0 0 var(--ks-bg),0 4px 0 0 #d55e00"
        title="X">&lt;b&gt;</span><span class="ks-tag" style="--ks-c:#d55e00" data-tag="X"></span></div></div>
    """
    spans = list(prediction.get("spans", ()))
    for span in spans:
        if not 0 <= span["start"] < span["end"] <= len(text):
            raise DataError(f"span {span['type']!r} [{span['start']}, {span['end']}) is not inside the text "
                            f"(length {len(text)}) or is empty")
    colours = {**span_colours(sorted({s["type"] for s in spans})), **(colours or {})}
    lanes = span_lanes(spans)
    labels = "".join(_label_html(task, value) for task, value in prediction.get("labels", {}).items())
    labels += _signals_html(prediction.get("signals") or {})
    lane_count = max(lanes, default=-1) + 1
    return (f'<div class="ks-prediction"><div class="ks-labels">{labels}</div>'
            f'<div class="ks-text" style="--ks-lanes:{lane_count}">{_text_html(text, spans, lanes, colours)}'
            f'</div></div>')


def span_lanes(spans: Sequence[Mapping[str, Any]]) -> list[int]:
    """A lane (bar depth) per span: the lowest lane free of every overlapping span, in order of start.

    Example:
        >>> span_lanes([{"start": 0, "end": 5}, {"start": 2, "end": 4}, {"start": 5, "end": 7}, {"start": 3, "end": 9}])
        [0, 1, 0, 2]
    """
    lanes = [0] * len(spans)
    lane_ends: list[int] = []  # per lane, the end of the last span placed in it
    for i in sorted(range(len(spans)), key=lambda i: (spans[i]["start"], -spans[i]["end"])):
        start, end = spans[i]["start"], spans[i]["end"]
        free = next((lane for lane, last in enumerate(lane_ends) if last <= start), len(lane_ends))
        if free == len(lane_ends):
            lane_ends.append(end)
        lane_ends[free] = end
        lanes[i] = free
    return lanes


def _text_html(text: str, spans: Sequence[Mapping[str, Any]], lanes: Sequence[int],
               colours: Mapping[str, str]) -> str:
    """The text cut where spans start or end; each piece inside spans styled, a badge after each span's end."""
    cuts = sorted({0, len(text)} | {s["start"] for s in spans} | {s["end"] for s in spans})
    order = sorted(range(len(spans)), key=lambda i: lanes[i])
    parts = []
    for a, b in zip(cuts, cuts[1:]):
        piece = _visible(text[a:b])
        covering = [i for i in order if spans[i]["start"] <= a and b <= spans[i]["end"]]
        if covering:
            first = colours[spans[covering[0]]["type"]]
            bars = {lanes[i]: colours[spans[i]["type"]] for i in covering}
            title = " · ".join(_tag(spans[i]) for i in covering)
            piece = (f'<span class="ks-span" style="--ks-c:{first};box-shadow:{_bar_shadows(bars)}" '
                     f'title="{html.escape(title)}">{piece}</span>')
        parts.append(piece)
        parts += [f'<span class="ks-tag" style="--ks-c:{colours[spans[i]["type"]]}" '
                  f'data-tag="{html.escape(_tag(spans[i]))}"></span>' for i in order if spans[i]["end"] == b]
    return "".join(parts)


def _bar_shadows(bars: Mapping[int, str]) -> str:
    """Box shadows drawing one bar per lane under a piece of text (page-coloured where a lane is empty).

    A shadow shifted down by d paints the d pixels under the text; the first listed is on top, so
    lane l's bar shows between the gap above it and the next lane's gap.
    """
    return ",".join(shadow for lane in range(max(bars) + 1) for step in [lane * (BAR_PX + GAP_PX)]
                    for shadow in (f"0 {step + GAP_PX}px 0 0 var(--ks-bg)",
                                   f"0 {step + GAP_PX + BAR_PX}px 0 0 {bars.get(lane, 'var(--ks-bg)')}"))


def _tag(span: Mapping[str, Any]) -> str:
    """A span's type and score, e.g. "OFF 0.88" (the type alone without a score)."""
    score = span.get("score")
    return span["type"] if score is None else f"{span['type']} {score:.2f}"


def _label_html(task: str, value: Mapping[str, Any]) -> str:
    """One task's predicted label(s), each with its probability; every probability in the hover title."""
    probs = value.get("probs") or {}
    label = value.get("label")
    chosen = label if isinstance(label, list) else [label]
    shown = [f'<span class="ks-value">{_escape(name)}</span>'
             + (f' <span class="ks-prob">{probs[name]:.2f}</span>' if probs.get(name) is not None else "")
             for name in map(label_str, chosen)]
    title = " · ".join(f"{name} {p:.3f}" for name, p in sorted(probs.items(), key=lambda kv: -kv[1]))
    values = ", ".join(shown) or '<span class="ks-value">none</span>'
    return (f'<span class="ks-label" title="{html.escape(title)}"><span class="ks-task">{_escape(task)}</span> '
            f'{values}</span>')


def _visible(text: str) -> str:
    """Text escaped, each hidden character (zero-width, bidi control) kept but shown by a named badge.

    The character stays, so copying gives the input; its own isolated box keeps a bidi override
    from reversing the text after it on the page.

    Example:
        >>> _visible("a\u202eb")
        'a<span class="ks-hidden" data-name="RLO">\u202e</span>b'
    """
    parts, done = [], 0
    for offset, name in hidden_characters(text):
        parts += [_escape(text[done:offset]),
                  f'<span class="ks-hidden" data-name="{name}">{text[offset]}</span>']
        done = offset + 1
    return "".join(parts) + _escape(text[done:])


def _signals_html(signals: Mapping[str, int]) -> str:
    """What a normalizing model removed or folded (`signals`), after the labels; nothing when none.

    Example:
        >>> _signals_html({"invisible": 3, "bidi": 1})
        '<span class="ks-signals" title="normalization signals">invisible 3 · bidi 1</span>'
    """
    if not signals:
        return ""
    listed = " · ".join(f"{_escape(kind)} {count}" for kind, count in signals.items())
    return f'<span class="ks-signals" title="normalization signals">{listed}</span>'


def _escape(text: str) -> str:
    """Text for an HTML text node; a carriage return as a reference, since parsers turn a raw CR LF into LF."""
    return html.escape(text, quote=False).replace("\r", "&#13;")


def legend_html(colours: Mapping[str, str]) -> str:
    """The page's key: each span type in its colour, and how bars, badges and probabilities read.

    Example:
        >>> legend_html({"OFF": "#d55e00"}).count('class="ks-key"')
        1
    """
    return (f'<div class="ks-legend">{_keys(colours) or "no span types "}<span class="ks-help">· a bar under the '
            f'text per span (overlapping spans get bars of their own) · after a span: its type and score · labels: '
            f'the predicted label and its probability (hover for all)</span></div>\n')


def _keys(colours: Mapping[str, str]) -> str:
    """Each span type's name on its colour."""
    return "".join(f'<span class="ks-key" style="--ks-c:{c}">{_escape(t)}</span>' for t, c in colours.items())


def page_head(colours: Mapping[str, str], title: str = "kold-span predictions") -> str:
    """The start of a self-contained page (no scripts, nothing fetched): style, then the legend.

    Example:
        >>> page_head({}).startswith("<!DOCTYPE html>")
        True
    """
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{_escape(title)}</title>"
            f"<style>{PAGE_STYLE}</style></head><body>\n{legend_html(colours)}")


@contextmanager
def html_page(path: Union[str, Path], span_types: Sequence[str] = ()) -> Iterator["HtmlWriter"]:
    """An `HtmlWriter` whose page replaces `path` when the block ends without an error (`atomic_write`).

    On an error the previous page at `path` is left as it was, never a page without its closing tags.
    `span_types` (the model's) fix the colours and the legend.

    Example:
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> with html_page(Path(tmp.name) / "pages" / "p.html", ["OFF"]) as page:
        ...     page.add(Example(id="1", text="너 바보냐"), {"labels": {}, "spans": [
        ...         {"type": "OFF", "start": 2, "end": 4, "score": 0.9}]})
        >>> text = (Path(tmp.name) / "pages" / "p.html").read_text(encoding="utf-8")
        >>> text.count('class="ks-row"'), text.endswith(PAGE_TAIL)
        (1, True)
        >>> tmp.cleanup()
    """
    with atomic_write(path) as f:
        page = HtmlWriter(f, span_types)
        yield page
        page.finish()


class HtmlWriter:
    """Writes predictions into an open page, a row per comment as they come (`html_page` opens and closes it)."""

    def __init__(self, file: IO[str], span_types: Sequence[str] = ()):
        """Write the page's head to `file`; `span_types` (the model's) fix the colours and the legend."""
        self.colours = span_colours(span_types)
        self.declared = len(self.colours)
        self.file = file
        self.file.write(page_head(self.colours))

    def add(self, example: Example, prediction: Mapping[str, Any]) -> None:
        """Write one comment: its id and context, then its labels and text (`render_prediction_html`)."""
        for span in prediction.get("spans", ()):
            self.colours.setdefault(span["type"], PALETTE[len(self.colours) % len(PALETTE)])
        context = "<br>".join(_escape(turn) for turn in context_turns(example.context))  # one line a turn
        self.file.write(f'<section class="ks-row"><div class="ks-head">#{_escape(example.id)} '
                        f'<span class="ks-context">{context}</span></div>'
                        f"{render_prediction_html(example.text, prediction, self.colours)}</section>\n")

    def finish(self) -> None:
        """Write the key of any span type the model did not declare, and the page's closing tags."""
        undeclared = dict(list(self.colours.items())[self.declared:])
        if undeclared:
            self.file.write(f'<p class="ks-help">Span types the model did not declare: {_keys(undeclared)}</p>\n')
        self.file.write(PAGE_TAIL)
