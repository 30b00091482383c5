"""A trained model is a directory: config + safetensors weights + tokenizer.

Usage (after `make demo`)::

    from kold_span import Predictor
    predictor = Predictor.from_pretrained("checkpoints/demo/demo/model")
    predictor.predict(["이 쓰레기 같은 정치인들"], contexts=["국회 본회의 통과"])[0]["spans"]
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import torch

from kold_span.config.choices import Problem, Runtime, SnapMode, TaskKind
from kold_span.config.schema import CONTEXT_MODES, POOLINGS
from kold_span.data.example import Context, Example, context_problem, context_turns, text_problem
from kold_span.data.perspectives import check_perspective, verbalise, with_perspective
from kold_span.errors import ArgumentError, KoldSpanError, ModelFormatError
from kold_span.models.backbones import (attach_morpheme_pretokenizer, encoder_from_config, save_tokenizer)
from kold_span.models.decoding import MergedExample, merge_windows, prediction
from kold_span.models.manifest import check_contained, directory_identity, inside, verify_manifest, write_manifest
from kold_span.models.network import MultiTaskModel
from kold_span.models.ngram import Companion, fuse_companions, load_companions, save_companions
from kold_span.models.tasks import Task
from kold_span.models.windows import InputEncoder, collate
from kold_span.text.morphemes import prefetch_for
from kold_span.text.normalize import Normalized, check_steps, normalize, normalize_context
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
    _check_values(config, path)
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


def _check_values(config: dict[str, Any], path: Path) -> None:
    """A `ModelFormatError` naming the first value of config.json a model cannot run with (as a training config's)."""
    def need(ok: bool, key: str, expected: str) -> None:
        if not ok:
            value = repr(_get(config, key))
            raise ModelFormatError(f"{path}: key {key!r} must be {expected}, got {value[:60]}")

    def is_int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    need(is_int(config["max_length"]) and config["max_length"] >= 8, "max_length", "an integer of at least 8")
    need(is_int(config["stride"]) and 0 <= config["stride"] < config["max_length"], "stride",
         "an integer from 0 to below max_length")
    need(config["context"]["mode"] in CONTEXT_MODES, "context.mode", f"one of {', '.join(CONTEXT_MODES)}")
    turns = config["context"]["max_turns"]
    need(turns is None or (is_int(turns) and turns >= 0), "context.max_turns", "null or an integer of at least 0")
    need(config["align"]["snap"] in SnapMode.values(), "align.snap", f"one of {', '.join(SnapMode.values())}")
    need(isinstance(config["align"]["trim"], bool), "align.trim", "true or false")
    need(config.get("pooling", "first") in POOLINGS, "pooling", f"one of {', '.join(POOLINGS)}")
    need(isinstance(config.get("morpheme_pretokenize", False), bool), "morpheme_pretokenize", "true or false")
    ngram = config.get("ngram", [])
    need(isinstance(ngram, list) and all(isinstance(name, str) for name in ngram), "ngram", "a list of task names")
    need(isinstance(config["encoder"], dict), "encoder", "an object (an encoder's config)")
    if "auto_map" in config["encoder"]:
        raise ModelFormatError(f"{path}: key 'encoder' names custom code ('auto_map'); a kold-span model "
                               "directory is data and never runs code from it")
    tasks = config["tasks"]
    names = [task["name"] for task in tasks]
    for i, task in enumerate(tasks):
        where = f"{path}: tasks[{i}]"
        if not isinstance(task["name"], str) or not task["name"] or "." in task["name"] or task["name"] in names[:i]:
            raise ModelFormatError(f"{where}: name {repr(task['name'])[:60]} must be a non-empty string without '.' "
                                   "that no other task has")
        if task["kind"] not in TaskKind.values():
            raise ModelFormatError(f"{where}: kind {repr(task['kind'])[:60]} must be one of "
                                   f"{', '.join(TaskKind.values())}")
        _check_task_fields(task, where)
        gate = task.get("gate")
        if gate is not None and gate not in names:
            raise ModelFormatError(f"{where}: gate {gate!r} is no task of the model "
                                   f"(its tasks: {', '.join(map(str, names))})")
    for name in ngram:
        if name not in names:
            raise ModelFormatError(f"{path}: key 'ngram' names {name!r}, no task of the model")


def _check_task_fields(task: dict[str, Any], where: str) -> None:
    """A `ModelFormatError` naming the first field of a saved task of the wrong type."""
    def numbers(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)

    labels = task.get("labels", [])
    checks = [
        ("source", isinstance(task["source"], str), "a string"),
        ("problem", task.get("problem", "single") in Problem.values(), f"one of {', '.join(Problem.values())}"),
        ("weight", numbers([task.get("weight", 1.0)]), "a number"),
        ("labels", isinstance(labels, list) and all(isinstance(v, str) for v in labels)
         and len(set(labels)) == len(labels), "a list of distinct strings"),
        ("gate", task.get("gate") is None or isinstance(task.get("gate"), str), "null or a task name"),
        ("class_weights", numbers(task.get("class_weights", [])), "a list of numbers"),
        ("thresholds", numbers(task.get("thresholds", [])), "a list of numbers"),
    ]
    for key, ok, expected in checks:
        if not ok:
            raise ModelFormatError(f"{where}: {key} must be {expected}, got {repr(task.get(key))[:60]}")


def _get(config: dict[str, Any], dotted: str) -> Any:
    """The value under a dotted key of config.json (`_has_key` found it), or None."""
    node: Any = config
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _check_no_code(tokenizer_dir: Path) -> None:
    """A `ModelFormatError` if the tokenizer's configs name custom code (`auto_map`), which transformers would run."""
    for name in ("tokenizer_config.json", "config.json"):
        path = tokenizer_dir / name
        if not path.is_file():
            continue
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ModelFormatError(f"{path}: not a JSON file ({err})") from None
        if isinstance(config, dict) and "auto_map" in config:
            raise ModelFormatError(f"{path}: names custom code ('auto_map'); a kold-span model directory is data "
                                   "and never runs code from it")


def _load_tokenizer(tokenizer_dir: Path) -> Any:
    """The saved fast tokenizer, remote code disabled; any failure a `ModelFormatError` naming the folder or file."""
    from transformers import AutoTokenizer

    _check_no_code(tokenizer_dir)
    if not tokenizer_dir.is_dir() or not any(tokenizer_dir.iterdir()):
        raise ModelFormatError(f"{tokenizer_dir}: not a saved tokenizer (missing or empty folder)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), trust_remote_code=False, local_files_only=True)
    except Exception as err:  # a library's raw error on a bad file (JSON, vocab, a missing class) becomes one line
        broken = tokenizer_dir / "tokenizer.json"
        named = broken if broken.exists() else tokenizer_dir
        raise ModelFormatError(f"{named}: the tokenizer cannot be loaded ({type(err).__name__}: "
                               f"{str(err).splitlines()[0][:200] if str(err) else ''})") from err
    if not getattr(tokenizer, "is_fast", False):
        raise ModelFormatError(f"{tokenizer_dir}: not a fast tokenizer (tokenizer.json); kold-span needs its offsets")
    try:  # a tokenizer that loads can still fail at its first call (a config value of the wrong type)
        tokenizer("가 a", "b", return_offsets_mapping=True, verbose=False).sequence_ids()
        tokenizer(["가 a"], add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    except Exception as err:
        raise ModelFormatError(f"{tokenizer_dir}: the tokenizer loads but cannot tokenize ({type(err).__name__}: "
                               f"{str(err)[:200]})") from err
    return tokenizer


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
        if self.normalize is not None:  # absent: a model that reads text as written, as before the key
            config["normalize"] = {"steps": list(self.normalize)}
        if isinstance(self.network, OnnxNetwork):  # the graph it runs goes along (a spaCy pipeline's copy, say)
            if self.network.path.resolve() != (directory / self.network.entry.file).resolve():
                shutil.copyfile(self.network.path, directory / self.network.entry.file)
            config[ONNX_KEY] = self.network.entry.to_dict()
        (directory / CONFIG_NAME).write_text(json.dumps(config, indent=1, ensure_ascii=False), encoding="utf-8")
        state = {k: v.detach().contiguous().cpu() for k, v in self.model.state_dict().items()}
        save_file(state, str(directory / WEIGHTS_NAME))
        save_tokenizer(self.tokenizer, directory / TOKENIZER_DIR)
        save_companions(self.companions, directory)
        write_manifest(directory)  # last: the SHA-256 of every file above, checked at load
        return directory

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
        if not isinstance(directory, (str, os.PathLike)):
            raise ArgumentError(f"directory must be a path (str or Path), got {type(directory).__name__}")
        directory = Path(directory)
        config = read_model_config(directory)
        check_contained(directory)
        digests = verify_manifest(directory) if verify else None
        try:
            tasks = [Task.from_dict(t) for t in config["tasks"]]
        except (TypeError, ValueError) as err:
            raise ModelFormatError(f"{directory / CONFIG_NAME}: key 'tasks' holds a task kold-span cannot "
                                   f"read ({err})") from err
        _check_gates(tasks, directory / CONFIG_NAME)
        device = checked_device(device)
        # torch never reads the graph: a directory whose graph went missing still loads, and exports again.
        entry = None if Runtime.parse(runtime, "runtime") is Runtime.TORCH else graph_entry(config, directory)
        if entry is not None:
            inside(directory, entry.file, f"{directory / CONFIG_NAME}: key '{ONNX_KEY}'")
        chosen = choose_runtime(runtime, entry, directory, device, precision)
        tokenizer = _load_tokenizer(directory / TOKENIZER_DIR)
        if config.get("morpheme_pretokenize"):
            attach_morpheme_pretokenizer(tokenizer)
        try:
            encoder = encoder_from_config(config["encoder"])
        except Exception as err:  # whichever raw error transformers' checks of a config value raise
            if isinstance(err, KoldSpanError):
                raise
            raise ModelFormatError(f"{directory / CONFIG_NAME}: key 'encoder' does not describe an encoder "
                                   f"transformers can build ({err})") from err
        # Models saved before `model.pooling` existed read the first token.
        try:
            model = MultiTaskModel(encoder, tasks, pooling=config.get("pooling", "first"))
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, KoldSpanError):
                raise
            raise ModelFormatError(f"{directory / CONFIG_NAME}: key 'tasks' describes heads that cannot be built "
                                   f"({type(err).__name__}: {str(err)[:200]})") from err
        weights = _load_weights(directory / WEIGHTS_NAME)
        try:
            model.load_state_dict(weights)
        except RuntimeError as err:
            raise ModelFormatError(f"{directory / WEIGHTS_NAME}: the weights do not fit the model "
                                   f"{CONFIG_NAME} describes ({str(err).splitlines()[0]})") from err
        _check_forward(model, tokenizer, directory / CONFIG_NAME)
        for name in config.get("ngram", []):
            inside(directory, f"ngram/{name}", f"{directory / CONFIG_NAME}: key 'ngram'")
        network = OnnxNetwork(directory / entry.file, entry, tasks) if chosen is Runtime.ONNX and entry else None
        predictor = cls(model, tokenizer, tasks, max_length=config["max_length"], stride=config["stride"],
                        context_mode=config["context"]["mode"], max_turns=config["context"]["max_turns"],
                        snap=config["align"]["snap"], trim=config["align"]["trim"],
                        morpheme_pretokenize=bool(config.get("morpheme_pretokenize")),
                        perspective=config.get("perspective"),
                        companions=load_companions(directory, config.get("ngram", [])), device=device,
                        precision=precision, normalize=_normalize_steps(config, directory), network=network)
        predictor.source, predictor._digests = directory, digests
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
        self._fuse_companions(prepared.texts, prepared.contexts, merged)
        for m, n in zip(merged, prepared.normalized or ()):
            m.normalized = n
        return merged

    def merged_outputs(self, texts: Sequence[str], contexts: Sequence[Context],
                       batch_size: int = 32) -> list[MergedExample]:
        """Per-example outputs with long texts' windows merged (the three stages in turn)."""
        prepared = self.prepare(texts, contexts, batch_size)
        return self.merge(prepared, self.run_network(prepared))

    def _fuse_companions(self, texts: Sequence[str], contexts: Sequence[Context],
                         merged: list[MergedExample]) -> None:
        """Replace each fused task's encoder probabilities by their mean with its n-gram model's."""
        fuse_companions(self.companions, self.tasks, texts, contexts, merged)

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
        for _example, prediction in Pipeline(self, batch_size, perspective).run(examples):
            yield prediction


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


def _normalize_steps(config: dict[str, Any], directory: Path) -> Optional[tuple[str, ...]]:
    """The normalization steps config.json names (key `normalize.steps`), None without the key."""
    section = config.get("normalize")
    if section is None:
        return None
    steps = section.get("steps") if isinstance(section, dict) else None
    if not isinstance(steps, list):
        raise ModelFormatError(f"{directory / CONFIG_NAME}: key 'normalize' must be an object with a list "
                               f"'steps', got {section!r}")
    try:
        return check_steps(steps)
    except ValueError as err:
        raise ModelFormatError(f"{directory / CONFIG_NAME}: key 'normalize.steps': {err}") from None


def _check_gates(tasks: Sequence[Task], path: Path) -> None:
    """A `ModelFormatError` unless each span task's gate is a true/false sequence task of the model."""
    by_name = {task.name: task for task in tasks}
    for task in tasks:
        if task.gate is not None and not by_name[task.gate].is_boolean:
            raise ModelFormatError(f"{path}: task {task.name!r}: gate {task.gate!r} must be a true/false task, "
                                   f"its labels are {list(by_name[task.gate].labels)}")


def _check_forward(model: MultiTaskModel, tokenizer: Any, path: Path) -> None:
    """One tiny forward pass at load: an encoder config value that builds but cannot run is a `ModelFormatError`.

    transformers checks few of an encoder config's values when it builds the model; a wrong type
    (a float for a list, a string for a number) shows only when it runs, which would be mid-way
    through a user's file.
    """
    enc = tokenizer("가", "a", verbose=False)
    inputs = [torch.tensor([enc[key]]) for key in ("input_ids", "attention_mask")]
    types = enc.get("token_type_ids")
    try:
        with torch.inference_mode():
            model.eval()(*inputs, torch.tensor([types]) if types is not None else None)
    except Exception as err:
        raise ModelFormatError(f"{path}: key 'encoder' describes an encoder that cannot run "
                               f"({type(err).__name__}: {str(err)[:200]})") from err


def _load_weights(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a model.safetensors; a truncated or corrupt file is a `ModelFormatError` naming it."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise ModelFormatError(f"{path}: not a readable safetensors file ({str(err).splitlines()[0][:200]}); "
                               "truncated or corrupt? copy the model directory again") from err


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
        raise ArgumentError(f"contexts: {len(contexts)} contexts for {count} texts; pass one context per text "
                            "(None where a text has none)")
    for i, context in enumerate(contexts):
        problem = context_problem(context)
        if problem:
            raise ArgumentError(f"contexts[{i}]: {problem}")
    return contexts

