"""`kold-span train CONFIG`: one training run; prints its test metrics and model directory.

CONFIG is a YAML file or the name of a shipped experiment (`demo`, `quality/toxic_spans_minilm`: `kold-span configs`).
"""
from __future__ import annotations

import argparse

from kold_span.cli.options import add_config_options


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `train` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['configs/experiment/demo.yaml', '--set', 'run=demo', '--resume'])
        >>> args.set, args.resume
        (['run=demo'], True)
    """
    parser = subparsers.add_parser("train", help="train a model from a YAML experiment config")
    add_config_options(parser, "configs/experiment/demo.yaml, or a shipped config's name (kold-span configs)",
                       "trainer.max_epochs=3")
    parser.add_argument("--resume", action="store_true", help="continue from the run's last checkpoint")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the run's model/ folder even when it holds something else than a model, "
                             "and start over a run left unfinished (without it both are refused before training)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Train; print the test metrics (when the run has a test split) and where the model went."""
    from kold_span.config.loading import load_config
    from kold_span.config.shipped import experiment_path
    from kold_span.evaluation.task_scores import format_table
    from kold_span.training.run import train

    config = load_config(experiment_path(args.config), args.set or [])
    # -q: no progress bar and no model summary either (Lightning prints those itself, past the log)
    result = train(config, resume=args.resume, overwrite=args.overwrite, quiet=getattr(args, "log_quiet", False))
    if result.model_dir is None:  # not the main process of a distributed run
        return 0
    if "test" in result.metrics:
        print(f"\nTest metrics ({result.metrics['sizes']['test']} examples) — {result.run_dir / 'metrics.json'}")
        print(format_table(result.metrics["test"]))
    print(f"Model: {result.model_dir}")
    return 0
