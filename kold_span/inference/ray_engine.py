"""`kold-span predict --engine ray`: input shards predicted by a pool of Ray workers, one output shard each.

Ray Data holds the shards as a dataset of one row per shard and hands them to an actor pool
(`--workers`), each actor holding one loaded predictor. An actor reads its shard with the same
reader as the single-process command (`inputs.ReadOptions.open`: its columns, line numbers and
bad-row policy) and writes it through the same pipeline and writer (`outputs.write_predictions`),
so an output shard holds, byte for byte, what `kold-span predict` writes for that shard alone.

Resuming, bad rows and the cluster's shared paths are told once, in docs/SCALE.md ("A cluster").
"""
from __future__ import annotations

import glob
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence

from kold_span.config.choices import OutputFormat
from kold_span.data.atomic import partial_path
from kold_span.errors import ArgumentError, DataError, KoldSpanError, needs_extra
from kold_span.inference.inputs import INPUT_SUFFIXES, ReadOptions
from kold_span.inference.pipeline import RunOptions

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RayOptions:
    """How shards are spread over Ray: the worker pool, the cluster, and what each worker does per shard.

    Example:
        >>> str(RayOptions(workers=2).shard_format), RayOptions(gpus_per_worker=0.25).run.device
        ('jsonl', 'cuda')
    """

    workers: int = 1
    cpus_per_worker: int = 1
    gpus_per_worker: float = 0.0
    address: Optional[str] = None  # an existing cluster ("auto", "ray://head:10001"); None starts a local one
    shard_format: OutputFormat = OutputFormat.JSONL
    run: RunOptions = RunOptions()  # each worker's model and pipeline; its device is the GPU Ray gives it, or the CPU
    read: ReadOptions = ReadOptions()
    progress: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "run", replace(self.run, device="cuda" if self.gpus_per_worker > 0 else "cpu"))


@dataclass
class ShardSummary:
    """What a run did: shards predicted and skipped (already complete), predictions written, bad rows skipped.

    `shard_seconds` adds up the time workers spent on their shards (not starting or loading the
    model), so `predictions / shard_seconds` is the rate of one worker.

    Example:
        >>> ShardSummary(done=4, predictions=1000, shard_seconds=20.0).rate_per_worker
        50.0
    """

    done: int = 0
    skipped: int = 0
    predictions: int = 0
    shard_seconds: float = 0.0
    bad_rows: list[str] = field(default_factory=list)

    @property
    def rate_per_worker(self) -> float:
        """Predictions a second of one worker's time on shards (0 when nothing was predicted)."""
        return self.predictions / self.shard_seconds if self.shard_seconds else 0.0


def shard_paths(patterns: Sequence[str]) -> list[Path]:
    """The input shards: every file a pattern matches (a glob or a path), sorted, each once.

    Example:
        >>> shard_paths(["no/such/*.jsonl"])
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: no input shard matches no/such/*.jsonl
    """
    found: dict[Path, None] = {}
    for pattern in patterns:
        matches = sorted(Path(p) for p in glob.glob(pattern) if Path(p).is_file())
        if not matches:
            raise ArgumentError(f"no input shard matches {pattern}")
        found.update(dict.fromkeys(matches))
    return list(found)


def output_shards(shards: Sequence[Path], output_dir: Path, shard_format: OutputFormat) -> list[Path]:
    """Each input shard's output shard: its name with the output format's suffix, in `output_dir`.

    Example:
        >>> [str(p) for p in output_shards([Path("in/a.csv"), Path("in/b.parquet")], Path("out"), "jsonl")]
        ['out/a.jsonl', 'out/b.jsonl']
        >>> output_shards([Path("x/a.csv"), Path("y/a.tsv")], Path("out"), "jsonl")
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: input shards x/a.csv and y/a.tsv would both write out/a.jsonl; rename one
    """
    outputs: dict[Path, Path] = {}
    for shard in shards:
        if shard.suffix.lower() not in INPUT_SUFFIXES:
            raise DataError(f"{shard}: unsupported input type {shard.suffix!r}; use "
                            f"{', '.join(INPUT_SUFFIXES)}")
        out = output_dir / f"{shard.stem}.{shard_format}"
        if out in outputs:
            raise ArgumentError(f"input shards {outputs[out]} and {shard} would both write {out}; rename one")
        outputs[out] = shard
    return list(outputs)


def predict_shard(predictor: Any, shard: Path, output: Path, options: RayOptions) -> tuple[int, list[str]]:
    """One shard into its output shard, through `<output>.partial`, continued if a killed run left one: the number of
    predictions and the reasons of the rows skipped (with `options.read.skip_bad`)."""
    from kold_span.inference.outputs import write_predictions

    examples, report = options.read.open(shard)
    done = write_predictions(predictor, examples, output, options=options.run, resume=partial_path(output).exists(),
                             read=options.read)
    return done.rows, list(report.reasons)


class ShardPredictor:
    """A Ray Data actor: one loaded predictor that predicts the shards of each batch it is handed."""

    def __init__(self, model_dirs: Sequence[str], options: RayOptions):
        import torch

        from kold_span.inference.ensemble import load_predictor
        from kold_span.text import morphemes

        torch.set_num_threads(options.cpus_per_worker)
        morphemes.KIWI_THREADS = options.cpus_per_worker  # not every core of a node its workers share
        self.options = options
        self.predictor = load_predictor(list(model_dirs), options.run)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        """Predict each shard of the batch; a user's error (a bad row) is returned, by class name and message."""
        rows: dict[str, list] = {"shard": [], "count": [], "skipped": [], "error": [], "error_type": [],
                                 "seconds": []}
        for shard, output in zip(batch["shard"], batch["output"]):
            count, skipped, error, error_type = 0, [], "", ""
            start = time.perf_counter()
            try:
                count, skipped = predict_shard(self.predictor, Path(shard), Path(output), self.options)
            except KoldSpanError as err:
                # Ray would hand the driver only its own wrapper with this error's traceback as text.
                error, error_type = str(err), type(err).__name__
            for key, value in (("shard", str(shard)), ("count", count), ("skipped", "\n".join(skipped)),
                               ("error", error), ("error_type", error_type),
                               ("seconds", time.perf_counter() - start)):
                rows[key].append(value)
        return rows


def predict_shards(model_dirs: Sequence[str], shards: Sequence[Path], output_dir: Path,
                   options: RayOptions = RayOptions()) -> ShardSummary:
    """Predict every input shard whose output shard is not complete yet, on a pool of Ray workers.

    Joins the cluster at `options.address`, or the one this process already joined, or starts a
    local one (and stops it at the end). `model_dirs` (several: an ensemble) must be readable at this path on every
    node. The input shards of complete outputs are counted as skipped; a bad row is a `DataError` (or the worker's
    other `KoldSpanError`) naming its shard and line.
    """
    with needs_extra("cluster"):
        import ray
    if output_dir.suffix.lower().lstrip(".") in OutputFormat.values() or output_dir.is_file():
        raise ArgumentError(f"output {output_dir}: the Ray engine writes a folder, one output shard per input shard "
                            "(choose their format with shard_format, --shard-format on the command line)")
    output_dir.mkdir(parents=True, exist_ok=True)
    outputs = output_shards(shards, output_dir, options.shard_format)
    for directory in model_dirs:
        if not Path(directory).is_dir():
            raise FileNotFoundError(f"model directory {directory} does not exist")
    todo = [(shard, out) for shard, out in zip(shards, outputs) if not out.exists()]
    summary = ShardSummary(skipped=len(shards) - len(todo))
    if not todo:
        return summary
    started = not ray.is_initialized()
    if started:
        ray.init(address=options.address, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)
    try:
        rows = _run(ray, model_dirs, todo, options)
    finally:
        if started:
            ray.shutdown()
    order = {str(shard): i for i, (shard, _out) in enumerate(todo)}
    errors = []
    for row in sorted(rows, key=lambda r: order[r["shard"]]):
        if row["error"]:
            errors.append((row["error_type"], row["error"]))
            continue
        summary.done += 1
        summary.predictions += int(row["count"])
        summary.shard_seconds += float(row["seconds"])
        summary.bad_rows += [r for r in str(row["skipped"]).split("\n") if r]
    if errors:
        raise _user_error(errors[0], len(errors) - 1)
    return summary


def _run(ray: Any, model_dirs: Sequence[str], todo: list[tuple[Path, Path]], options: RayOptions) -> list[dict]:
    """Ray Data over the shards to do, one shard a block, through the actor pool; its rows once all are done."""
    with needs_extra("cluster"):
        from ray.data import ActorPoolStrategy, DataContext

    DataContext.get_current().enable_progress_bars = options.progress
    dataset = ray.data.from_items([{"shard": str(shard), "output": str(out)} for shard, out in todo],
                                  override_num_blocks=len(todo))
    dataset = dataset.map_batches(ShardPredictor, fn_constructor_args=(list(model_dirs), options), batch_size=1,
                                  compute=ActorPoolStrategy(size=min(options.workers, len(todo))),
                                  num_cpus=options.cpus_per_worker, num_gpus=options.gpus_per_worker)
    return dataset.take_all()


def _user_error(error: tuple[str, str], others: int) -> KoldSpanError:
    """The error a worker returned (its class name, its message) as that `kold_span.errors` class.

    Example:
        >>> _user_error(("DataError", "in.jsonl:3: invalid JSON"), 1)
        DataError('in.jsonl:3: invalid JSON (and 1 other shard failed; the completed shards are kept)')
    """
    from kold_span import errors

    name, message = error
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, KoldSpanError)):
        cls = KoldSpanError
    if others:
        message += f" (and {others} other shard{'s' if others > 1 else ''} failed; the completed shards are kept)"
    return cls(message)
