"""`kold-span evaluate --gold FILE --pred FILE`: every span type and label of the gold file, scored.

With `--model DIR` instead of `--pred`, the model predicts the gold texts first, and the report adds
each task's calibration (ECE before and after its temperature and confidence map); `--curves OUT` then writes its
precision-recall curves, ROCs and thresholds tables (curves.json, PNGs with the `plots` extra).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from kold_span.cli.options import non_empty_path, positive_int


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `evaluate` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--gold', 'gold.jsonl', '--pred', 'out.jsonl'])
        >>> args.gold, args.pred, args.policy
        ('gold.jsonl', 'out.jsonl', 'semeval')
    """
    parser = subparsers.add_parser("evaluate", help="score predictions against gold examples")
    parser.add_argument("--gold", required=True, help="canonical examples JSONL")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pred", help="predictions JSONL (kold-span predict output or examples)")
    source.add_argument("--model", metavar="DIR", help="a model directory: predict the gold texts, then score, with "
                                                      "calibration (ECE) and, with --curves, the curves")
    parser.add_argument("--curves", type=non_empty_path, metavar="DIR",
                        help="with --model: write curves.json (PR curves, ROC, thresholds tables) and PNG plots here")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="with --model: windows per pass")
    parser.add_argument("--out", type=non_empty_path, help="write the scores as JSON")
    parser.add_argument("--policy", default="semeval", choices=["semeval", "kold"],
                        help="empty-gold rule of the span F1 (default: SemEval-2021 Toxic Spans)")
    parser.add_argument("--lenient", action="store_true",
                        help="warn instead of refusing malformed span offsets (left out), spans past the text's "
                             "end, predicted texts that differ from the gold text and predictions without a label "
                             "the others hold (scored as they are)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the score table; with --out, also write the scores as JSON."""
    from kold_span.cli.options import check_outputs
    from kold_span.data.atomic import write_text_atomic
    from kold_span.data.jsonl import finite_or_null, json_text
    from kold_span.evaluation.prediction_files import evaluate_files

    from kold_span.errors import ArgumentError

    if args.curves and not args.model:
        raise ArgumentError("--curves needs --model (a predictions file holds no probabilities below the spans' "
                            "threshold)")
    check_outputs({"--out": args.out}, {"--gold": args.gold, "--pred": args.pred},
                  models=[args.model] if args.model else [], folders={"--curves": args.curves})
    if args.model:
        report = evaluate_model(args)
    else:
        report = evaluate_files(Path(args.gold), Path(args.pred), policy=args.policy, lenient=args.lenient)
    print(report.table())
    if args.out:
        write_text_atomic(args.out, json_text(finite_or_null(report.scores), indent=1))
        print(f"wrote {args.out}")
    return 0


def evaluate_model(args: argparse.Namespace):
    """The model's predictions of the gold texts scored as a predictions file is, with each task's ECE before and
    after its calibration; the curves written to --curves."""
    import copy

    from kold_span.data.jsonl import read_jsonl
    from kold_span.errors import DataError
    from kold_span.evaluation.curves import calibrated, curves_report, uncalibrated, write_curves
    from kold_span.evaluation.prediction_files import EvaluationReport, evaluate_examples, prediction_fields
    from kold_span.inference.ensemble import load_predictor
    from kold_span.inference.pipeline import RunOptions

    gold = list(read_jsonl(args.gold))
    if not gold:
        raise DataError(f"{args.gold}: no gold examples to score against")
    predictor = load_predictor([args.model], RunOptions(args.batch_size))
    raw_predictor = copy.copy(predictor)  # the same network: the outputs as trained, then calibrated as saved
    raw_predictor.tasks = uncalibrated(predictor.tasks)
    raw = raw_predictor.merged_outputs([e.text for e in gold], [e.context for e in gold], args.batch_size)
    merged = calibrated(predictor.tasks, raw)
    preds = {ex.id: prediction_fields(predictor.labels_and_spans(ex.text, m), f"{args.gold}: id {ex.id}")
             for ex, m in zip(gold, merged)}
    scores = evaluate_examples(gold, preds, args.policy)
    curves = curves_report(predictor.decoding, gold, merged, raw)
    for name, entry in curves.items():  # ECE per task, in the table (the bins stated once in the key)
        task = name.split(":")[0]
        scores[f"calibration/{task}/ece_{entry['ece']['bins']}_bins_before"] = entry["ece"]["before"]
        scores[f"calibration/{task}/ece_{entry['ece']['bins']}_bins_after"] = entry["ece"]["after"]
        for stat, value in entry["ece"]["floor_after"].items():  # what a perfectly calibrated model would get
            scores[f"calibration/{task}/ece_{entry['ece']['bins']}_bins_floor_{stat}"] = value
        scores[f"calibration/{task}/temperature"] = entry["ece"]["temperature"]
        scores[f"calibration/{task}/confidence_map_knots"] = entry["ece"]["confidence_map_knots"]
    if args.curves:
        for path in write_curves(curves, args.curves):
            print(f"wrote {path}")
    return EvaluationReport(scores)
