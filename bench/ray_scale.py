"""`kold-span predict --engine ray` on this machine: one Ray worker against two, and the rate per worker.

The comments (BEEP! with titles when ../shared/data is there, else the sample cycled) are written
as JSONL shards; a randomly initialised joint model (OFF + OFF span, BERT of `--hidden`/`--layers`)
is saved as a model directory; a local Ray cluster of `--cpus` CPUs predicts every shard with
1 worker, then with 2 (each worker one CPU and one torch thread), from empty output folders. The
wall time includes starting the workers and loading the model in each, as a user's job does.

    python bench/ray_scale.py [--n 800] [--shards 8] [--hidden 256 --layers 4] [--no-docs]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import DATA, machine_line, write_section  # noqa: E402
from throughput import OFF, OFF_SPAN, load_comments, predictor_for  # noqa: E402

from kold_span.config.schema import ScratchEncoderConfig  # noqa: E402
from kold_span.inference.pipeline import RunOptions  # noqa: E402
from kold_span.inference.ray_engine import RayOptions, predict_shards, shard_paths  # noqa: E402
from kold_span.models.backbones import train_tokenizer  # noqa: E402


def write_shards(examples, folder: Path, count: int) -> list[Path]:
    """The examples as `count` JSONL shards of consecutive rows (id, comment, title)."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(examples) // count)
    for i in range(count):
        rows = examples[i * size:(i + 1) * size]
        (folder / f"part-{i:04d}.jsonl").write_text("".join(
            json.dumps({"id": f"{i}-{j}", "comment": e.text, "title": e.context}, ensure_ascii=False) + "\n"
            for j, e in enumerate(rows)), encoding="utf-8")
    return shard_paths([str(folder / "*.jsonl")])


def rate_line(workers: int, seconds: float, n: int, on_shards: float) -> str:
    """One table row: workers, seconds, comments/s, and one worker's comments/s while on its shards.

    Example:
        >>> rate_line(2, 10.0, 500, 31.25)
        '| 2 | 10.0 | 50.0 | 31.2 |'
    """
    return f"| {workers} | {round(seconds, 1)} | {round(n / seconds, 1)} | {round(on_shards, 1)} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--n", type=int, default=800)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--section", default="throughput-ray")
    args = parser.parse_args()

    import ray

    examples, source = load_comments(args.data, args.n)
    scratch = ScratchEncoderConfig(vocab_size=16000, hidden_size=args.hidden, layers=args.layers,
                                   heads=max(1, args.hidden // 64), intermediate_size=4 * args.hidden, max_position=512)
    texts = [e.text for e in examples] + sorted({e.context for e in examples if isinstance(e.context, str)})
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        predictor_for([OFF, OFF_SPAN], train_tokenizer(texts, scratch), scratch, 128).save_pretrained(model_dir)
        shards = write_shards(examples, Path(tmp) / "shards", args.shards)
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        seconds, per_worker = {}, {}
        try:
            for workers in (1, 2):
                start = time.perf_counter()
                summary = predict_shards([str(model_dir)], shards, Path(tmp) / f"out-{workers}",
                                         RayOptions(workers=workers, run=RunOptions(args.batch_size)))
                seconds[workers] = time.perf_counter() - start
                per_worker[workers] = summary.rate_per_worker
                assert summary.predictions == len(examples), summary
        finally:
            ray.shutdown()
    result = {"comments": len(examples), "shards": len(shards), "source": source, "cpus": args.cpus,
              "encoder": {"hidden": args.hidden, "layers": args.layers}, "batch_size": args.batch_size,
              "seconds": {str(w): round(s, 2) for w, s in seconds.items()},
              "rate_per_worker_on_shards": {str(w): round(r, 1) for w, r in per_worker.items()},
              "ratio_two_to_one": round(seconds[1] / seconds[2], 3), "machine": machine_line()}
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if not args.no_docs:
        rows = "\n".join(rate_line(w, s, len(examples), per_worker[w]) for w, s in seconds.items())
        command = ("python bench/ray_scale.py " + " ".join(sys.argv[1:])).strip()
        write_section(args.section, f"""## `predict --engine ray`: one worker against two (hidden {args.hidden}, {args.layers} layers)

Command: `{command}` — {result['machine']}; a local Ray cluster of
{args.cpus} CPUs, each worker one CPU and one torch thread. Data: {len(examples)} comments from {source}
in {len(shards)} JSONL shards; batch {args.batch_size}; a randomly initialised joint model (OFF + OFF span);
Kiwi on. Seconds from the call to the last output shard, workers' start and model loading included;
the rate per worker counts only the time each worker spent on its shards.

| workers | seconds | comments / s | comments / s per worker, on its shards |
|---|---|---|---|
{rows}

- Two workers against one: **{result['ratio_two_to_one']}×**.
""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
