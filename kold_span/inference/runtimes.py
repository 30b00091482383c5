"""What runs a predictor's network: torch, or ONNX Runtime over the graph `kold-span export` wrote; and in what
number format (the precision, autocast, and whether the CPU has bf16 instructions: here only, training asks too).

The network is the only part that changes with the runtime. A runtime (`Network`) takes one batch's
collated inputs (`input_ids`, `attention_mask`, `token_type_ids`, as `Predictor.prepare` makes them)
and returns each task's logits, as `MultiTaskModel` does; windows, Kiwi, merging, decoding and spans
stay the predictor's, the same code for both.

A model directory holds at most one ONNX graph, named in its config.json under "onnx"
(`GraphEntry`): float32 as trained, or int8. `--runtime auto` (the default) runs that graph when
there is one, the precision is left at auto and the network runs on the CPU; torch otherwise.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Protocol, Sequence

import torch

from kold_span.config.choices import Precision, Quantization, Runtime
from kold_span.errors import ArgumentError, ModelFormatError, needs_extra
from kold_span.models.network import MultiTaskModel
from kold_span.models.tasks import Task

log = logging.getLogger(__name__)
ONNX_KEY = "onnx"  # the key of config.json that names the exported graph
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")  # the order of a collated batch's tensors
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of CPUs with bf16 instructions


def cpu_has_bf16(flags: Optional[str] = None) -> bool:
    """Whether this CPU (or the /proc/cpuinfo `flags` line given) has bf16 instructions (AVX512-BF16, AMX).

    The operating system's word, not torch's private probes; False where it cannot be read (not Linux).

    Example:
        >>> cpu_has_bf16("fpu sse2 avx2 avx512f avx512_bf16"), cpu_has_bf16("fpu sse2 fma avx2")
        (True, False)
    """
    if flags is None:
        try:
            text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        flags = next((line.partition(":")[2] for line in text.splitlines() if line.startswith("flags")), "")
    return any(flag in flags.split() for flag in CPU_BF16_FLAGS)


def resolve_precision(precision: str, device: torch.device) -> str:
    """The precision ("bf16", "fp16" or "fp32") the network runs in on `device`: `precision`, or for "auto" its default.

    "auto" gives bf16 on a CUDA device that supports it (fp16 on older ones) and fp32 on every CPU, so
    that one model gives the same labels and spans on every machine of a kind: bf16 on a CPU with
    bf16 instructions is faster but changes labels and spans (docs/PREDICTING.md), so it is the
    user's choice ("bf16"), never a default. On a CPU without bf16 instructions it is emulated and
    many times slower, and a warning says so.

    Example:
        >>> resolve_precision("fp32", torch.device("cuda")), resolve_precision("bf16", torch.device("cpu"))
        ('fp32', 'bf16')
        >>> resolve_precision("auto", torch.device("cpu"))
        'fp32'
        >>> resolve_precision("half", torch.device("cpu"))
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: precision must be one of ('auto', 'bf16', 'fp16', 'fp32'), got 'half'
    """
    if Precision.parse(precision, "precision") is not Precision.AUTO:
        if device.type == "cpu" and precision != "fp32" and not cpu_has_bf16():
            log.warning("precision %s on a CPU without bf16 instructions: emulated, and usually slower than fp32",
                        precision)
        return str(Precision(precision))
    return ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if device.type == "cuda" else "fp32"


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The autocast context of a resolved precision (none for fp32).

    Example:
        >>> with autocast(torch.device("cpu"), "bf16"):
        ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
        torch.bfloat16
    """
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=DTYPES[precision])


@dataclass(frozen=True)
class GraphEntry:
    """What config.json records of an exported graph: its file, weight format and how it was made.

    Example:
        >>> GraphEntry.from_dict({"file": "model.int8.onnx", "quantize": "int8", "calibration": "dynamic"},
        ...                      Path("m/config.json")).precision
        'onnx-int8-dynamic'
        >>> GraphEntry.from_dict({"file": "m.onnx", "quantize": "int4", "calibration": "none"}, Path("m/config.json"))
        Traceback (most recent call last):
        ...
        kold_span.errors.ModelFormatError: m/config.json: onnx.quantize must be one of ('none', 'int8'), got 'int4'
        >>> GraphEntry.from_dict({"file": "model.onnx"}, Path("m/config.json"))
        Traceback (most recent call last):
        ...
        kold_span.errors.ModelFormatError: m/config.json: key 'onnx' misses 'quantize' (an exported graph records file, quantize, calibration)
    """

    file: str
    quantize: str  # a `Quantization` value
    calibration: str = "none"  # int8: "dynamic" (scales per batch) or "static" (scales from calibration texts)
    outputs: tuple[str, ...] = ()  # the graph's outputs: each task's logits, in the model's task order
    opset: int = 0
    made_with: str = ""  # the torch and onnxruntime versions that exported it

    @property
    def precision(self) -> str:
        """The graph's number format as `Predictor.precision` reports it ("onnx-fp32", "onnx-int8-dynamic")."""
        return "onnx-fp32" if self.quantize == Quantization.NONE else f"onnx-{self.quantize}-{self.calibration}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "outputs": list(self.outputs)}

    @classmethod
    def from_dict(cls, entry: Any, path: Path) -> "GraphEntry":
        """The entry of config.json `path`; a `ModelFormatError` naming what is missing or wrong."""
        if not isinstance(entry, dict):
            raise ModelFormatError(f"{path}: key {ONNX_KEY!r} must be an object, got {entry!r}")
        for key in ("file", "quantize", "calibration"):
            if key not in entry:
                raise ModelFormatError(f"{path}: key {ONNX_KEY!r} misses {key!r} (an exported graph records "
                                       "file, quantize, calibration)")
        name = entry["file"]
        # An .onnx name: an export replaces the graph it names, which must never be the weights or the config.
        if not isinstance(name, str) or Path(name).name != name or not name.endswith(".onnx") or name == ".onnx":
            raise ModelFormatError(f"{path}: {ONNX_KEY}.file must be the name of an .onnx file inside the model "
                                   f"directory, got {name!r}")
        if entry["quantize"] not in Quantization.values():
            raise ModelFormatError(f"{path}: {ONNX_KEY}.quantize must be one of {Quantization.values()}, "
                                   f"got {entry['quantize']!r}")
        return cls(file=name, quantize=entry["quantize"], calibration=entry["calibration"],
                   outputs=tuple(entry.get("outputs", ())), opset=int(entry.get("opset", 0)),
                   made_with=str(entry.get("made_with", "")))


class Network(Protocol):
    """What runs a predictor's network: one collated batch in, each task's logits out."""

    runtime: Runtime
    precision: str  # bf16, fp16 or fp32 (torch); onnx-fp32, onnx-int8-dynamic, ... (a graph)
    device: torch.device

    def __call__(self, inputs: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
        """Each task's logits of one batch."""


class TorchNetwork:
    """The torch model on its device, run under autocast at its resolved precision."""

    runtime = Runtime.TORCH

    def __init__(self, model: MultiTaskModel, device: torch.device, precision: str):
        self.model, self.device, self.precision = model, device, precision

    def __call__(self, inputs: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
        """Each task's logits of one batch (on the device; float32 or the autocast dtype)."""
        with autocast(self.device, self.precision):
            return self.model(*(t.to(self.device, non_blocking=True) for t in inputs))


class OnnxNetwork:
    """An ONNX Runtime session over an exported graph, on the CPU, with torch's number of threads.

    The session's intra-op threads follow `torch.get_num_threads()` when it is made, so that one
    knob (OMP_NUM_THREADS, `serve --threads`, a Ray worker's CPUs) sets both runtimes.
    """

    runtime = Runtime.ONNX

    def __init__(self, path: Path, entry: GraphEntry, tasks: Sequence[Task], threads: Optional[int] = None):
        with needs_extra("onnx"):
            import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own classes for a bad or truncated file
            raise ModelFormatError(f"{path}: ONNX Runtime cannot load this graph ({str(err).splitlines()[0]}); "
                                   "export it again with `kold-span export`") from err
        self.path, self.entry = Path(path), entry
        self.precision = entry.precision
        self.device = torch.device("cpu")
        self.input_names = [i.name for i in self.session.get_inputs()]
        if unknown := [n for n in self.input_names if n not in INPUT_NAMES]:
            raise ModelFormatError(f"{path}: the graph takes input(s) {unknown}; a kold-span graph takes "
                                   f"{', '.join(INPUT_NAMES)}")
        outputs = [o.name for o in self.session.get_outputs()]
        self.output_names = [t.name for t in tasks]
        if missing := [n for n in self.output_names if n not in outputs]:
            raise ModelFormatError(f"{path}: the graph has no output for task(s) {missing} (it has {outputs}); "
                                   "it was exported from another model: export it again with `kold-span export`")

    def __call__(self, inputs: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
        """Each task's float32 logits of one batch, as host tensors."""
        return self.forward(inputs)

    def forward(self, inputs: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
        """`__call__`'s work (a separate name, so that a benchmark can time it as it times a torch module)."""
        given = dict(zip(INPUT_NAMES, inputs))
        feeds = {name: given[name].numpy() for name in self.input_names}
        outputs = self.session.run(self.output_names, feeds)
        return {name: torch.from_numpy(out) for name, out in zip(self.output_names, outputs)}


def graph_entry(config: dict[str, Any], directory: Path) -> Optional[GraphEntry]:
    """The exported graph a model directory's config names, checked to exist; None when it names none."""
    if config.get(ONNX_KEY) is None:
        return None
    entry = GraphEntry.from_dict(config[ONNX_KEY], directory / "config.json")
    if not (directory / entry.file).is_file():
        raise ModelFormatError(f"{directory}: config.json names the ONNX graph {entry.file}, which is missing; "
                               f"export it again with `kold-span export --model {directory} --format onnx`")
    return entry


def choose_runtime(runtime: str, entry: Optional[GraphEntry], directory: Path, device: torch.device,
                   precision: str) -> Runtime:
    """torch or onnx for a model directory: `runtime`, or for auto ONNX where it can run as the options ask.

    auto runs the graph when the directory has one, the device is the CPU and the precision is
    left at auto (an explicit precision is torch's autocast, so it keeps torch).

    Example:
        >>> entry = GraphEntry("model.onnx", "none")
        >>> cpu = torch.device("cpu")
        >>> choose_runtime("auto", entry, Path("m"), cpu, "auto"), choose_runtime("auto", None, Path("m"), cpu, "auto")
        (<Runtime.ONNX: 'onnx'>, <Runtime.TORCH: 'torch'>)
        >>> choose_runtime("auto", entry, Path("m"), cpu, "bf16")
        <Runtime.TORCH: 'torch'>
        >>> choose_runtime("onnx", None, Path("m"), cpu, "auto")
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: runtime onnx: the model directory m has no ONNX graph; export one with `kold-span export --model m --format onnx` (or use --runtime torch)
    """
    chosen = Runtime.parse(runtime, "runtime")
    precision = Precision.parse(precision, "precision")
    if chosen is Runtime.AUTO:
        usable = entry is not None and device.type == "cpu" and precision is Precision.AUTO
        return Runtime.ONNX if usable else Runtime.TORCH
    if chosen is Runtime.ONNX:
        if entry is None:
            raise ArgumentError(f"runtime onnx: the model directory {directory} has no ONNX graph; export one with "
                                f"`kold-span export --model {directory} --format onnx` (or use --runtime torch)")
        if device.type != "cpu":
            raise ArgumentError(f"runtime onnx runs on the CPU, not on {device}; use --device cpu, or --runtime torch "
                                f"on {device}")
        if precision is not Precision.AUTO:
            raise ArgumentError(f"precision {precision} is torch's autocast; an ONNX graph runs in the format it was "
                                f"exported in ({entry.precision}): leave --precision at auto, or use --runtime torch")
    return chosen
