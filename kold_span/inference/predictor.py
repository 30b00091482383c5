"""A trained model is a directory: config + safetensors weights + tokenizer.

Usage (after `make demo`)::

    from kold_span import Predictor
    predictor = Predictor.from_pretrained("checkpoints/demo/demo/model")
    predictor.predict(["이 쓰레기 같은 정치인들"], contexts=["국회 본회의 통과"])[0]["spans"]
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import torch

from kold_span.config.choices import Runtime, SnapMode
from kold_span.data.example import Context, Example, context_problem, context_turns, text_problem
from kold_span.data.perspectives import check_perspective, verbalise, with_perspective
from kold_span.errors import ArgumentError, ModelFormatError
from kold_span.models.backbones import (attach_morpheme_pretokenizer, encoder_from_config, save_tokenizer)
from kold_span.models.decoding import MergedExample, merge_windows, prediction
from kold_span.models.network import MultiTaskModel
from kold_span.models.ngram import Companion, load_companions, save_companions
from kold_span.models.tasks import Task
from kold_span.models.windows import InputEncoder, collate
from kold_span.text.morphemes import prefetch_for
from kold_span.inference.pipeline import (HostProbs, Pipeline, PreparedChunk, check_batch_size,
                                         resolve_precision, to_host)
from kold_span.inference.runtimes import (ONNX_KEY, OnnxNetwork, TorchNetwork, choose_runtime, graph_entry)

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
TOKENIZER_DIR = "tokenizer"
FORMAT_VERSION = 1
# The keys of config.json a model of FORMAT_VERSION cannot be read without ("a.b": key b inside object a);
# pooling, morpheme_pretokenize, perspective and ngram came later and have defaults.
REQUIRED_KEYS = ("tasks", "context.mode", "context.max_turns", "align.snap", "align.trim", "max_length", "stride",
                 "encoder.model_type")
TASK_KEYS = ("name", "kind", "source")


def read_model_config(directory: Union[str, Path]) -> dict[str, Any]:
    """The config.json of a model directory, checked: its format version, the keys it needs and the files beside it.

    Args:
        directory: a directory written by `Predictor.save_pretrained`.

    Returns:
        The parsed config.

    Raises:
        FileNotFoundError: `directory` does not exist.
        ModelFormatError: no config.json, weights or tokenizer in it, a format_version other than
            FORMAT_VERSION, or a missing key; the message names the file and the key.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"model directory {directory} does not exist")
    path = directory / CONFIG_NAME
    if not path.is_file():
        raise ModelFormatError(f"{directory} is not a kold-span model directory (no {CONFIG_NAME}); "
                               f"train one with `kold-span train CONFIG` and pass its model/ folder")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFormatError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(config, dict):
        raise ModelFormatError(f"{path}: expected a JSON object of keys, got {type(config).__name__}")
    if "format_version" not in config:
        raise ModelFormatError(f"{path}: missing key 'format_version' (this kold-span reads format_version "
                               f"{FORMAT_VERSION})")
    version = config["format_version"]
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise ModelFormatError(f"{path}: format_version {version!r} is not supported; this kold-span reads "
                               f"format_version {FORMAT_VERSION} (a model saved by another version of kold-span?)")
    for key in REQUIRED_KEYS:
        if not _has_key(config, key):
            raise ModelFormatError(f"{path}: missing key {key!r} (format_version {FORMAT_VERSION} needs "
                                   f"{', '.join(REQUIRED_KEYS)})")
    _check_tasks(config["tasks"], path)
    for name in (WEIGHTS_NAME, TOKENIZER_DIR):
        if not (directory / name).exists():
            raise ModelFormatError(f"{directory}: missing {name}, which a model directory holds beside {CONFIG_NAME}")
    return config


def _has_key(config: dict[str, Any], dotted: str) -> bool:
    """Whether `config` holds the dotted key ("context.mode": key "mode" of the object under "context")."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _check_tasks(tasks: Any, path: Path) -> None:
    """A `ModelFormatError` unless `tasks` is a non-empty list of task objects `Task.from_dict` reads."""
    if not isinstance(tasks, list) or not tasks:
        raise ModelFormatError(f"{path}: key 'tasks' must be a non-empty list of tasks, got {tasks!r}")
    known = {f.name for f in dataclasses.fields(Task)}
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            raise ModelFormatError(f"{path}: tasks[{i}] must be an object, got {task!r}")
        missing = [key for key in TASK_KEYS if key not in task]
        if missing:
            raise ModelFormatError(f"{path}: tasks[{i}] misses key {missing[0]!r} (a task needs "
                                   f"{', '.join(TASK_KEYS)})")
        unknown = sorted(set(task) - known)
        if unknown:
            raise ModelFormatError(f"{path}: tasks[{i}] has unknown key(s) {', '.join(unknown)}; this kold-span "
                                   f"knows {', '.join(sorted(known))}")


class Predictor:
    """Runs a trained multi-task model on texts and returns labels and character spans."""

    def __init__(self, model: MultiTaskModel, tokenizer: Any, tasks: Sequence[Task], *,
                 max_length: int = 128, stride: int = 32, context_mode: str = "auto",
                 max_turns: Optional[int] = None, snap: str = "morpheme", trim: bool = True,
                 morpheme_pretokenize: bool = False, perspective: Optional[dict[str, Any]] = None,
                 companions: Optional[dict[str, Companion]] = None, device: Union[str, torch.device] = "cpu",
                 precision: str = "auto", network: Optional[OnnxNetwork] = None):
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

    # -- saving and loading -------------------------------------------------------------
    def save_pretrained(self, directory: Union[str, Path]) -> Path:
        """Write config.json, model.safetensors and the tokenizer into `directory`."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        enc = self.encoder
        config = {
            "format_version": FORMAT_VERSION,
            "tasks": [t.to_dict() for t in self.tasks],
            "context": {"mode": enc.context_mode, "max_turns": enc.max_turns},
            "align": {"snap": self.snap.value, "trim": self.trim},
            "max_length": enc.max_length, "stride": enc.stride, "pooling": self.model.pooling,
            "morpheme_pretokenize": self.morpheme_pretokenize,
            "perspective": self.perspective,
            "ngram": sorted(self.companions),
            "encoder": self.model.encoder.config.to_dict(),
        }
        if isinstance(self.network, OnnxNetwork):  # the graph it runs goes along (a spaCy pipeline's copy, say)
            if self.network.path.resolve() != (directory / self.network.entry.file).resolve():
                shutil.copyfile(self.network.path, directory / self.network.entry.file)
            config[ONNX_KEY] = self.network.entry.to_dict()
        (directory / CONFIG_NAME).write_text(json.dumps(config, indent=1, ensure_ascii=False), encoding="utf-8")
        state = {k: v.detach().contiguous().cpu() for k, v in self.model.state_dict().items()}
        save_file(state, str(directory / WEIGHTS_NAME))
        save_tokenizer(self.tokenizer, directory / TOKENIZER_DIR)
        save_companions(self.companions, directory)
        return directory

    @classmethod
    def from_pretrained(cls, directory: Union[str, Path], device: str = "cpu", precision: str = "auto",
                        runtime: str = "auto") -> "Predictor":
        """Load a model directory written by `save_pretrained` (no pickle: safetensors and JSON only).

        `precision` is the network's at prediction (`resolve_precision`: "auto" is bf16 on a GPU and
        fp32 on any CPU; "bf16" on a CPU is faster where it has bf16 instructions, and changes some
        labels and spans); the weights stay float32. `runtime` is what runs
        the network (`runtimes.choose_runtime`): "torch", "onnx" (the graph `kold-span export`
        wrote into the directory, on the CPU) or "auto" (that graph when there is one, the device is
        the CPU and `precision` is auto; torch otherwise).

        Example:
            >>> Predictor.from_pretrained("no/such/model")
            Traceback (most recent call last):
            ...
            FileNotFoundError: model directory no/such/model does not exist
        """
        from safetensors.torch import load_file
        from transformers import AutoTokenizer

        directory = Path(directory)
        config = read_model_config(directory)
        device = checked_device(device)
        # torch never reads the graph: a directory whose graph went missing still loads, and exports again.
        entry = None if Runtime.parse(runtime, "runtime") is Runtime.TORCH else graph_entry(config, directory)
        chosen = choose_runtime(runtime, entry, directory, device, precision)
        tasks = [Task.from_dict(t) for t in config["tasks"]]
        tokenizer = AutoTokenizer.from_pretrained(str(directory / TOKENIZER_DIR))
        if config.get("morpheme_pretokenize"):
            attach_morpheme_pretokenizer(tokenizer)
        try:
            encoder = encoder_from_config(config["encoder"])
        except (KeyError, TypeError, ValueError) as err:
            raise ModelFormatError(f"{directory / CONFIG_NAME}: key 'encoder' does not describe an encoder "
                                   f"transformers can build ({err})") from err
        # Models saved before `model.pooling` existed read the first token.
        model = MultiTaskModel(encoder, tasks, pooling=config.get("pooling", "first"))
        try:
            model.load_state_dict(load_file(str(directory / WEIGHTS_NAME)))
        except RuntimeError as err:
            raise ModelFormatError(f"{directory / WEIGHTS_NAME}: the weights do not fit the model "
                                   f"{CONFIG_NAME} describes ({str(err).splitlines()[0]})") from err
        network = OnnxNetwork(directory / entry.file, entry, tasks) if chosen is Runtime.ONNX and entry else None
        return cls(model, tokenizer, tasks, max_length=config["max_length"], stride=config["stride"],
                   context_mode=config["context"]["mode"], max_turns=config["context"]["max_turns"],
                   snap=config["align"]["snap"], trim=config["align"]["trim"],
                   morpheme_pretokenize=bool(config.get("morpheme_pretokenize")),
                   perspective=config.get("perspective"),
                   companions=load_companions(directory, config.get("ngram", [])), device=device,
                   precision=precision, network=network)

    # -- prediction: prepare (CPU) → run_network → merge, overlapped by `Pipeline` ---------
    def prepare(self, texts: Sequence[str], contexts: Sequence[Context], batch_size: int = 32) -> PreparedChunk:
        """The CPU work before the network: morphemes, windows, and length-sorted batches collated into tensors."""
        prefetch_for(self.tokenizer, list(texts) + [turn for c in contexts for turn in context_turns(c)],
                     snap=self.snap.uses_morphemes)
        prepared = PreparedChunk(list(texts), list(contexts))
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
        self._fuse_companions(prepared.texts, prepared.contexts, merged)
        return merged

    def merged_outputs(self, texts: Sequence[str], contexts: Sequence[Context],
                       batch_size: int = 32) -> list[MergedExample]:
        """Per-example outputs with long texts' windows merged (the three stages in turn)."""
        prepared = self.prepare(texts, contexts, batch_size)
        return self.merge(prepared, self.run_network(prepared))

    def _fuse_companions(self, texts: Sequence[str], contexts: Sequence[Context],
                         merged: list[MergedExample]) -> None:
        """Replace each fused task's encoder probabilities by their mean with its n-gram model's."""
        joined = ["\n".join(context_turns(c)) for c in contexts]
        for task in self.tasks:
            companion = self.companions.get(task.name)
            if companion is None:
                continue
            for m, ngram in zip(merged, companion.ngram_probs(texts, joined)):
                m.sequence_probs[task.name] = companion.fuse_array(task.labels, m.sequence_probs[task.name], ngram)

    def format(self, text: str, merged: MergedExample) -> dict[str, Any]:
        """Labels with probabilities and spans `{type, start, end, text, score}`."""
        return prediction(self.tasks, merged, text, self.snap, self.trim)

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
        for _example, prediction in Pipeline(self, batch_size, perspective).run(examples):
            yield prediction


def checked_device(device: Union[str, torch.device]) -> torch.device:
    """`device` as a torch device; an `ArgumentError` for a name torch does not know or a GPU it cannot see.

    Example:
        >>> checked_device("cpu")
        device(type='cpu')
        >>> checked_device("gpu0")
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: device must be cpu, cuda or cuda:N, got 'gpu0'
    """
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise ArgumentError(f"device must be cpu, cuda or cuda:N, got {device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        build = "built without CUDA" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise ArgumentError(f"device {device}: torch sees no CUDA device here (torch {torch.__version__}, "
                            f"{build}); use cpu")
    return device


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
        problem = text_problem(text)
        if problem:
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
        raise ValueError(f"{count} texts but {len(contexts)} contexts")
    for i, context in enumerate(contexts):
        problem = context_problem(context)
        if problem:
            raise ArgumentError(f"contexts[{i}]: {problem}")
    return contexts

