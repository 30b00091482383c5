"""`kold-span thresholds --model DIR --dev FILE --set TASK[:LABEL] TARGET ... --out DIR`: a model's decision policy.

Each `--set` names a task (and, for a sequence task that is not true/false, the label cut on) and
its targets: `precision=P` or `f1` choose the `remove` threshold, `recall=R` or `flagged=S` (the
share of texts a reviewer sees) the `review` threshold. Each is chosen on the gold examples of
`--dev` (`evaluation.operating_points`), with a seeded bootstrap interval of the precision and
recall it promises, and written into the model's config.json: a new model directory (`--out`), or
the given one (`--in-place`), signed anew. docs/THRESHOLDS.md says how to read and choose them.
"""
from __future__ import annotations

import argparse

from kold_span.cli.options import non_empty_path, positive_int, seed_number


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `thresholds` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--model', 'm', '--dev', 'dev.jsonl', '--set', 'OFF:true', 'precision=0.95',
        ...                           '--set', 'OFF_span', 'f1', '--out', 'm2'])
        >>> args.set, args.samples, args.seed
        ([['OFF:true', 'precision=0.95'], ['OFF_span', 'f1']], 1000, 0)
    """
    parser = subparsers.add_parser("thresholds", help="choose a model's allow / review / remove thresholds on gold "
                                                      "examples and save them with it")
    parser.add_argument("--model", required=True, metavar="DIR", help="a model directory")
    parser.add_argument("--dev", required=True, metavar="FILE", help="gold examples (canonical JSONL), not trained on")
    parser.add_argument("--set", required=True, action="append", nargs="+", metavar="TASK[:LABEL] TARGET",
                        help="a task and its targets: precision=P or f1 (remove), recall=R or flagged=S (review), "
                             "e.g. --set OFF:true precision=0.95 recall=0.9 (repeatable)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=non_empty_path, metavar="DIR", help="write the model with its policy here")
    where.add_argument("--in-place", action="store_true", help="replace --model's directory (signed anew)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out that is no model")
    parser.add_argument("--samples", type=positive_int, default=1000, help="bootstrap samples (default 1000)")
    parser.add_argument("--seed", type=seed_number, default=0, help="the bootstrap's seed (default 0)")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="texts the model reads at once while scoring --dev (default 32)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Choose the thresholds, print what each promises, write the model directory."""
    import os
    from pathlib import Path

    from kold_span.cli.options import check_outputs
    from kold_span.data.atomic import check_outside, check_replaceable
    from kold_span.data.jsonl import read_jsonl
    from kold_span.errors import DataError, OutputTargetError
    from kold_span.evaluation.operating_points import Target, decide
    from kold_span.inference.predictor import Predictor
    from kold_span.models.manifest import file_digest
    from kold_span.models.model_dir import CONFIG_NAME, MODEL_DIRECTORY, is_model_dir, read_model_config, rewrite_config

    targets = [target for words in args.set for target in Target.parse(words)]
    out = Path(args.model) if args.in_place else Path(args.out)
    if not args.in_place:
        # a model directory at --out (an earlier output) is replaced whole, never written inside: outside --model
        # is all it must be; anything else non-empty is refused here, before the model runs, unless --overwrite
        earlier = is_model_dir(out)
        check_outputs({}, {"--dev": args.dev}, models=[args.model], folders={"--out": None if earlier else out})
        if Path(os.path.realpath(out)) == Path(os.path.realpath(args.model)):
            raise OutputTargetError(f"--out {args.out} is --model itself: to write the policy into that model, "
                                    "pass --in-place instead of --out")
        check_outside({"--out": out}, [args.model])
        check_replaceable(out, is_model_dir, MODEL_DIRECTORY, args.overwrite)
    examples = list(read_jsonl(args.dev))
    if not examples:
        raise DataError(f"{args.dev}: no gold examples to choose thresholds on")
    predictor = Predictor.from_pretrained(args.model)
    try:
        policies = decide(predictor, examples, targets, Path(args.dev).name, file_digest(Path(args.dev)),
                          args.batch_size, args.samples, args.seed)
    except DataError as err:  # a gold the model cannot read names its example: say which file it is in
        raise DataError(f"{args.dev}: {err}") from None
    config = read_model_config(args.model)
    for task in config["tasks"]:
        if task["name"] in policies:
            task["decision"] = policies[task["name"]]
    for name, policy in policies.items():
        for band in ("remove", "review"):
            chosen = policy.get(band)
            if chosen and any(t.task == name for t in targets):
                print(describe(name, policy.get("label"), band, chosen))
    rewrite_config(args.model, out, config, overwrite=args.overwrite or args.in_place)
    print(f"wrote {out / CONFIG_NAME} (manifest signed anew)")
    return 0


def describe(task: str, label, band: str, chosen: dict) -> str:
    """One line a moderator reads: the band, its threshold and what it promised.

    Example:
        >>> describe("OFF", "true", "remove", {"threshold": 0.8, "target": "precision=0.95", "precision": 0.96,
        ...     "recall": 0.5, "flagged": 0.1, "precision_interval": [0.9, 1.0], "recall_interval": [0.4, 0.6],
        ...     "examples": 200, "bootstrap": {"samples": 1000, "seed": 0, "level": 0.95}})
        'OFF:true remove at 0.8 (precision=0.95): precision 0.960 [0.900, 1.000], recall 0.500 [0.400, 0.600], flags 10.0% of 200 texts (95% intervals, 1000 bootstrap samples, seed 0)'
    """
    name = f"{task}:{label}" if label else task
    boot = chosen["bootstrap"]
    precision = "n/a" if chosen["precision"] is None else f"{chosen['precision']:.3f}"
    p_low, p_high = chosen["precision_interval"]
    r_low, r_high = chosen["recall_interval"]
    return (f"{name} {band} at {chosen['threshold']:g} ({chosen['target']}): precision {precision} "
            f"[{p_low:.3f}, {p_high:.3f}], recall {chosen['recall']:.3f} [{r_low:.3f}, {r_high:.3f}], "
            f"flags {100 * chosen['flagged']:.1f}% of {chosen['examples']} texts "
            f"({round(100 * boot['level'])}% intervals, {boot['samples']} bootstrap samples, seed {boot['seed']})")
