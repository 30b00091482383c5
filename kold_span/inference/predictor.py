"""A trained model that predicts: texts → windows → network → merged probabilities → labels and character spans.

A trained model is a directory (`models.model_dir`: config.json, safetensors weights, tokenizer);
`Predictor.from_pretrained` loads one and `save_pretrained` writes one. Usage (after `make demo`)::

    from kold_span import Predictor
    predictor = Predictor.from_pretrained("checkpoints/demo/demo/model")
    predictor.predict(["이 쓰레기 같은 정치인들"], contexts=["국회 본회의 통과"])[0]["spans"]
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import torch

from kold_span.config.choices import Runtime, SnapMode
from kold_span.data.example import Context, Example, context_problem, context_turns, text_problem
from kold_span.data.perspectives import check_perspective, verbalise, with_perspective
from kold_span.errors import ArgumentError
from kold_span.models.decoding import merge_windows, prediction
from kold_span.models.kinds import MergedExample
from kold_span.models.manifest import directory_identity, inside
from kold_span.models.model_dir import CONFIG_NAME, read_model_dir, write_model_dir
from kold_span.models.network import MultiTaskModel
from kold_span.models.ngram import Companion, fuse_companions
from kold_span.models.tasks import Task
from kold_span.models.windows import InputEncoder, collate
from kold_span.text.morphemes import prefetch_for
from kold_span.text.normalize import Normalized, check_steps, normalize, normalize_context
from kold_span.inference.pipeline import (HostProbs, Pipeline, PreparedChunk, check_batch_size,
                                         resolve_precision, to_host)
from kold_span.inference.runtimes import ONNX_KEY, OnnxNetwork, TorchNetwork, choose_runtime, graph_entry


class Predictor:
    """Runs a trained multi-task model on texts and returns labels and character spans."""

    def __init__(self, model: MultiTaskModel, tokenizer: Any, tasks: Sequence[Task], *,
                 max_length: int = 128, stride: int = 32, context_mode: str = "auto",
                 max_turns: Optional[int] = None, snap: str = "morpheme", trim: bool = True,
                 morpheme_pretokenize: bool = False, perspective: Optional[dict[str, Any]] = None,
                 companions: Optional[dict[str, Companion]] = None, device: Union[str, torch.device] = "cpu",
                 precision: str = "auto", normalize: Optional[Sequence[str]] = None,
                 network: Optional[OnnxNetwork] = None):
        device = checked_device(device)
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.tasks = list(tasks)
        self.encoder = InputEncoder(tokenizer, max_length, stride, context_mode, max_turns)
        self.snap, self.trim = SnapMode.parse(snap, "snap"), trim
        self.morpheme_pretokenize = morpheme_pretokenize
        self.perspective = perspective  # {"label", "traits"} of an annotator-conditioned model
        self.companions = dict(companions or {})  # task → n-gram model fused into its probabilities
        self.device = torch.device(device)
        # What runs the network (`runtimes`): the torch model under autocast, or an exported ONNX graph.
        self.network = network or TorchNetwork(self.model, self.device, resolve_precision(precision, self.device))
        self.precision = self.network.precision  # bf16, fp16 or fp32 (torch); onnx-fp32, onnx-int8-dynamic, ...
        # The normalization steps every input goes through (text.normalize), or None: read as written.
        self.normalize = None if normalize is None else check_steps(normalize)
        self.source: Optional[Path] = None  # the model directory it was loaded from
        self._digests: Optional[dict[str, str]] = None  # its files' SHA-256, when the manifest was checked
        self._identity: Optional[str] = None

    @property
    def identity(self) -> str:
        """The SHA-256 of the model: of its directory's files (config, weights, tokenizer, ...), or of its weights.

        A resumed `predict` compares it with the one the unfinished output was written with.
        """
        if self._identity is None:
            if self.source is not None:
                self._identity = directory_identity(self.source, self._digests)
            else:
                import hashlib

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
        enc = self.encoder
        config = {
            "tasks": [t.to_dict() for t in self.tasks],
            "context": {"mode": enc.context_mode, "max_turns": enc.max_turns},
            "align": {"snap": self.snap.value, "trim": self.trim},
            "max_length": enc.max_length, "stride": enc.stride, "pooling": self.model.pooling,
            "morpheme_pretokenize": self.morpheme_pretokenize,
            "perspective": self.perspective,
            "ngram": sorted(self.companions),
            "encoder": self.model.encoder.config.to_dict(),
        }
        if self.normalize is not None:  # absent: a model that reads text as written, as before the key
            config["normalize"] = {"steps": list(self.normalize)}
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
        predictor = cls(model, tokenizer, saved.tasks, max_length=config["max_length"], stride=config["stride"],
                        context_mode=config["context"]["mode"], max_turns=config["context"]["max_turns"],
                        snap=config["align"]["snap"], trim=config["align"]["trim"],
                        morpheme_pretokenize=bool(config.get("morpheme_pretokenize")),
                        perspective=config.get("perspective"), companions=saved.companions(), device=device,
                        precision=precision, normalize=saved.normalize_steps(), network=network)
        predictor.source, predictor._digests = directory, saved.digests
        return predictor

    # -- prediction: prepare (CPU) → run_network → merge, overlapped by `Pipeline` ---------
    def normalized(self, texts: Sequence[str], contexts: Sequence[Context]
                   ) -> tuple[Optional[list[Normalized]], Sequence[str], Sequence[Context]]:
        """The inputs as the model reads them: normalized by its steps (text.normalize), or as given.

        The one place where text enters the model, for predict, serve, the spaCy component and Ray.
        """
        if self.normalize is None:
            return None, texts, contexts
        normalized = [normalize(text, self.normalize) for text in texts]
        return (normalized, [n.aligned.text for n in normalized],
                [normalize_context(c, self.normalize) for c in contexts])

    def prepare(self, texts: Sequence[str], contexts: Sequence[Context], batch_size: int = 32) -> PreparedChunk:
        """The CPU work before the network: normalization, morphemes, windows, and length-sorted batches."""
        normalized, texts, contexts = self.normalized(texts, contexts)
        prefetch_for(self.tokenizer, list(texts) + [turn for c in contexts for turn in context_turns(c)],
                     snap=self.snap.uses_morphemes)
        prepared = PreparedChunk(list(texts), list(contexts), normalized=normalized)
        for i, example_windows in enumerate(self.encoder.encode_many(texts, contexts)):
            for window in example_windows:
                prepared.windows.append(window)
                prepared.owners.append(i)
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
        """Per-example outputs of a chunk: its windows merged, n-gram companions fused."""
        probs: list[dict[str, np.ndarray]] = [{} for _ in prepared.windows]
        for (rows, _inputs), host in zip(prepared.batches, outputs, strict=True):
            for j, row in zip(rows, host.rows()):
                probs[j] = row
        grouped: list[list[int]] = [[] for _ in prepared.texts]
        for j, owner in enumerate(prepared.owners):
            grouped[owner].append(j)
        windows = prepared.windows
        merged = [merge_windows(self.tasks, [windows[j] for j in js], [probs[j] for j in js]) for js in grouped]
        fuse_companions(self.companions, self.tasks, prepared.texts, prepared.contexts, merged)
        for m, n in zip(merged, prepared.normalized or ()):
            m.normalized = n
        return merged

    def merged_outputs(self, texts: Sequence[str], contexts: Sequence[Context],
                       batch_size: int = 32) -> list[MergedExample]:
        """Per-example outputs with long texts' windows merged (the three stages in turn)."""
        prepared = self.prepare(texts, contexts, batch_size)
        return self.merge(prepared, self.run_network(prepared))

    def format(self, text: str, merged: MergedExample) -> dict[str, Any]:
        """Labels with probabilities and spans `{type, start, end, text, score}` on `text` as given.

        A normalizing model decodes spans on the normalized text and maps them back to `text`
        (`AlignedText.to_original`: removed characters inside a span are in it, grapheme clusters
        stay whole), and adds `signals`: what normalization removed or folded, by kind.
        """
        if merged.normalized is None:
            return prediction(self.tasks, merged, text, self.snap, self.trim)
        return on_original(prediction(self.tasks, merged, merged.normalized.aligned.text, self.snap, self.trim),
                           merged.normalized)

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
        return [self.format(text, m) for text, m in zip(texts, merged)]

    def contexts_for(self, contexts: Sequence[Context], perspective: Optional[dict[str, Any]]) -> list[Context]:
        """The contexts with an annotator's verbalised traits added (annotator-conditioned models), else as given."""
        if perspective is None:
            return list(contexts)
        if not self.perspective:
            raise ArgumentError("this model was not trained annotator-conditioned (data.perspective); "
                                "it cannot take a perspective")
        check_perspective(perspective, self.perspective["traits"])
        segment = verbalise(perspective, self.perspective["traits"])
        return [with_perspective(c, segment) for c in contexts]

    def predict_examples(self, examples: Iterable[Example], batch_size: int = 32,
                         perspective: Optional[dict[str, Any]] = None) -> Iterator[dict[str, Any]]:
        """Predict examples in chunks, CPU work overlapped with the network (`Pipeline`); yields {id, labels, spans}.

        Memory stays flat on any input size; the predictions are those of `predict`, in input order.
        """
        for _example, row in Pipeline(self, batch_size, perspective).run(examples):
            yield row


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

