"""`kold-span predict --model DIR --input FILE --output FILE`: labels and spans of every input row, in order."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import deque
from pathlib import Path


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

    from kold_span.config.choices import TaskKind
    from kold_span.data.perspectives import parse_perspective
    from kold_span.inference.html import HtmlWriter
    from kold_span.inference.inputs import bad_rows, iter_inputs
    from kold_span.inference.predictor import Predictor

    if len(args.model) > 1:
        from kold_span.inference.ensemble import Ensemble
        predictor: Predictor = Ensemble.from_pretrained(args.model, device=args.device)
    else:
        predictor = Predictor.from_pretrained(args.model[0], device=args.device)
    bad = bad_rows(Path(args.input), skip=args.skip_bad)
    examples = iter_inputs(Path(args.input), args.text_column, args.context_column, args.id_column,
                           bad=bad, quoting=args.quoting)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    span_types = list(dict.fromkeys(task.source for task in predictor.tasks if task.kind is TaskKind.SPAN))
    html = HtmlWriter(Path(args.html), span_types) if args.html else None
    pending: deque = deque()  # examples read but not yet written; predictions come back in order
    count = 0
    quiet = args.quiet or not logging.getLogger("kold_span").isEnabledFor(logging.INFO)
    with output.open("w", encoding="utf-8") as out, tqdm(desc="predict", unit=" comments", disable=quiet) as bar:
        def remember():
            for ex in examples:
                pending.append(ex)  # only the current chunk is held (see Predictor.predict_examples)
                yield ex

        perspective = parse_perspective(args.perspective) if args.perspective else None
        for prediction in predictor.predict_examples(remember(), args.batch_size, perspective):
            example = pending.popleft()
            out.write(json.dumps({"id": prediction["id"], "text": example.text, **{
                k: v for k, v in prediction.items() if k != "id"}}, ensure_ascii=False) + "\n")
            if html:
                html.add(example, prediction)
            count += 1
            bar.update(1)
    if html:
        html.close()
    print(f"wrote {count} predictions to {output}" + (f" and {args.html}" if html else ""))
    if bad.report.count:
        print(bad.report.summary(limit=None), file=sys.stderr)
    return 0
