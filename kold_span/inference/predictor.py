"""A trained model that predicts: texts → windows → network → merged probabilities → labels and character spans.

A trained model is a directory (`models.model_dir`: config.json, safetensors weights, tokenizer);
`Predictor.from_pretrained` loads one and `save_pretrained` writes one. Usage (after `make demo`)::

    from kold_span import Predictor
    predictor = Predictor.from_pretrained("checkpoints/demo/demo/model")
    predictor.predict(["이 쓰레기 같은 정치인들"], contexts=["국회 본회의 통과"])[0]["spans"]
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Protocol, Sequence, Union

import numpy as np
import torch

from kold_span.config.choices import Runtime, SnapMode
from kold_span.config.schema import Config
from kold_span.data.example import Context, Example, context_problem, context_turns, text_problem
from kold_span.data.perspectives import check_perspective, verbalise, with_perspective
from kold_span.errors import ArgumentError
from kold_span.models.decoding import merge_windows, prediction
from kold_span.models.kinds import Decoding, MergedExample, apply_calibration
from kold_span.models.manifest import directory_identity, inside
from kold_span.models.model_dir import CONFIG_NAME, read_model_dir, write_model_dir
from kold_span.models.network import MultiTaskModel
from kold_span.models.ngram import Companion, fuse_companions
from kold_span.models.tasks import Task
from kold_span.models.windows import InputEncoder, collate
from kold_span.text.morphemes import prefetch_for
from kold_span.text.normalize import Normalized, check_steps, normalize, normalize_context
from kold_span.inference.pipeline import (C, E, O, Encoded, HostProbs, Pipeline, PreparedChunk, RunOptions, Stages,
                                         check_batch_size, to_host)
from kold_span.inference.runtimes import (ONNX_KEY, Network, OnnxNetwork, TorchNetwork, choose_runtime, graph_entry,
                                          resolve_precision)


@dataclass(frozen=True)
class PredictorSettings:
    """How a trained model reads its inputs and decodes its outputs: what config.json holds besides tasks and weights.

    The one mapping between a run's config (`from_run`), a predictor and its model directory's
    config.json (`to_config`, `from_config`).

    Example:
        >>> settings = PredictorSettings(max_length=64, snap="word", normalize=("nfc",))
        >>> config = settings.to_config(tasks=[], pooling="cls", ngram=[], encoder={})
        >>> PredictorSettings.from_config(config) == settings, config["align"], list(config)[:3]
        (True, {'snap': 'word', 'trim': True}, ['tasks', 'context', 'align'])
    """

    max_length: int = 128
    stride: int = 32
    context_mode: str = "auto"
    max_turns: Optional[int] = None
    snap: SnapMode = SnapMode.MORPHEME
    trim: bool = True
    morpheme_pretokenize: bool = False
    perspective: Optional[dict[str, Any]] = None  # {"label", "traits"} of an annotator-conditioned model
    normalize: Optional[tuple[str, ...]] = None  # the steps every input goes through (text.normalize), or as written

    def __post_init__(self) -> None:
        object.__setattr__(self, "snap", SnapMode.parse(self.snap, "snap"))
        object.__setattr__(self, "normalize", None if self.normalize is None else check_steps(self.normalize))

    @classmethod
    def from_run(cls, config: Config, morpheme_pretokenize: bool) -> "PredictorSettings":
        """The settings a training run's model reads and decodes with."""
        perspective = config.data.perspective
        return cls(config.model.max_length, config.model.stride, config.context.mode, config.context.max_turns,
                   config.align.snap, config.align.trim, morpheme_pretokenize,
                   dataclasses.asdict(perspective) if perspective else None, config.normalize.steps())

    def to_config(self, *, tasks: list[dict[str, Any]], pooling: str, ngram: list[str],
                  encoder: dict[str, Any]) -> dict[str, Any]:
        """config.json's keys, the network's given: in the order of every model directory written so far (the same
        model, the same bytes); `normalize` only for a model that normalizes (absent: as before the key)."""
        config = {"tasks": tasks, "context": {"mode": self.context_mode, "max_turns": self.max_turns},
                  "align": {"snap": self.snap.value, "trim": self.trim}, "max_length": self.max_length,
                  "stride": self.stride, "pooling": pooling, "morpheme_pretokenize": self.morpheme_pretokenize,
                  "perspective": self.perspective, "ngram": ngram, "encoder": encoder}
        return config if self.normalize is None else {**config, "normalize": {"steps": list(self.normalize)}}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "PredictorSettings":
        """The settings of a config.json that `models.model_dir` checked."""
        return cls(config["max_length"], config["stride"], config["context"]["mode"], config["context"]["max_turns"],
                   config["align"]["snap"], config["align"]["trim"], bool(config.get("morpheme_pretokenize")),
                   config.get("perspective"), (config.get("normalize") or {}).get("steps"))


class Predicts(Stages[E, C, O], Protocol[E, C, O]):
    """What predicts: a `Predictor` (its network run by torch or ONNX Runtime) or an `Ensemble` of them.

    An implementation writes the stages (`pipeline.Stages`); the ways to predict built on them are these, once.
    """

    tasks: list[Task]
    settings: PredictorSettings
    precision: str  # the (first) network's number format: bf16, fp32, onnx-int8-dynamic, ...

    @property
    def members(self) -> Sequence["Predictor"]: ...  # the single models it is made of: itself, or an ensemble's

    @property
    def identity(self) -> str: ...  # the SHA-256 of the model (a resumed `predict` compares it with the output's)

    @property
    def decoding(self) -> Decoding:
        """How its outputs become predictions: its tasks (their thresholds and gates), snapping and trimming."""
        return Decoding(self.tasks, self.settings.snap, self.settings.trim)

    def contexts_for(self, contexts: Sequence[Context], perspective: Optional[dict[str, Any]]) -> list[Context]:
        """The contexts with an annotator's verbalised traits added (annotator-conditioned models), else as given."""
        if perspective is None:
            return list(contexts)
        conditioned = self.settings.perspective
        if not conditioned:
            raise ArgumentError("this model was not trained annotator-conditioned (data.perspective); "
                                "it cannot take a perspective")
        check_perspective(perspective, conditioned["traits"])
        segment = verbalise(perspective, conditioned["traits"])
        return [with_perspective(c, segment) for c in contexts]

    def labels_and_spans(self, text: str, merged: MergedExample) -> dict[str, Any]:
        """Labels with probabilities and spans `{type, start, end, text, score}` on `text` as given.

        A normalizing model decodes spans on the normalized text and maps them back to `text`
        (`AlignedText.to_original`: removed characters inside a span are in it, grapheme clusters
        stay whole), and adds `signals`: what normalization removed or folded, by kind.
        """
        if merged.normalized is None:
            return prediction(self.decoding, merged, text)
        return on_original(prediction(self.decoding, merged, merged.normalized.aligned.text), merged.normalized)

    def run_encoded(self, encoded: Sequence[E], batch_size: int) -> list[MergedExample]:
        """Per encoded text, its merged outputs: prepare, run the network, merge, in turn."""
        prepared = self.prepare(encoded, batch_size)
        return self.merge(prepared, self.run_network(prepared))

    def merged_outputs(self, texts: Sequence[str], contexts: Sequence[Context],
                       batch_size: int = 32) -> list[MergedExample]:
        """Per-example outputs with long texts' windows merged (the stages in turn)."""
        return self.run_encoded(self.encode(texts, contexts), batch_size)

    def predict(self, texts: Iterable[str], contexts: Optional[Iterable[Context]] = None,
                batch_size: int = 32, perspective: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
        """Predict labels and spans for texts (with optional contexts).

        `texts` is any iterable of strings ("" too: its labels come from the context alone, and it
        has no spans); `contexts`, when given, holds one context per text (None, a string or a
        list of strings). `perspective` (annotator-conditioned models only) gives the annotator's
        traits, e.g. {"gender": "Female", "age": 23}; the prediction is for such an annotator.
        A bad argument is an `ArgumentError` naming it and the index of the bad item.
        """
        texts = checked_texts(texts)
        contexts = self.contexts_for(checked_contexts(contexts, len(texts)), perspective)
        check_batch_size(batch_size)
        merged = self.merged_outputs(texts, contexts, batch_size)
        return [self.labels_and_spans(text, m) for text, m in zip(texts, merged)]

    def predict_examples(self, examples: Iterable[Example], batch_size: int = 32,
                         perspective: Optional[dict[str, Any]] = None) -> Iterator[dict[str, Any]]:
        """Predict examples in chunks, CPU work overlapped with the network (`Pipeline`); yields {id, labels, spans}.

        Memory stays flat on any input size; the predictions are those of `predict`, in input order.
        """
        for _example, row in Pipeline(self, RunOptions(batch_size, perspective)).run(examples):
            yield row


class Predictor(Predicts[Encoded, PreparedChunk, list[HostProbs]]):
    """Runs a trained multi-task model on texts and returns labels and character spans."""

    def __init__(self, model: MultiTaskModel, tokenizer: Any, tasks: Sequence[Task],
                 settings: PredictorSettings = PredictorSettings(), *,
                 companions: Optional[dict[str, Companion]] = None, device: Union[str, torch.device] = "cpu",
                 precision: str = "auto", network: Optional[Network] = None):
        self.device = device = checked_device(device)
        self.model = model.to(device).eval()
        self.tokenizer, self.tasks, self.settings = tokenizer, list(tasks), settings
        self.encoder = InputEncoder(tokenizer, settings.max_length, settings.stride, settings.context_mode,
                                    settings.max_turns)
        self.companions = dict(companions or {})  # task → n-gram model fused into its probabilities
        # What runs the network (`runtimes`): the torch model under autocast, or an exported ONNX graph.
        self.network = network or TorchNetwork(self.model, self.device, resolve_precision(precision, self.device))
        self.precision = self.network.precision
        self.source: Optional[Path] = None  # the model directory it was loaded from
        self._digests: Optional[dict[str, str]] = None  # its files' SHA-256, when the manifest was checked
        self._identity: Optional[str] = None

    @property
    def members(self) -> Sequence["Predictor"]:
        return (self,)

    @property
    def identity(self) -> str:
        """The SHA-256 of the model: of its directory's files (config, weights, tokenizer, ...), or of its weights.

        A resumed `predict` compares it with the one the unfinished output was written with.
        """
        if self._identity is None:
            if self.source is not None:
                self._identity = directory_identity(self.source, self._digests)
            else:
                digest = hashlib.sha256()
                for name, tensor in sorted(self.model.state_dict().items()):
                    digest.update(name.encode())
                    digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
                self._identity = digest.hexdigest()
        return self._identity

    # -- saving and loading -------------------------------------------------------------
    def save_pretrained(self, directory: Union[str, Path], overwrite: bool = False) -> Path:
        """Write config.json, model.safetensors and the tokenizer as `directory` (`models.model_dir.write_model_dir`).

        The directory is replaced whole, never edited in place; a non-empty `directory` that is no model
        directory is refused (an `OutputTargetError`) unless `overwrite`.
        """
        config = self.settings.to_config(tasks=[t.to_dict() for t in self.tasks], pooling=self.model.pooling,
                                         ngram=sorted(self.companions), encoder=self.model.encoder.config.to_dict())
        copies = {}
        if isinstance(self.network, OnnxNetwork):  # the graph it runs goes along (a spaCy pipeline's copy, say)
            copies[self.network.entry.file] = self.network.path
            config[ONNX_KEY] = self.network.entry.to_dict()
        return write_model_dir(directory, config, self.model, self.tokenizer, self.companions, copies, overwrite)

    @classmethod
    def from_pretrained(cls, directory: Union[str, Path], device: str = "cpu", precision: str = "auto",
                        runtime: str = "auto", verify: bool = True) -> "Predictor":
        """Load a model directory written by `save_pretrained` (no pickle: safetensors and JSON only).

        `precision` is the network's at prediction (`resolve_precision`: "auto" is bf16 on a GPU and
        fp32 on any CPU; "bf16" on a CPU is faster where it has bf16 instructions, and changes some
        labels and spans); the weights stay float32. `runtime` is what runs
        the network (`runtimes.choose_runtime`): "torch", "onnx" (the graph `kold-span export`
        wrote into the directory, on the CPU) or "auto" (that graph when there is one, the device is
        the CPU and `precision` is auto; torch otherwise).

        The directory is data, never code: every file is checked against its manifest first
        (`models.manifest`; `verify=False` skips the hashing, for speed), no file may be a link out
        of it, custom code (`auto_map`) is refused, and transformers loads with remote code
        disabled. A bad file or value is a `ModelFormatError` naming it.

        Example:
            >>> Predictor.from_pretrained("no/such/model")
            Traceback (most recent call last):
            ...
            FileNotFoundError: model directory no/such/model does not exist
        """
        saved = read_model_dir(directory, verify)
        directory, config = saved.path, saved.config
        device = checked_device(device)
        # torch never reads the graph: a directory whose graph went missing still loads, and exports again.
        entry = None if Runtime.parse(runtime, "runtime") is Runtime.TORCH else graph_entry(config, directory)
        if entry is not None:
            inside(directory, entry.file, f"{directory / CONFIG_NAME}: key '{ONNX_KEY}'")
        chosen = choose_runtime(runtime, entry, directory, device, precision)
        model, tokenizer = saved.load_network()
        network = OnnxNetwork(directory / entry.file, entry, saved.tasks) if chosen is Runtime.ONNX and entry else None
        predictor = cls(model, tokenizer, saved.tasks, PredictorSettings.from_config(config),
                        companions=saved.companions(), device=device, precision=precision, network=network)
        predictor.source, predictor._digests = directory, saved.digests
        return predictor

    # -- the stages (`pipeline.Stages`): encode, prepare (CPU) → run_network → merge, overlapped by `Pipeline` --
    def encode(self, texts: Sequence[str], contexts: Sequence[Context]) -> list[Encoded]:
        """Each text as the model reads it: normalized by its steps (text.normalize) or as given, Kiwi's morphemes
        fetched (one call), cut into windows. The one place where text enters the model (predict, serve, spaCy, Ray)."""
        steps = self.settings.normalize
        normalized: list[Any] = [None] * len(texts)  # each text's `Normalized`, when the model normalizes
        if steps is not None:
            normalized = [normalize(text, steps) for text in texts]
            texts, contexts = [n.aligned.text for n in normalized], [normalize_context(c, steps) for c in contexts]
        prefetch_for(self.tokenizer, list(texts) + [turn for c in contexts for turn in context_turns(c)],
                     snap=self.settings.snap.uses_morphemes)
        return [Encoded(text, context, n, windows) for text, context, n, windows in zip(
            texts, contexts, normalized, self.encoder.encode_many(texts, contexts))]

    def window_shape(self, encoded: Encoded) -> tuple[int, int]:
        return len(encoded.windows), max(len(w["input_ids"]) for w in encoded.windows)

    def prepare(self, encoded: Sequence[Encoded], batch_size: int = 32) -> PreparedChunk:
        """Encoded texts' windows in length-sorted, collated batches (pinned on a CUDA device)."""
        prepared = PreparedChunk(list(encoded))
        for i, e in enumerate(encoded):
            prepared.windows += e.windows
            prepared.owners += [i] * len(e.windows)
        windows = prepared.windows
        order = sorted(range(len(windows)), key=lambda j: len(windows[j]["input_ids"]))
        pad_id = self.tokenizer.pad_token_id or 0
        pin = self.device.type == "cuda"
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            batch = collate([windows[j] for j in rows], [], pad_id)
            inputs = tuple(batch[key] for key in ("input_ids", "attention_mask", "token_type_ids"))
            prepared.batches.append((rows, tuple(t.pin_memory() for t in inputs) if pin else inputs))
        return prepared

    @torch.inference_mode()
    def run_network(self, prepared: PreparedChunk) -> list[HostProbs]:
        """Every batch of a prepared chunk through the network; each batch's probabilities copied to the host once."""
        return [to_host(self.tasks, self.network(inputs)) for _rows, inputs in prepared.batches]

    def merge(self, prepared: PreparedChunk, outputs: list[HostProbs]) -> list[MergedExample]:
        """Per-example outputs of a chunk: its windows merged, n-gram companions fused, each task's temperature
        applied."""
        probs: list[dict[str, np.ndarray]] = [{} for _ in prepared.windows]
        for (rows, _inputs), host in zip(prepared.batches, outputs, strict=True):
            for j, row in zip(rows, host.rows()):
                probs[j] = row
        grouped: list[list[int]] = [[] for _ in prepared.encoded]
        for j, owner in enumerate(prepared.owners):
            grouped[owner].append(j)
        windows = prepared.windows
        merged = [merge_windows(self.tasks, [windows[j] for j in js], [probs[j] for j in js]) for js in grouped]
        fuse_companions(self.companions, self.tasks, [e.text for e in prepared.encoded],
                        [e.context for e in prepared.encoded], merged)
        # The one place probabilities are calibrated: everything that leaves the package comes through here.
        apply_calibration(self.tasks, merged)
        for m, e in zip(merged, prepared.encoded):
            m.normalized = e.normalized
        return merged


def on_original(predicted: dict[str, Any], normalized: Normalized) -> dict[str, Any]:
    """A prediction decoded on a normalized text, its spans moved onto the original, with `signals`.

    Example:
        >>> n = normalize("너 씨.발", ("separators",))
        >>> on_original({"labels": {}, "spans": [{"type": "OFF", "start": 2, "end": 4, "text": "씨발",
        ...                                      "score": 0.9}]}, n)
        {'labels': {}, 'spans': [{'type': 'OFF', 'start': 2, 'end': 5, 'text': '씨.발', 'score': 0.9}], 'signals': {'separators': 1}}
    """
    aligned = normalized.aligned
    spans = []
    for span in predicted["spans"]:
        start, end = aligned.to_original(span["start"], span["end"])
        spans.append({**span, "start": start, "end": end, "text": aligned.original[start:end]})
    return {**predicted, "spans": spans, "signals": dict(normalized.signals)}


def checked_device(device: Union[str, torch.device]) -> torch.device:
    """`device` as a torch device; an `ArgumentError` for a name torch does not know, a kind of device that does not
    compute (meta) or one the package does not run on, or a GPU it cannot see.

    Example:
        >>> checked_device("cpu")
        device(type='cpu')
        >>> checked_device("gpu0")
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: device must be cpu, cuda or cuda:N, got 'gpu0'
        >>> checked_device("meta")
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: device must be cpu, cuda or cuda:N, got 'meta'
    """
    try:
        checked = torch.device(device)
    except (RuntimeError, TypeError):
        raise ArgumentError(f"device must be cpu, cuda or cuda:N, got {device!r}") from None
    if checked.type not in ("cpu", "cuda"):
        raise ArgumentError(f"device must be cpu, cuda or cuda:N, got {str(device)!r}")
    if checked.type == "cuda" and not torch.cuda.is_available():
        build = "built without CUDA" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise ArgumentError(f"device {checked}: torch sees no CUDA device here (torch {torch.__version__}, "
                            f"{build}); use cpu")
    if checked.type == "cuda" and checked.index is not None and checked.index >= torch.cuda.device_count():
        raise ArgumentError(f"device {checked}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                            f"cuda:0 to cuda:{torch.cuda.device_count() - 1}")
    return checked


def checked_texts(texts: Iterable[str]) -> list[str]:
    """The texts of a `predict` call as a list; an `ArgumentError` naming the first that is not a text.

    Example:
        >>> checked_texts(t for t in ["좋은 기사", ""])
        ['좋은 기사', '']
        >>> checked_texts(["좋은 기사", None])
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: texts[1]: expected a string, got None
    """
    texts = _as_list(texts, "texts", "a list of strings; for one text pass [text]", "strings")
    for i, text in enumerate(texts):
        if problem := text_problem(text):
            raise ArgumentError(f"texts[{i}]: {problem}")
    return texts


def _as_list(values: Any, name: str, not_a_string: str, items: str) -> list:
    """`values` as a list; an `ArgumentError` for a bare string (a common slip) or a non-iterable."""
    if isinstance(values, str):
        raise ArgumentError(f"{name} must {'be ' if not_a_string.startswith('a ') else ''}{not_a_string}")
    try:
        return list(values)
    except TypeError:
        raise ArgumentError(f"{name} must be an iterable of {items}, got {type(values).__name__}") from None


def checked_contexts(contexts: Optional[Iterable[Context]], count: int) -> list[Context]:
    """One context per text as a list (all None when `contexts` is None); an `ArgumentError` names a bad one.

    Example:
        >>> checked_contexts(None, 2)
        [None, None]
        >>> checked_contexts(["제목", 3], 2)
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: contexts[1]: expected None, a string or a list of strings, got int
    """
    if contexts is None:
        return [None] * count
    contexts = _as_list(contexts, "contexts", "hold one context per text; for one text pass [context]", "contexts")
    if len(contexts) != count:
        raise ArgumentError(f"contexts: {len(contexts)} contexts for {count} texts; pass one context per text "
                            "(None where a text has none)")
    for i, context in enumerate(contexts):
        if problem := context_problem(context):
            raise ArgumentError(f"contexts[{i}]: {problem}")
    return contexts

