"""`kold-span export`: a model directory's encoder and every head as one ONNX graph, float32 or int8.

The graph takes a batch's `input_ids`, `attention_mask` and `token_type_ids` (batch and length
axes dynamic) and gives each task's logits under the task's name, as `MultiTaskModel` does; it
is written into the model directory and named in its config.json (`runtimes.GraphEntry`), where
`Predictor.from_pretrained(dir, runtime="onnx")` (or "auto") finds it. A directory holds one
graph: exporting again replaces it.

int8 is dynamic by default (the matrix products' weights int8 per output channel, activations
scaled batch by batch: no data needed; embeddings stay float32); with calibration texts it is static (activation scales fixed from those texts'
ranges, QDQ format), an option where dynamic int8 loses quality.
"""
from __future__ import annotations

import logging
import tempfile
import warnings
from itertools import islice
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

import torch
from torch import nn

from kold_span.config.choices import Quantization
from kold_span.data.atomic import replace_directory
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, DataError, needs_extra
from kold_span.inference.inputs import iter_inputs
from kold_span.inference.predictor import Predictor
from kold_span.models.manifest import carry_over, verify_manifest, write_manifest
from kold_span.models.model_dir import CONFIG_NAME, read_model_config
from kold_span.inference.runtimes import INPUT_NAMES, ONNX_KEY, GraphEntry, OnnxNetwork
from kold_span.models.kinds import kind_of

log = logging.getLogger(__name__)
GRAPH_FILES = {Quantization.NONE: "model.onnx", Quantization.INT8: "model.int8.onnx"}
OPSET = 17  # LayerNormalization as one node; every onnxruntime of the last years runs it
CALIBRATION_TEXTS = 256  # static int8: the calibration file's first texts whose activation ranges set the scales
# The largest probability difference between the float32 graph and torch on the check batch that is the same network.
AGREEMENT = 1e-4
# Texts of different lengths, so that the traced batch is padded: the graph then keeps the attention mask.
TRACE_TEXTS = ("가 나 다 라 마 바 사 아 자 차 카 타 파 하 a b c d e f g", "가")
CHECK_TEXTS = ("이 쓰레기 같은 정치인들 " * 6, "좋은 기사 감사합니다", "x", "오늘 경기 정말 재밌었어요")


class _TaskLogits(nn.Module):
    """The model's logits as a tuple in task order (a traced graph's outputs are positional)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        logits = self.model(input_ids, attention_mask, token_type_ids)
        return tuple(logits[task.name] for task in self.model.tasks)


def export_onnx(directory: Union[str, Path], quantize: str = "none", calibrate: Optional[Union[str, Path]] = None,
                calibration_texts: int = CALIBRATION_TEXTS) -> GraphEntry:
    """Write the model directory's network as an ONNX graph into it and name the graph (the entry returned) in its
    config.json.

    `quantize` is "none" (float32, as trained) or "int8"; with int8, `calibrate` names a file of texts (any input
    `kold-span predict` reads) whose first `calibration_texts` texts fix the activation scales (static int8),
    without it the int8 is dynamic. `calibrate` without int8, or a bad `quantize`, is an `ArgumentError`; a
    directory this version does not read, a `ModelFormatError`.

    Example:
        >>> export_onnx("no/such/model", quantize="int4")
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: quantize must be one of ('none', 'int8'), got 'int4'
    """
    quant = Quantization.parse(quantize, "quantize")
    if calibrate is not None and quant is not Quantization.INT8:
        raise ArgumentError("--calibrate FILE is for --quantize int8 (static int8: activation scales from its texts)")
    if isinstance(calibration_texts, bool) or not isinstance(calibration_texts, int) or calibration_texts < 1:
        raise ArgumentError(f"calibration_texts must be a whole number of at least 1, got {calibration_texts!r}")
    directory = Path(directory)
    read_model_config(directory)  # not a model directory: refused before anything is created beside it
    # Built beside the model and swapped in whole: an export that fails or is stopped leaves the model as it was.
    with replace_directory(directory, lambda _: True, "a model directory") as staging:
        config = read_model_config(directory)
        # The graph an earlier export named: its name checked (an .onnx file of the directory), left behind.
        previous = GraphEntry.from_dict(config[ONNX_KEY], directory / CONFIG_NAME) if config.get(ONNX_KEY) is not None \
            else None
        # Everything but the graphs this export replaces must be as saved: a corrupt weight file is refused.
        verify_manifest(directory, skip=set(GRAPH_FILES.values()) | ({previous.file} if previous else set()))
        predictor = Predictor.from_pretrained(directory, precision="fp32", runtime="torch", verify=False)
        calibration = "none" if quant is Quantization.NONE else ("static" if calibrate is not None else "dynamic")
        entry = GraphEntry(file=GRAPH_FILES[quant], quantize=str(quant), calibration=calibration,
                           outputs=tuple(t.name for t in predictor.tasks), opset=OPSET, made_with=_versions())
        with tempfile.TemporaryDirectory(prefix=".export-", dir=staging) as tmp:
            fp32 = Path(tmp) / GRAPH_FILES[Quantization.NONE]
            trace(predictor, fp32)
            input_names = check_agreement(predictor, fp32).input_names
            graph = fp32
            if quant is Quantization.INT8:
                graph = Path(tmp) / GRAPH_FILES[Quantization.INT8]
                prepared = preprocess(fp32, Path(tmp) / "prepared.onnx")
                if calibrate is None:
                    quantize_dynamic_int8(prepared, graph)
                else:
                    quantize_static_int8(prepared, graph, calibration_feeds(predictor, Path(calibrate),
                                                                            calibration_texts, input_names))
            graph.replace(staging / entry.file)
        # One graph per directory: every other file is carried over, the earlier graph and config.json are not.
        carry_over(directory, staging, {CONFIG_NAME, entry.file, *([previous.file] if previous else [])})
        config[ONNX_KEY] = entry.to_dict()
        (staging / CONFIG_NAME).write_text(json_text(config, indent=1), encoding="utf-8")
        write_manifest(staging)  # the graph and the new config.json are part of the model now
    return entry  # the caller says where it went (the CLI prints it: a log line here would say it twice)


def trace(predictor: Predictor, path: Path) -> None:
    """The predictor's torch network as a float32 ONNX graph (TorchScript exporter, dynamic batch and length)."""
    inputs = _batch(predictor, TRACE_TEXTS)
    if bool(inputs[1].all()):
        raise RuntimeError("the trace batch has no padding: the graph would not keep the attention mask")
    outputs = [task.name for task in predictor.tasks]
    axes = {name: {0: "batch", 1: "length"} for name in INPUT_NAMES}
    for task in predictor.tasks:
        axes[task.name] = {0: "batch", 1: "length"} if kind_of(task).token_level else {0: "batch"}
    wrapper = _TaskLogits(predictor.model).eval()  # the exporter restores the wrapper's mode on the model after
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer warns of shape tests it fixes as constants (a padding length of 0, no causal mask) and of
        # negative indices, none of which a batch of ours has; `check_agreement` runs the graph on other shapes.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message="Exporting aten::index operator")
        torch.onnx.export(wrapper, inputs, str(path), dynamo=False, opset_version=OPSET,
                          input_names=list(INPUT_NAMES), output_names=outputs, dynamic_axes=axes)


def _batch(predictor: Predictor, texts: tuple[str, ...]) -> tuple[torch.Tensor, ...]:
    """Every window of `texts` (no contexts) in one collated batch, as the predictor feeds its network.

    One batch of all windows: the short text's window and the long one's full windows differ in
    length, so the batch is padded whatever the model's window length.
    """
    return tuple(predictor.prepare(predictor.encode(list(texts), [None] * len(texts)), 10_000).batches[0][1])


def check_agreement(predictor: Predictor, path: Path) -> OnnxNetwork:
    """The float32 graph in a session, checked to give torch float32's probabilities on a check batch: a RuntimeError
    above `AGREEMENT` (the traced graph is not the network: a bug, not a user's mistake)."""
    from kold_span.inference.pipeline import to_host

    network = OnnxNetwork(path, GraphEntry(path.name, "none"), predictor.tasks, threads=1)
    inputs = _batch(predictor, CHECK_TEXTS)
    with torch.inference_mode():
        expected = to_host(predictor.tasks, predictor.model(*inputs)).values
    got = to_host(predictor.tasks, network(inputs)).values
    if expected.shape != got.shape:
        raise RuntimeError(f"the exported graph gives outputs of shape {tuple(got.shape)}, torch {tuple(expected.shape)}")
    difference = float((expected - got).abs().max())
    if difference > AGREEMENT:
        raise RuntimeError(f"the exported graph's probabilities differ from torch's by {difference:.2g} "
                           f"(more than {AGREEMENT:g}): the trace lost part of the network")
    log.info("float32 graph against torch: largest probability difference %.2g", difference)
    return network


def preprocess(source: Path, target: Path) -> Path:
    """The float32 graph as onnxruntime's quantizer asks for it: constants folded, shapes inferred.

    onnxruntime.quantization's `quant_pre_process`: onnxruntime's basic graph optimizations, then
    ONNX's shape inference, so that the quantizer sees which products have constant weights.
    Without it the quantizer warns; the graph computes the same function. Its symbolic shape
    inference is skipped: it cannot follow the traced attention mask's shape arithmetic ("Incomplete
    symbolic shape inference"), and dynamic and MatMul-only static quantization do not need it.
    """
    with needs_extra("onnx"):
        from onnxruntime.quantization.shape_inference import quant_pre_process

    quant_pre_process(str(source), str(target), skip_symbolic_shape=True)
    return target


def quantize_dynamic_int8(source: Path, target: Path) -> None:
    """int8 weights per output channel, activations quantized batch by batch (onnxruntime's dynamic int8).

    Only the matrix products are quantized; the embedding tables stay float32. Quantizing their lookups
    too (onnxruntime's default) saves memory, not time, and costs quality (docs/PREDICTING.md).
    """
    with needs_extra("onnx"):
        from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), per_channel=True, weight_type=QuantType.QInt8,
                     op_types_to_quantize=["MatMul"])


def quantize_static_int8(source: Path, target: Path, feeds: list[dict[str, Any]]) -> None:
    """int8 weights per output channel and activations at scales fixed from `feeds` (MinMax, QDQ format).

    Only the matrix products are quantized: layer norms, softmax and GELU stay float32, where int8
    costs transformers most of their quality.
    """
    with needs_extra("onnx"):
        from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                              quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds: Iterator[dict[str, Any]] = iter(feeds)

        def get_next(self) -> Optional[dict[str, Any]]:
            return next(self.feeds, None)

    quantize_static(str(source), str(target), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                    calibrate_method=CalibrationMethod.MinMax)


def calibration_feeds(predictor: Predictor, path: Path, count: int, input_names: Sequence[str],
                      batch_size: int = 16) -> list[dict[str, Any]]:
    """The first `count` texts of `path` (with their contexts) as batches of the graph's inputs `input_names`; a file
    without text is a `DataError`."""
    examples = list(islice(iter_inputs(path), count))
    if not examples:
        raise DataError(f"{path}: no texts to calibrate on")
    encoded = predictor.encode([e.text for e in examples], [e.context for e in examples])
    return [{name: tensor.numpy() for name, tensor in zip(INPUT_NAMES, inputs) if name in input_names}
            for _rows, inputs in predictor.prepare(encoded, batch_size).batches]


def _versions() -> str:
    """The exporting torch and onnxruntime versions, recorded beside the graph."""
    with needs_extra("onnx"):
        import onnxruntime

    return f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}"
