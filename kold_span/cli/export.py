"""`kold-span export --model DIR --format onnx [--quantize none|int8] [--calibrate FILE]`: an ONNX graph of the model.

The graph (encoder and every head) is written into the model directory and named in its
config.json; `predict`, `serve`, the spaCy component and `--engine ray` then run it with
`--runtime onnx` (or the default `auto`). docs/PREDICTING.md says when to use which.
"""
from __future__ import annotations

import argparse

from kold_span.cli.options import positive_int
from kold_span.config.choices import Quantization


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `export` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--model', 'm', '--format', 'onnx', '--quantize', 'int8'])
        >>> args.model, args.quantize, args.calibrate
        ('m', 'int8', None)
    """
    parser = subparsers.add_parser("export", help="write a model's network as an ONNX graph (float32 or int8) "
                                                  "into its directory, for --runtime onnx")
    parser.add_argument("--model", required=True, metavar="DIR", help="a model directory (checkpoints/<exp>/<run>/model)")
    parser.add_argument("--format", required=True, choices=("onnx",), help="the graph's format")
    parser.add_argument("--quantize", choices=Quantization.values(), default="none",
                        help="none: float32, the same predictions as torch; int8: int8 weights per channel, "
                             "activations quantized per batch (dynamic), or at scales from --calibrate (static)")
    parser.add_argument("--calibrate", metavar="FILE",
                        help="with --quantize int8: texts (any file predict reads, e.g. the training comments) "
                             "whose activation ranges fix the int8 scales (static int8)")
    parser.add_argument("--calibration-texts", type=positive_int, default=256,
                        help="how many of --calibrate's first texts to run (default 256)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Export the graph and print where it went."""
    from kold_span.errors import needs_extra
    from kold_span.inference.export import export_onnx

    with needs_extra("onnx"):  # torch's exporter needs onnx, the check and int8 ONNX Runtime: refused before both
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    entry = export_onnx(args.model, quantize=args.quantize, calibrate=args.calibrate,
                        calibration_texts=args.calibration_texts)
    print(f"wrote {entry.file} ({entry.precision}) into {args.model}; predict with it: "
          f"kold-span predict --model {args.model} --runtime onnx ...")
    return 0
