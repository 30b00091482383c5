"""Throughput of `nlp.pipe` with the `kold_span` component against calling the predictor directly.

The same comments with their titles (BEEP! when ../shared/data is there, else the made-up KOLD
sample cycled) go through
  (a) `Predictor.predict(texts, titles, batch_size=B)`, all at once,
  (b) `nlp.pipe([(text, {"context": title})], as_tuples=True)` with spaCy's whitespace tokenizer
      (`spacy.blank("xx")`) and the component at `batch_size: B`,
  (c) the same with the Kiwi tokenizer (`kold_span.KiwiTokenizer.v1`).
Passes alternate (a), (b), (c), so a change of load on a shared machine falls on all three; the
Kiwi cache is cleared before each pass, so each pays for its own analyses. The target: (b) within
10% of (a).

    python bench/spacy_pipe.py [--model checkpoints/demo/demo/model] [--n 2000] [--batch-size 32]
                               [--repeats 3] [--threads N] [--data DIR] [--no-docs]

On a machine other jobs share, `--threads 1` keeps torch's threads from waiting on each other
(with 2 threads on 2 busy cores, two passes of the same call differed by 2×).

Results: bench/results/spacy_pipe.json and the `spacy-pipe` section of docs/SPACY.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import spacy  # noqa: E402
from report import DATA, machine_line, save_results, write_section  # noqa: E402
from throughput import load_comments  # noqa: E402

import kold_span.integrations.kiwi_tokenizer  # noqa: E402,F401  (registers the tokenizer from a checkout)
import kold_span.integrations.spacy_component  # noqa: E402,F401  (registers the component from a checkout)
from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.text.morphemes import clear_cache  # noqa: E402

DOC = ROOT / "docs" / "SPACY.md"
KIWI = {"nlp": {"tokenizer": {"@tokenizers": "kold_span.KiwiTokenizer.v1"}}}
SETUPS = ("predictor", "nlp.pipe, whitespace tokenizer", "nlp.pipe, Kiwi tokenizer")


def pipeline(model: Path, batch_size: int, kiwi: bool) -> spacy.Language:
    """A blank multilingual pipeline with the component; the model loaded now, not in the first timed pass."""
    nlp = spacy.blank("xx", config=KIWI if kiwi else {})
    nlp.add_pipe("kold_span", config={"model": str(model), "batch_size": batch_size})
    nlp.get_pipe("kold_span").predictor  # noqa: B018
    return nlp


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one pass, from a cold Kiwi cache."""
    clear_cache()
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def slowdowns(runs: dict[str, list[float]], base: str) -> dict[str, float]:
    """Each setup's median, over rounds, of its time over `base`'s time in the same round, minus 1.

    A ratio within a round cancels the load other jobs put on a shared machine while that round ran.

    Example:
        >>> slowdowns({"a": [10.0, 20.0, 12.0], "b": [11.0, 22.0, 12.0]}, "a")
        {'b': 0.1}
    """
    return {name: round(statistics.median(t / b for t, b in zip(times, runs[base])) - 1, 3)
            for name, times in runs.items() if name != base}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=ROOT / "checkpoints/demo/demo/model")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/SPACY.md")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    examples, source = load_comments(args.data, args.n)
    texts, titles = [e.text for e in examples], [e.context for e in examples]
    pairs = [(text, {"context": title}) for text, title in zip(texts, titles)]
    predictor = Predictor.from_pretrained(args.model)
    words, kiwi = pipeline(args.model, args.batch_size, False), pipeline(args.model, args.batch_size, True)
    passes: dict[str, Callable[[], object]] = {
        SETUPS[0]: lambda: predictor.predict(texts, titles, batch_size=args.batch_size),
        SETUPS[1]: lambda: list(words.pipe(pairs, as_tuples=True)),
        SETUPS[2]: lambda: list(kiwi.pipe(pairs, as_tuples=True)),
    }
    predictor.predict(texts[:64], titles[:64], batch_size=args.batch_size)  # warm-up
    for nlp in (words, kiwi):
        list(nlp.pipe(pairs[:64], as_tuples=True))
    load_before = os.getloadavg()
    wall: dict[str, list[float]] = {name: [] for name in SETUPS}
    cpu: dict[str, list[float]] = {name: [] for name in SETUPS}
    for round_ in range(args.repeats):
        for name in SETUPS[round_ % 3:] + SETUPS[:round_ % 3]:  # each setup goes first in turn
            w, c = timed(passes[name])
            wall[name].append(w)
            cpu[name].append(c)
            print(f"{name}: {w:.2f} s, CPU {c:.2f} s", flush=True)
    median = {name: statistics.median(t) for name, t in wall.items()}
    result = {
        "model": os.path.relpath(args.model, ROOT), "comments": args.n, "source": source,
        "batch_size": args.batch_size, "spacy_batch_size": words.batch_size, "repeats": args.repeats,
        "seconds": {name: round(s, 2) for name, s in median.items()},
        "cpu_seconds": {name: round(statistics.median(t), 2) for name, t in cpu.items()},
        "comments_per_s": {name: round(args.n / s, 1) for name, s in median.items()},
        "slowdown": slowdowns(wall, SETUPS[0]), "cpu_slowdown": slowdowns(cpu, SETUPS[0]),
        "load_average": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
        "torch_threads": torch.get_num_threads(), "spacy": spacy.__version__, "machine": machine_line(),
    }
    save_results("spacy_pipe", result, printed=True)
    if not args.no_docs:
        write_section("spacy-pipe", render(result, ("python bench/spacy_pipe.py " + " ".join(sys.argv[1:])).strip()),
                      DOC)
    return 0


def render(r: dict, command: str) -> str:
    """The docs section of one result.

        >>> setups = ("predictor", "nlp.pipe, whitespace tokenizer", "nlp.pipe, Kiwi tokenizer")
        >>> r = {"model": "m", "comments": 10, "source": "s", "batch_size": 4, "spacy_batch_size": 1000,
        ...      "repeats": 3, "seconds": dict(zip(setups, (2.0, 2.1, 2.4))),
        ...      "cpu_seconds": dict(zip(setups, (1.9, 2.0, 2.2))), "comments_per_s": dict(zip(setups, (5.0, 4.8, 4.2))),
        ...      "slowdown": dict(zip(setups[1:], (0.05, 0.2))), "cpu_slowdown": dict(zip(setups[1:], (0.04, 0.15))),
        ...      "load_average": [1.0, 2.0], "torch_threads": 1, "spacy": "3.8", "machine": "CPU"}
        >>> text = render(r, "cmd")
        >>> "| nlp.pipe, Kiwi tokenizer | 2.4 | 4.2 | +20.0% | 2.2 | +15.0% |" in text
        True
        >>> "whitespace tokenizer: **+5.0%** in wall time, **+4.0%** in CPU time (target: within 10%)" in text
        True
    """
    def against(name: str, key: str) -> str:
        return f"{r[key][name] * 100:+.1f}%" if name in r[key] else ""

    rows = "\n".join(f"| {name} | {r['seconds'][name]} | {r['comments_per_s'][name]} | {against(name, 'slowdown')} | "
                     f"{r['cpu_seconds'][name]} | {against(name, 'cpu_slowdown')} |" for name in r["seconds"])
    words = "nlp.pipe, whitespace tokenizer"
    return f"""## Throughput: `nlp.pipe` against the predictor

Command: `{command}` — {r['machine']}, {r['torch_threads']} torch thread(s), spaCy {r['spacy']},
load average {r['load_average'][0]} before and {r['load_average'][1]} after.
Data: {r['comments']} comments with their titles from {r['source']}; model `{r['model']}`;
the network's batch {r['batch_size']} in all three, spaCy's batch (docs per predict call)
{r['spacy_batch_size']}; {r['repeats']} rounds, each running the three once (in turn first), each
pass from a cold Kiwi cache. Seconds are medians; "against the predictor" is the median over
rounds of the time over the predictor's in the same round. CPU seconds are this process's, which
other jobs on a shared machine do not lengthen.

| setup | seconds | comments / s | against the predictor | CPU seconds | against the predictor (CPU) |
|---|---|---|---|---|---|
{rows}

- `nlp.pipe` with the whitespace tokenizer: **{against(words, "slowdown")}** in wall time, **{against(words, "cpu_slowdown")}** in CPU time (target: within 10%)."""


if __name__ == "__main__":
    sys.exit(main())
