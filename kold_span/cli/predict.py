"""`kold-span predict --model DIR --input FILE --output FILE`: labels and spans of every input row, in order.

The output files are written whole or not at all; `--resume` continues a run that was killed or failed.
`--engine ray` spreads input shards over a Ray cluster, one output shard each (docs/SCALE.md).
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import IO, Iterable

from kold_span.cli.options import (add_repeatable, non_empty_path, non_negative_float, positive_int,
                                   sigterm_as_interrupt)
from kold_span.config.choices import OutputFormat, Precision, Runtime
from kold_span.config.limits import STDIN_BYTES, bounded_lines
from kold_span.errors import ArgumentError, DataError, KoldSpanError, OutputInUseError, UnfinishedOutputError


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `predict` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--model', 'a/model', 'b/model', '--input', 'comments.txt', '--output', 'out.jsonl'])
        >>> args.model, args.batch_size
        (['a/model', 'b/model'], 32)
    """
    parser = subparsers.add_parser("predict", help="label comments and mark their spans")
    add_repeatable(parser, "--model", "DIR", "a model directory (checkpoints/<exp>/<run>/model); several make an "
                   "ensemble that averages their probabilities (same tasks; span tasks: same tokenizer)", required=True)
    parser.add_argument("--input", required=True,
                        help=".txt (one comment per line), .jsonl, .csv, .tsv or .parquet; - reads standard input "
                             "(with --format); with --engine ray, the shards: a path or a glob such as "
                             "'shards/*.jsonl' (quoted)")
    parser.add_argument("--format", choices=("txt", "jsonl", "csv", "tsv", "parquet"),
                        help="the format of --input - (standard input), which has no name to tell it")
    parser.add_argument("--output", required=True, type=non_empty_path,
                        help="JSONL (Parquet for a name ending in .parquet; not .csv, .tsv or .txt), one prediction "
                             "per input row, in input order; with --engine ray, a folder that gets one output shard "
                             "per input shard")
    parser.add_argument("--html", type=non_empty_path, help="also write an HTML page with the spans highlighted")
    parser.add_argument("--resume", action="store_true",
                        help="continue the unfinished output of a killed or failed run (OUTPUT.partial), with the "
                             "same input and options; the result equals an uninterrupted run (with --engine ray, "
                             "complete output shards are always skipped)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--text-column", help="column holding the comment (default: comment or text)")
    parser.add_argument("--context-column", help="column holding the context (default: title or context)")
    parser.add_argument("--id-column", help="column holding the id (default: id or guid; else the line number)")
    parser.add_argument("--skip-bad", action="store_true", help="skip bad rows (each one is reported)")
    parser.add_argument("--quoting", choices=("csv", "none"), default="csv",
                        help=".csv/.tsv: 'csv' reads quoted fields as CSV writers write them (a stray quote is an "
                             "error); 'none' takes every character as it stands, for text with bare quotes")
    parser.add_argument("--perspective", metavar="TRAITS",
                        help='annotator-conditioned models: predict for an annotator, e.g. "gender=Female,age=23"')
    parser.add_argument("--device", default="cpu", help="where the network runs (local engine): cpu, cuda, cuda:1")
    parser.add_argument("--precision", choices=Precision.values(), default="auto",
                        help="the network's precision: auto is bf16 on a GPU and fp32 on any CPU; bf16 on a CPU "
                             "with bf16 instructions is faster but changes some labels and spans "
                             "(docs/PREDICTING.md)")
    parser.add_argument("--runtime", choices=Runtime.values(), default="auto",
                        help="what runs the network: torch, onnx (the graph `kold-span export` wrote into the model "
                             "directory, on the CPU) or auto (that graph when there is one, --device is cpu and "
                             "--precision auto; else torch); see docs/PREDICTING.md")
    ray = parser.add_argument_group("--engine ray: shards over a Ray cluster (docs/SCALE.md)")
    ray.add_argument("--engine", choices=("local", "ray"), default="local",
                     help="local: this process; ray: a pool of Ray workers, one output shard per input shard")
    ray.add_argument("--workers", type=positive_int, default=1, help="Ray workers, each holding one loaded model")
    ray.add_argument("--cpus-per-worker", type=positive_int, default=1, help="CPUs (and torch threads) per worker")
    ray.add_argument("--gpus-per-worker", type=non_negative_float, default=0.0,
                     help="GPUs per worker (0.25: four workers share a GPU); above 0 the workers run on CUDA")
    ray.add_argument("--address", help="join this Ray cluster (auto, or ray://HEAD:10001); "
                                       "without it a local one starts on this machine")
    ray.add_argument("--shard-format", choices=OutputFormat.values(), default="jsonl",
                     help="the output shards' format")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="skip checking the model's files against its manifest (SHA-256), for speed")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def run(args: argparse.Namespace) -> int:
    """Predict every row of the input into the output (and HTML); print how many, and any skipped rows."""
    if args.format and args.input != "-":
        raise ArgumentError("--format is for --input - (standard input); a file's name ending tells its format")
    if args.engine == "ray":
        if args.input == "-":
            raise ArgumentError("--input - (standard input) is for the local engine; --engine ray reads shard files")
        return run_on_ray(args)
    if args.input == "-":
        if not args.format:
            raise ArgumentError("--input - (standard input) needs --format: txt, jsonl, csv, tsv or parquet")
        # SIGTERM as Ctrl-C from the start: a stream stopped while it is spooled takes its spool with it.
        with sigterm_as_interrupt(), tempfile.TemporaryDirectory(prefix="kold-span-stdin-") as folder:
            # Spooled to a file: the rows are read as any input's are, in flat memory, and a bad row is named
            # by its line (of "stdin.FORMAT").
            source = Path(folder) / f"stdin.{args.format}"
            with source.open("wb") as spool:
                if args.format == "parquet":  # binary: no lines to bound, read in pieces
                    pieces = iter(lambda: sys.stdin.buffer.read(1 << 20), b"")
                else:  # a line past the bound (an endless stream with no newline) stops here, not on a full disk
                    pieces = bounded_lines(sys.stdin.buffer, "standard input", DataError)
                spool_bounded(pieces, spool)
            return _run_local(args, source)
    return _run_local(args, Path(args.input))


def spool_bounded(pieces: Iterable[bytes], spool: IO[bytes]) -> None:
    """Write `pieces` of standard input to `spool`, stopping with a `DataError` once they pass the stream bound
    (`config.limits.STDIN_BYTES`): an endless stream of lines would otherwise fill the disk and never be predicted."""
    bound, written = STDIN_BYTES.bytes(), 0
    for piece in pieces:
        written += len(piece)
        if written > bound:
            raise DataError(STDIN_BYTES.exceeded("standard input", "a stream") + "; predict reads standard input to "
                            "its end before it predicts: give an endless stream to it in parts, or to serve")
        spool.write(piece)


def _run_local(args: argparse.Namespace, source: Path) -> int:
    """`run` on the local engine, the input being `source`."""
    from tqdm import tqdm

    from kold_span.cli.options import check_outputs
    from kold_span.data.atomic import add_note, partial_path
    from kold_span.inference.ensemble import load_predictor
    from kold_span.inference.outputs import output_kind, write_predictions

    # Checked before the model loads and before any output is opened: an output that is the input, a
    # missing input or an unknown suffix costs nothing and touches nothing.
    check_outputs({"--output": args.output, "--html": args.html}, {"--input": source}, models=args.model)
    output_kind(args.output)  # a name predict cannot write (out.csv) is refused before the model loads
    read = read_options(args)
    examples, report = read.open(source)
    output, html = Path(args.output), Path(args.html) if args.html else None
    options = run_options(args)
    predictor = load_predictor(args.model, options)
    quiet = args.quiet or not logging.getLogger("kold_span").isEnabledFor(logging.INFO)
    try:
        with sigterm_as_interrupt(), tqdm(desc="predict", unit=" comments", disable=quiet) as bar:
            done = write_predictions(predictor, examples, output, html=html, options=options, resume=args.resume,
                                     on_row=lambda: bar.update(1), read=read)
    except (KeyboardInterrupt, KoldSpanError, OSError) as err:
        if partial_path(output).exists() and not isinstance(err, (UnfinishedOutputError, OutputInUseError)):
            add_note(err, "kold-span predict --resume with the same input and options continues from it")
        raise
    kept = f" ({done.kept} kept from the unfinished run)" if done.kept else ""
    print(f"wrote {done.rows} predictions{kept} to {output}" + (f" and {html}" if html else ""))
    if report.count:
        print(report.summary(limit=None), file=sys.stderr)
    return 0


def run_options(args: argparse.Namespace):
    """The model's and the pipeline's options of the command line (`RunOptions`)."""
    from kold_span.data.perspectives import parse_perspective
    from kold_span.inference.pipeline import RunOptions

    return RunOptions(args.batch_size, parse_perspective(args.perspective) if args.perspective else None, args.device,
                      args.precision, args.runtime, args.verify)


def read_options(args: argparse.Namespace):
    """The input-reading options of the command line (`ReadOptions`)."""
    from kold_span.inference.inputs import ReadOptions

    return ReadOptions(text_column=args.text_column, context_column=args.context_column, id_column=args.id_column,
                       quoting=args.quoting, skip_bad=args.skip_bad)


def run_on_ray(args: argparse.Namespace) -> int:
    """`--engine ray`: every input shard into its output shard on a pool of Ray workers."""
    from kold_span.cli.options import check_outputs
    from kold_span.inference.ray_engine import RayOptions, predict_shards, shard_paths

    if args.html:
        raise ArgumentError("--html is for the local engine; with --engine ray, render a shard's output afterwards")
    check_outputs({}, models=args.model, folders={"--output": args.output})
    options = RayOptions(workers=args.workers, cpus_per_worker=args.cpus_per_worker,
                         gpus_per_worker=args.gpus_per_worker, address=args.address,
                         shard_format=OutputFormat(args.shard_format), run=run_options(args),
                         read=read_options(args), progress=not args.quiet)
    summary = predict_shards(args.model, shard_paths([args.input]), Path(args.output), options)
    print(f"wrote {summary.predictions} predictions to {summary.done} shard(s) in {args.output}"
          + (f"; {summary.skipped} shard(s) already done" if summary.skipped else ""))
    if summary.bad_rows:
        print(f"predict: skipped {len(summary.bad_rows)} bad record(s):\n" + "\n".join(
            f"  {reason}" for reason in summary.bad_rows), file=sys.stderr)
    return 0
