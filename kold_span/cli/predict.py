"""`kold-span predict --model DIR --input FILE --output FILE`: labels and spans of every input row, in order.

The output files are written whole or not at all; `--resume` continues a run that was killed or failed.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kold_span.errors import KoldSpanError


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `predict` subcommand and its options.

    Example:
        >>> import argparse
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--model', 'a/model', 'b/model', '--input', 'comments.txt', '--output', 'out.jsonl'])
        >>> args.model, args.batch_size
        (['a/model', 'b/model'], 32)
    """
    parser = subparsers.add_parser("predict", help="label comments and mark their spans")
    parser.add_argument("--model", required=True, nargs="+", metavar="DIR",
                        help="a model directory (checkpoints/<exp>/<run>/model); several make an ensemble "
                             "that averages their probabilities (same tasks; span tasks: same tokenizer)")
    parser.add_argument("--input", required=True, help=".txt (one comment per line), .jsonl, .csv or .tsv")
    parser.add_argument("--output", required=True, help="JSONL, one prediction per input row, in input order")
    parser.add_argument("--html", help="also write an HTML page with the spans highlighted")
    parser.add_argument("--resume", action="store_true",
                        help="continue the unfinished output of a killed or failed run (OUTPUT.partial), with the "
                             "same input and options; the result equals an uninterrupted run")
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
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def run(args: argparse.Namespace) -> int:
    """Predict every row of the input into the output JSONL (and HTML); print how many, and any skipped rows."""
    from tqdm import tqdm

    from kold_span.data.atomic import add_note, partial_path
    from kold_span.data.perspectives import parse_perspective
    from kold_span.inference.inputs import bad_rows, iter_inputs
    from kold_span.inference.outputs import UnfinishedOutputError, write_predictions
    from kold_span.inference.predictor import Predictor

    bad = bad_rows(Path(args.input), skip=args.skip_bad)
    # Checked before the model loads and before any output is opened: a missing input or an unknown
    # suffix costs nothing and touches nothing.
    examples = iter_inputs(Path(args.input), args.text_column, args.context_column, args.id_column,
                           bad=bad, quoting=args.quoting)
    perspective = parse_perspective(args.perspective) if args.perspective else None
    if len(args.model) > 1:
        from kold_span.inference.ensemble import Ensemble
        predictor: Predictor = Ensemble.from_pretrained(args.model, device=args.device)
    else:
        predictor = Predictor.from_pretrained(args.model[0], device=args.device)
    output, html = Path(args.output), Path(args.html) if args.html else None
    quiet = args.quiet or not logging.getLogger("kold_span").isEnabledFor(logging.INFO)
    try:
        with tqdm(desc="predict", unit=" comments", disable=quiet) as bar:
            done = write_predictions(predictor, examples, output, html=html, batch_size=args.batch_size,
                                     perspective=perspective, resume=args.resume, on_row=lambda: bar.update(1))
    except (KeyboardInterrupt, KoldSpanError, OSError) as err:
        if partial_path(output).exists() and not isinstance(err, UnfinishedOutputError):
            add_note(err, "kold-span predict --resume with the same input and options continues from it")
        raise
    kept = f" ({done.kept} kept from the unfinished run)" if done.kept else ""
    print(f"wrote {done.rows} predictions{kept} to {output}" + (f" and {html}" if html else ""))
    if bad.report.count:
        print(bad.report.summary(limit=None), file=sys.stderr)
    return 0
