"""Seconds per training step of each experiment's encoder, on one batch of the same shape.

A step is what an epoch repeats: forward, losses, backward and the AdamW update (no evaluation),
timed on a full batch of `--batch` windows of `--tokens` tokens cut from the experiment's corpus
(its longest comments, so no window is short), after `--warmup` untimed steps; the median of
`--steps` timed ones is reported. The model is built as training builds it (the experiment's
encoder, heads and frozen word embeddings), so the ratio between two rows is the ratio of their
epochs at the same batch shape.

    python bench/step_time.py --experiments toxic_spans_minilm.yaml toxic_spans_mpnet.yaml --threads 2

Results: bench/results/step-time.json and the `step-time` section of docs/benchmarks/training-speed.md.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from batching import experiment_model, train_step  # noqa: E402
from report import DATA, DOCS, machine_line, save_results, write_section  # noqa: E402

from kold_span.models.network import MultiTaskModel  # noqa: E402
from kold_span.models.windows import InputEncoder  # noqa: E402
from kold_span.training import WindowsDataModule  # noqa: E402

SECTION = "step-time"


def step_seconds(experiment: str, data: Path, batch_size: int, tokens: int, warmup: int, steps: int) -> dict:
    """The median and spread of `steps` timed training steps (wall clock; and CPU seconds, all threads) of `experiment`'s model on one full batch."""
    def longest_of(examples: list) -> list:
        return sorted(examples, key=lambda e: len(e.text), reverse=True)[:batch_size]

    config, splits, tasks, tokenizer, encoder = experiment_model(experiment, data, ["data.test_fraction=0"], longest_of)
    longest = longest_of(splits["train"])
    inputs = InputEncoder(tokenizer, tokens, tokens // 4, config.context.mode, config.context.max_turns)
    datamodule = WindowsDataModule({"train": longest}, tasks, inputs, batch_size, seed=config.seed)
    datamodule.setup()
    batch = next(b for b in datamodule.train_dataloader() if tuple(b["input_ids"].shape) == (batch_size, tokens))
    torch.manual_seed(0)
    model = MultiTaskModel(encoder, tasks, config.model.dropout, config.model.pooling)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.trainer.lr)
    model.train()
    times, cpu_times = [], []
    for i in range(warmup + steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        train_step(model, batch, optimizer)
        if i >= warmup:
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu_start)
    return {"experiment": experiment, "encoder": config.model.encoder.name_or_path or "scratch",
            "weights": sum(p.numel() for p in model.parameters()),
            "trained_weights": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
            "max_s": round(max(times), 3), "median_cpu_s": round(statistics.median(cpu_times), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--experiments", nargs="+", default=["toxic_spans_minilm.yaml", "toxic_spans_mpnet.yaml"])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/benchmarks/training-speed.md")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    rows = []
    for experiment in args.experiments:
        rows.append(step_seconds(experiment, args.data, args.batch, args.tokens, args.warmup, args.steps))
        print(json.dumps(rows[-1]), flush=True)
    result = {"batch": args.batch, "tokens": args.tokens, "torch_threads": torch.get_num_threads(),
              "warmup": args.warmup, "steps": args.steps, "machine": machine_line(),
              "load_average_1min": [round(load_before[0], 2), round(os.getloadavg()[0], 2)], "rows": rows}
    save_results(SECTION, result)
    if not args.no_docs:
        command = ("python bench/step_time.py " + " ".join(sys.argv[1:])).strip()
        write_section(SECTION, render(result, command), DOCS / "training-speed.md")
    return 0


def render(r: dict, command: str) -> str:
    """The docs section of one result: a row per experiment, its time relative to the first row's.

        >>> r = {"machine": "CPU", "torch_threads": 2, "batch": 16, "tokens": 64, "warmup": 2, "steps": 5,
        ...      "load_average_1min": [3.0, 3.5],
        ...      "rows": [{"experiment": "a.yaml", "encoder": "small", "weights": 22_000_000,
        ...                "trained_weights": 22_000_000, "median_s": 0.5, "min_s": 0.4, "max_s": 0.6, "median_cpu_s": 0.9},
        ...               {"experiment": "b.yaml", "encoder": "big", "weights": 110_000_000,
        ...                "trained_weights": 110_000_000, "median_s": 3.0, "min_s": 2.9, "max_s": 3.2,
        ...                "median_cpu_s": 5.4}]}
        >>> "| `b.yaml` | `big` | 110.0M | 110.0M | 3.00 (2.90–3.20) | 5.40 | 6.0× | 6.0× |" in render(r, "cmd")
        True
    """
    base, base_cpu = r["rows"][0]["median_s"], r["rows"][0]["median_cpu_s"]
    rows = "\n".join(f"| `{row['experiment']}` | `{row['encoder']}` | {row['weights'] / 1e6:.1f}M | "
                     f"{row['trained_weights'] / 1e6:.1f}M | {row['median_s']:.2f} ({row['min_s']:.2f}–"
                     f"{row['max_s']:.2f}) | {row['median_cpu_s']:.2f} | {row['median_s'] / base:.1f}× | "
                     f"{row['median_cpu_s'] / base_cpu:.1f}× |" for row in r["rows"])
    before, after = r["load_average_1min"]
    return f"""## Training speed: one step per encoder

Command: `{command}` — {r['machine']}, {r['torch_threads']} torch thread(s); 1-minute load average
{before} before and {after} after (the machine was shared: the times are upper bounds).
One training step (forward, losses, backward, AdamW update; no evaluation) on one batch of {r['batch']}
windows of {r['tokens']} tokens cut from the experiment's corpus, the median of {r['steps']} steps after
{r['warmup']} untimed (fastest–slowest in brackets); CPU seconds are the process's, all threads
together, which other jobs on the machine disturb less than the wall clock.

| experiment | encoder | weights | trained | seconds per step | CPU seconds per step | against the first row | in CPU seconds |
|---|---|---|---|---|---|---|---|
{rows}"""


if __name__ == "__main__":
    sys.exit(main())
