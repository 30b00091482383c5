"""Memory and length: `predict`'s peak memory on 20k vs 200k distinct comments, and one long comment
against the same characters as many short ones.

    python bench/memory.py --model checkpoints/demo/demo/model            # after `make demo`
    python bench/memory.py --model DIR --sizes 2000 20000 --long-chars 20000 --no-docs

Goals (issue "Nothing lost, nothing crashes"): the 200k run's peak RSS within 5% of the 20k run's
(memory flat in the input size), and one 200,000-character comment within 1.5x the time of the
same characters as 100 comments (cost linear in length). Each size runs `kold-span predict` in a
fresh process and reads that process's own peak RSS (`os.wait4`). Comments are the shipped
sample's, each made distinct by a number, so no analysis is served twice from a cache.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from report import machine_line, write_section  # noqa: E402

SAMPLE = ROOT / "data" / "sample" / "kold_sample.json"


def distinct_comments(n: int, base: list[str]) -> list[str]:
    """`n` different comments: the sample's, cycled, each ending in its own number.

    Example:
        >>> distinct_comments(3, ["a", "b"])
        ['a 0', 'b 1', 'a 2']
    """
    return [f"{base[i % len(base)]} {i}" for i in range(n)]


def long_text_and_pieces(chars: int, pieces: int, base: list[str]) -> tuple[str, list[str]]:
    """One text of about `chars` characters of sample comments, and the same text cut into `pieces` parts.

    The cuts fall on spaces, so every piece is made of whole words and the pieces joined by
    single spaces give the long text back.

    Example:
        >>> text, parts = long_text_and_pieces(20, 2, ["abc de", "fgh"])
        >>> " ".join(parts) == text, len(parts)
        (True, 2)
    """
    words: list[str] = []
    length = 0
    i = 0
    while length < chars:
        for word in base[i % len(base)].split():
            words.append(word)
            length += len(word) + 1
        i += 1
    text = " ".join(words)
    target = len(text) / pieces
    parts, current, size = [], [], 0
    for word in words:
        current.append(word)
        size += len(word) + 1
        if size >= target and len(parts) < pieces - 1:
            parts.append(" ".join(current))
            current, size = [], 0
    parts.append(" ".join(current))
    return text, parts


def peak_rss_of_predict(model: Path, comments: list[str], workdir: Path) -> tuple[float, float]:
    """(peak RSS in MiB, wall seconds) of one `kold-span predict` process over `comments`."""
    source = workdir / f"comments-{len(comments)}.txt"
    source.write_text("\n".join(comments) + "\n", encoding="utf-8")
    output = workdir / f"predictions-{len(comments)}.jsonl"
    command = [sys.executable, "-m", "kold_span.cli", "predict", "--model", str(model), "--input", str(source),
               "--output", str(output), "--quiet"]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"predict failed on {len(comments)} comments: {process.stderr.read().decode()}")
    lines = sum(1 for _ in output.open(encoding="utf-8"))
    if lines != len(comments):
        raise SystemExit(f"predict wrote {lines} lines for {len(comments)} comments")
    return usage.ru_maxrss / 1024, seconds


def time_long_comment(model: Path, text: str, parts: list[str], repeats: int) -> tuple[float, float]:
    """Best-of-`repeats` seconds to predict the long text alone, and its parts as one batch."""
    from kold_span.inference.predictor import Predictor
    from kold_span.text.morphemes import clear_cache

    predictor = Predictor.from_pretrained(model)
    predictor.predict(parts[:2])  # warm-up: Kiwi's model, the first forward pass
    timings = {"long": [], "parts": []}
    for _ in range(repeats):
        for name, texts in (("long", [text]), ("parts", parts)):
            clear_cache()
            start = time.perf_counter()
            predictor.predict(texts, batch_size=32)
            timings[name].append(time.perf_counter() - start)
    return min(timings["long"]), min(timings["parts"])


def render(rows: list[tuple[int, float, float]], long_row: tuple[int, int, float, float], command: str) -> str:
    """The markdown section of one run."""
    lines = ["## `predict`: peak memory by input size, and cost by comment length", "",
             f"Command: `{command}` — {machine_line()}.", "",
             "| distinct comments | peak RSS (MiB) | seconds |", "|---|---|---|"]
    lines += [f"| {n:,} | {rss:.0f} | {secs:.1f} |" for n, rss, secs in rows]
    if len(rows) >= 2:
        (n0, rss0, _), (n1, rss1, _) = rows[0], rows[-1]
        lines += ["", f"- {n1:,} against {n0:,} comments: peak RSS **{rss1 / rss0:.3f}×** (goal ≤ 1.05×)."]
    chars, pieces, long_s, parts_s = long_row
    lines += ["", "| input | seconds |", "|---|---|",
              f"| one comment of {chars:,} characters | {long_s:.2f} |",
              f"| the same characters as {pieces} comments | {parts_s:.2f} |", "",
              (f"- One long comment against the same characters cut into {pieces}: **{long_s / parts_s:.2f}×** "
               f"(goal ≤ 1.5×).")]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "checkpoints/demo/demo/model")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--long-chars", type=int, default=200_000)
    parser.add_argument("--pieces", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-docs", action="store_true", help="print the section instead of writing the docs")
    args = parser.parse_args()
    if not (args.model / "config.json").exists():
        raise SystemExit(f"no model directory at {args.model}: run `make demo` first or pass --model")
    base = [record["comment"] for record in json.loads(SAMPLE.read_text(encoding="utf-8"))]  # the sample, in order
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            rss, seconds = peak_rss_of_predict(args.model, distinct_comments(n, base), Path(tmp))
            rows.append((n, rss, seconds))
            print(f"{n} comments: peak RSS {rss:.0f} MiB in {seconds:.1f} s", flush=True)
    text, parts = long_text_and_pieces(args.long_chars, args.pieces, base)
    long_s, parts_s = time_long_comment(args.model, text, parts, args.repeats)
    print(f"one comment of {len(text)} characters: {long_s:.2f} s; as {len(parts)} comments: {parts_s:.2f} s")
    command = "python bench/memory.py " + " ".join(sys.argv[1:])
    section = render(rows, (len(text), len(parts), long_s, parts_s), command.strip())
    if args.no_docs:
        print(section)
    else:
        write_section("memory", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
