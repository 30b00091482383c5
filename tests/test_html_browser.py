"""The predictions page in a real browser (headless Chromium): the text shows exactly as written, badges stay clear.

`python tests/test_html_browser.py` rewrites docs/img/predictions.png, the screenshot docs/PREDICTING.md shows.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

import pytest

from kold_span.data.example import Example
from kold_span.inference.html import html_page

from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium "
                                                         "fonts-noto-cjk; .ci/run installs them under CI)")
WINDOW = (1200, 900)
SCREENSHOT = ROOT / "docs" / "img" / "predictions.png"


def _span(kind: str, text: str, part: str, score: float, nth: int = 0) -> dict:
    """A predicted span over the `nth` occurrence of `part` in `text`."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(part, start + 1)
    return {"type": kind, "start": start, "end": start + len(part), "text": part, "score": score}


def _off(prob: float) -> dict:
    return {"OFF": {"label": prob >= 0.5, "probs": {"false": round(1 - prob, 6), "true": prob}}}


def demo_rows() -> list[tuple[Example, dict]]:
    """Invented comments with hand-made predictions: Korean words cut by spans, English punctuation, overlaps."""
    ko = "국회의원은 밥 먹다가 또 헛소리하네 ㅋㅋ  진짜 한심하다"
    en = "What a treasonous traitor, a racist , bigot, and Hitler's fan."
    apostrophe_s = en.count("s", 0, en.index("'s"))  # the "s" of "Hitler's" is this occurrence of "s"
    nested = "These people are all the same:\n  lazy,   greedy liars.\tEvery one of them."
    long = ("이 기사 쓴 기자는 도대체 무슨 생각으로 이런 글을 쓰는지 모르겠다. " * 6).strip()
    marks = "<script>alert('x')</script> & &amp; \"따옴표\" ㅋㅋㅋ cafe\u0301"
    return [
        (Example(id="ko-1", text=ko, context="국회 본회의, 예산안 처리 또 미뤄져"),
         {"labels": {**_off(0.934), "GRP": {"label": "politician", "probs": {"politician": 0.71, "gender": 0.2,
                                                                               "race": 0.09}}},
          "spans": [_span("TGT", ko, "의원", 0.88), _span("OFF", ko, "헛소리", 0.81),
                    _span("OFF", ko, "한심하", 0.64)]}),
        (Example(id="en-1", text=en),
         {"labels": _off(0.978),
          "spans": [_span("OFF", en, "ous traitor", 0.77), _span("OFF", en, "racist , bigot", 0.9),
                    _span("TGT", en, "racist", 0.55), _span("OFF", en, "s", 0.52, nth=apostrophe_s)]}),
        (Example(id="en-2", text=nested, context=["A: what do you think of them?", "B: <see below>"]),
         {"labels": _off(0.861),
          "spans": [_span("TGT", nested, "These people", 0.83), _span("OFF", nested, "lazy,   greedy liars", 0.79),
                    _span("OFF", nested, "greedy", 0.58), _span("TGT", nested, "greedy liars.\tEvery one", 0.41),
                    _span("TGT", nested, "Every one of them", 0.62)]}),
        (Example(id="ko-2", text=long),
         {"labels": _off(0.12), "spans": [_span("OFF", long, "도대체 무슨 생각으로", 0.51, nth=3)]}),
        (Example(id="marks", text=marks), {"labels": _off(0.5), "spans": [_span("OFF", marks, "&amp;", 0.7),
                                                                          _span("TGT", marks, "ㅋㅋ", 0.66)]}),
        (Example(id="none", text="좋은 기사 감사합니다"), {"labels": _off(0.03), "spans": []}),
    ]


def write_demo_page(path: Path) -> list[str]:
    """The demo rows as a predictions page; returns their texts."""
    with html_page(path, span_types=["OFF", "TGT"]) as writer:
        for example, prediction in demo_rows():
            writer.add(example, prediction)
    return [example.text for example, _ in demo_rows()]


# Run in the page after it rendered: each text block's innerText (the text as the browser lays it out,
# generated badge text excluded), overlaps between badges and text, and the colours of the spans.
PROBE = """<pre id="probe"></pre><script>
const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5
                   && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
const rows = [...document.querySelectorAll('.ks-text')].map(block => {
  const badges = [...block.querySelectorAll('.ks-tag')].map(b => b.getBoundingClientRect());
  const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
  const glyphs = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange();
      range.setStart(node, i); range.setEnd(node, i + 1);
      glyphs.push(...[...range.getClientRects()].filter(r => r.width > 0));
    }
  }
  let overlaps = 0;
  badges.forEach((b, i) => {
    overlaps += badges.slice(i + 1).filter(o => hit(b, o)).length + glyphs.filter(g => hit(b, g)).length;
  });
  const spans = [...block.querySelectorAll('.ks-span')].map(s => [s.title, getComputedStyle(s).backgroundColor]);
  return {text: block.innerText, badges: badges.length, overlaps, spans};
});
const result = {rows, overflow: document.documentElement.scrollWidth > window.innerWidth};
document.getElementById('probe').textContent = encodeURIComponent(JSON.stringify(result));
</script>"""


def run_chromium(*args: str) -> subprocess.CompletedProcess:
    """Headless Chromium with a throwaway profile, no network services, no sandbox (the tests run as root)."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                               "--no-first-run", "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
                               f"--window-size={WINDOW[0]},{WINDOW[1]}", *args],
                              capture_output=True, encoding="utf-8", timeout=180)


def screenshot(page: Path, png: Path) -> None:
    """A PNG of the page's first screen."""
    done = run_chromium(f"--screenshot={png}", page.as_uri())
    if done.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium made no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")


def png_size(png: Path) -> tuple[int, int]:
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_browser_shows_every_text_exactly_and_badges_overlap_nothing(tmp_path):
    page = tmp_path / "predictions.html"
    texts = write_demo_page(page)
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = run_chromium("--dump-dom", probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">([^<]+)</pre>', done.stdout)
    assert found, f"the probe script did not run; chromium said: {done.stderr[-2000:]}"
    result = json.loads(urllib.parse.unquote(found.group(1)))
    rows = result["rows"]
    assert [row["text"] for row in rows] == texts  # every character in place: no space added or lost
    assert [row["badges"] for row in rows] == [len(p["spans"]) for _, p in demo_rows()]
    assert [row["overlaps"] for row in rows] == [0] * len(rows)
    assert not result["overflow"]  # long lines wrap inside the window
    # Span types in distinct colours: the background of a piece under OFF alone differs from TGT alone.
    colours = {title.split()[0]: colour for row in rows for title, colour in row["spans"] if "·" not in title}
    assert colours["OFF"] != colours["TGT"]


def test_screenshot(tmp_path):
    page = tmp_path / "predictions.html"
    write_demo_page(page)
    png = tmp_path / "predictions.png"
    screenshot(page, png)
    assert png_size(png) == WINDOW
    assert png.stat().st_size > 20_000  # a page with text on it, not a blank screen


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        demo = Path(folder) / "predictions.html"
        write_demo_page(demo)
        screenshot(demo, SCREENSHOT)
    print(f"wrote {SCREENSHOT}")
