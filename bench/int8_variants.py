"""Ways to make the int8 ONNX graph, side by side in one run: which is fastest, and how far each moves the output.

One trained model directory's network is traced once (as `kold-span export` does) and made into
each variant below; every variant then runs the same batches of the run's dev windows (collated
as `predict` feeds its network), passes interleaved so that a change in the machine's load falls
on every row alike. Only the network is timed (it is 95-98% of `predict` on a CPU:
docs/benchmarks/throughput.md); torch float32 and bf16 are the reference rows.

    OMP_NUM_THREADS=1 python bench/int8_variants.py checkpoints/ts-model --dev RUN_DIR --section int8-variants-minilm-1t

Variants: float32 as exported; float32 fused by onnxruntime's transformer optimizer (LayerNorm,
SkipLayerNorm, GELU, attention where it matches); dynamic int8 per channel (the export before this
bench), per tensor, with reduce_range, of the fused graph, of a graph traced with eager attention
and fused (one Attention node per layer, so that attention's products are quantized too); static
int8 (calibrated on the first 256 dev windows' batches), QDQ and QOperator. Each also with the
session's graph optimization at "extended" instead of "all" where `--levels` asks.

Results: bench/results/<section>.json and a section of docs/benchmarks/throughput.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from scipy.special import softmax

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import isa_flags, machine_line, run_splits, save_results, write_section  # noqa: E402

from kold_span.inference import export  # noqa: E402
from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.inference.runtimes import INPUT_NAMES, autocast, cpu_has_bf16  # noqa: E402

LABELS = {
    "torch-fp32": "torch float32 (today)",
    "torch-bf16": "torch bf16 autocast",
    "ort-fp32": "ORT float32, as exported",
    "ort-fp32-fused": "ORT float32, transformer optimizer",
    "int8-dyn-pc": "dynamic int8, per channel, embeddings too (the export before)",
    "int8-dyn-pc-pre": "dynamic int8, per channel, quant_pre_process, embeddings too",
    "int8-dyn-pt": "dynamic int8, per tensor",
    "int8-dyn-pc-rr": "dynamic int8, per channel, reduce_range",
    "int8-dyn-matmul": "dynamic int8, MatMul only, per channel (the export now)",
    "int8-dyn-fused-pc": "dynamic int8 of the fused graph, per channel",
    "int8-dyn-fused-pt": "dynamic int8 of the fused graph, per tensor",
    "int8-dyn-eager-fused-pc": "dynamic int8, eager attention fused (QAttention), per channel",
    "int8-dyn-eager-fused-pt": "dynamic int8, eager attention fused (QAttention), per tensor",
    "int8-static-qdq": "static int8, QDQ, MatMul, per channel",
    "int8-static-qop": "static int8, QOperator, MatMul, per channel",
}


def feeds(batch: tuple, names: list[str]) -> dict[str, np.ndarray]:
    return {name: t.numpy() for name, t in zip(INPUT_NAMES, batch) if name in names}


def fuse(source: Path, target: Path, config) -> Path:
    """onnxruntime's transformer optimizer for a BERT-like graph (heads and hidden size from the encoder)."""
    from onnxruntime.transformers.optimizer import optimize_model

    model = optimize_model(str(source), model_type="bert", num_heads=config.num_attention_heads,
                           hidden_size=config.hidden_size, opt_level=1)
    model.save_model_to_file(str(target))
    counts = Counter(node.op_type for node in model.model.graph.node)
    print(f"fused {target.name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())
                                               if k in ("Attention", "SkipLayerNormalization", "LayerNormalization",
                                                        "Gelu", "BiasGelu", "FastGelu", "EmbedLayerNormalization",
                                                        "MatMul", "Softmax")), flush=True)
    return target


def dynamic(source: Path, target: Path, per_channel: bool = True, reduce_range: bool = False,
            ops: list[str] | None = None) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    import onnx

    # A fused graph has contrib ops (Attention, SkipLayerNormalization) whose outputs ONNX's shape inference
    # cannot type: they are float32.
    quantize_dynamic(str(source), str(target), per_channel=per_channel, reduce_range=reduce_range,
                     weight_type=QuantType.QInt8, op_types_to_quantize=ops,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return target


def static(source: Path, target: Path, calibration: list[dict], fmt: str) -> Path:
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(calibration)

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(source), str(target), Reader(),
                    quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                    calibrate_method=CalibrationMethod.MinMax)
    return target


def session(path: Path, threads: int, level: str):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                                        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}[level]
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def probabilities(logits: list[np.ndarray]) -> np.ndarray:
    """Every output's softmax over its last axis, flattened into one vector (to compare runtimes)."""
    return np.concatenate([softmax(x, axis=-1).ravel() for x in logits])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="a model directory (a copy: nothing is written into it)")
    parser.add_argument("--dev", type=Path, required=True, help="the run folder whose dev side gives the texts")
    parser.add_argument("--texts", type=int, default=96, help="how many dev texts to run (default 96)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default=",".join(k for k in LABELS if not k.startswith("torch")),
                        help="comma-separated variants (default: all)")
    parser.add_argument("--levels", default="all", help="session graph optimization levels: all, extended or both")
    parser.add_argument("--section", required=True)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    dev = run_splits(args.dev)[1]["dev"][: args.texts]
    predictor = Predictor.from_pretrained(args.model, precision="fp32", runtime="torch")
    prepared = predictor.prepare(predictor.encode([e.text for e in dev], [e.context for e in dev]), args.batch_size)
    batches = [tuple(inputs) for _rows, inputs in prepared.batches]  # what `predict` feeds its network
    windows = sum(int(b[0].shape[0]) for b in batches)
    lengths = sorted({int(b[0].shape[1]) for b in batches})
    encoder = predictor.model.encoder.config
    levels = ["all", "extended"] if args.levels == "both" else [args.levels]

    runners: dict[str, Callable[[tuple], list[np.ndarray]]] = {}

    def torch_runner(precision: str):
        def run(batch):
            with torch.inference_mode(), autocast(torch.device("cpu"), precision):
                out = predictor.model(*batch)
            return [out[t.name].float().numpy() for t in predictor.tasks]
        return run

    runners["torch-fp32"] = torch_runner("fp32")
    if cpu_has_bf16():
        runners["torch-bf16"] = torch_runner("bf16")
    sizes: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="int8-variants-") as folder:
        tmp = Path(folder)
        fp32 = tmp / "fp32.onnx"
        export.trace(predictor, fp32)
        pre = export.preprocess(fp32, tmp / "pre.onnx")
        calibration = [feeds(b, list(INPUT_NAMES)) for b in batches]
        graphs: dict[str, Callable[[], Path]] = {
            "ort-fp32": lambda: fp32,
            "ort-fp32-fused": lambda: fuse(fp32, tmp / "fused.onnx", encoder),
            "int8-dyn-pc": lambda: dynamic(fp32, tmp / "dyn-pc.onnx"),
            "int8-dyn-pc-pre": lambda: dynamic(pre, tmp / "dyn-pc-pre.onnx"),
            "int8-dyn-pt": lambda: dynamic(pre, tmp / "dyn-pt.onnx", per_channel=False),
            "int8-dyn-pc-rr": lambda: dynamic(pre, tmp / "dyn-pc-rr.onnx", reduce_range=True),
            "int8-dyn-matmul": lambda: dynamic(pre, tmp / "dyn-mm.onnx", ops=["MatMul"]),
            "int8-dyn-fused-pc": lambda: dynamic(fuse(fp32, tmp / "fused2.onnx", encoder), tmp / "dyn-f-pc.onnx"),
            "int8-dyn-fused-pt": lambda: dynamic(fuse(fp32, tmp / "fused3.onnx", encoder), tmp / "dyn-f-pt.onnx",
                                                 per_channel=False),
            "int8-dyn-eager-fused-pc": lambda: dynamic(eager_fused(predictor, tmp, encoder), tmp / "dyn-ef-pc.onnx"),
            "int8-dyn-eager-fused-pt": lambda: dynamic(eager_fused(predictor, tmp, encoder), tmp / "dyn-ef-pt.onnx",
                                                       per_channel=False),
            "int8-static-qdq": lambda: static(pre, tmp / "st-qdq.onnx", calibration, "qdq"),
            "int8-static-qop": lambda: static(pre, tmp / "st-qop.onnx", calibration, "qop"),
        }
        names = [t.name for t in predictor.tasks]
        for name in args.variants.split(","):
            try:
                path = graphs[name]()
            except Exception as err:  # a variant the tools cannot make is a row that says so
                print(f"{name}: cannot be made: {type(err).__name__}: {err}", flush=True)
                continue
            sizes[name] = path.stat().st_size / 2**20
            for level in levels:
                key = name if len(levels) == 1 else f"{name}@{level}"
                s = session(path, threads, level)
                inputs = [i.name for i in s.get_inputs()]
                runners[key] = (lambda s, inputs: lambda b: s.run(names, feeds(b, inputs)))(s, inputs)

        ref_p = np.concatenate([probabilities(runners["torch-fp32"](b)) for b in batches])
        for run in runners.values():  # warm-up
            run(batches[0])
        load = [os.getloadavg()]
        passes: dict[str, list[float]] = {k: [] for k in runners}
        for _ in range(args.repeats):
            for key, run in runners.items():
                start = time.perf_counter()
                for b in batches:
                    run(b)
                passes[key].append(time.perf_counter() - start)
        load.append(os.getloadavg())
        rows = {}
        for key, run in runners.items():
            got = np.concatenate([probabilities(run(b)) for b in batches])
            seconds = statistics.median(passes[key])
            rows[key] = {"s": round(seconds, 3), "windows_per_s": round(windows / seconds, 1),
                         "passes_s": [round(p, 3) for p in passes[key]],
                         "mean_abs_dp": float(np.abs(got - ref_p).mean()), "max_abs_dp": float(np.abs(got - ref_p).max()),
                         "mb": round(sizes.get(key.split("@")[0], 0.0), 1)}
    base = rows["torch-fp32"]["windows_per_s"]
    for row in rows.values():
        row["speedup"] = round(row["windows_per_s"] / base, 2)
    result = {"model": str(args.model), "dev": str(args.dev), "texts": len(dev), "windows": windows,
              "lengths": lengths, "batch_size": args.batch_size, "repeats": args.repeats, "threads": threads,
              "encoder": {"layers": encoder.num_hidden_layers, "hidden": encoder.hidden_size},
              "load_average": [[round(x, 2) for x in la] for la in load], "isa": isa_flags(),
              "machine": machine_line(), "versions": export._versions(), "rows": rows}
    save_results(args.section, result, ascii_only=True)
    body = render(result, f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '')} python bench/int8_variants.py "
                  + " ".join(argv if argv is not None else sys.argv[1:]))
    print(body)
    if not args.no_docs:
        write_section(args.section, body)
    return 0


def eager_fused(predictor: Predictor, tmp: Path, encoder) -> Path:
    """The network traced with eager attention (matchable by the optimizer's attention fusion), then fused."""
    target = tmp / "eager.onnx"
    if not target.exists():
        model = predictor.model.encoder
        before = model.config._attn_implementation
        model.config._attn_implementation = "eager"
        try:
            export.trace(predictor, target)
        finally:
            model.config._attn_implementation = before
    return fuse(target, tmp / f"eager-fused-{len(list(tmp.iterdir()))}.onnx", encoder)


def render(r: dict[str, Any], command: str) -> str:
    """The docs section: conditions and one row per variant.

    Example:
        >>> row = {"s": 2.0, "windows_per_s": 50.0, "speedup": 1.0, "mean_abs_dp": 0.0, "max_abs_dp": 0.0,
        ...        "mb": 0.0, "passes_s": [2.0]}
        >>> r = {"model": "m", "dev": "d", "texts": 9, "windows": 10, "lengths": [64], "batch_size": 32, "repeats": 1,
        ...      "threads": 1, "encoder": {"layers": 6, "hidden": 384}, "load_average": [[1, 1, 1], [2, 1, 1]],
        ...      "isa": "avx2", "machine": "m", "versions": "v", "rows": {"torch-fp32": row}}
        >>> render(r, "cmd").splitlines()[-1]
        '| torch float32 (today) | 2.0 | 50.0 | **1.0×** | 0 / 0 | — | 2.0 |'
    """
    def label(key: str) -> str:
        name, _, level = key.partition("@")
        return LABELS[name] + (f" (session level {level})" if level else "")

    table = "\n".join(
        f"| {label(k)} | {row['s']} | {row['windows_per_s']} | **{row['speedup']}×** | "
        f"{row['mean_abs_dp']:.2g} / {row['max_abs_dp']:.2g} | {row['mb'] or '—'} | "
        f"{' '.join(str(p) for p in row['passes_s'])} |" for k, row in r["rows"].items())
    before, after = r["load_average"][0], r["load_average"][-1]
    return f"""## int8 variants: {r['encoder']['layers']} layers, hidden {r['encoder']['hidden']}, {r['threads']} thread{'s' if r['threads'] > 1 else ''}

Command: `{command}` — {r['machine']}; ISA flags: {r['isa']}; {r['versions']}; load average (1, 5, 15 min)
{before[0]}, {before[1]}, {before[2]} before the timed passes and {after[0]}, {after[1]}, {after[2]} after them.
The network alone on {r['windows']} windows (lengths {', '.join(map(str, r['lengths']))} tokens, batch {r['batch_size']}) of
the first {r['texts']} dev texts of `{r['dev']}`; passes interleaved, median of {r['repeats']}. |ΔP|: every output
probability against torch float32, mean / largest.

| variant | seconds | windows / s | against torch float32 | mean / largest \\|ΔP\\| | graph MB | passes (s) |
|---|---|---|---|---|---|---|
{table}"""


if __name__ == "__main__":
    sys.exit(main())
