"""A trained model is a directory: config.json, model.safetensors, the tokenizer, n-gram models, a manifest.

`read_model_dir` checks what costs little first (`format_version`, keys and values, no link out, the
manifest: `models.manifest`), `ModelDir.load_network` builds the network, `write_model_dir` writes a
directory. How a predictor's settings are named in config.json is `inference.predictor.PredictorSettings`'s.

Example:
    >>> read_model_dir("no/such/model")
    Traceback (most recent call last):
    ...
    FileNotFoundError: model directory no/such/model does not exist
"""
from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import torch

from kold_span.config.choices import Problem, SnapMode, TaskKind
from kold_span.config.schema import CONTEXT_MODES, POOLINGS
from kold_span.data.atomic import replace_directory, write_text_atomic
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, KoldSpanError, ModelFormatError
from kold_span.models.backbones import (attach_morpheme_pretokenizer, check_encoder_size, check_vocabulary,
                                        encoder_from_config, save_tokenizer)
from kold_span.models.confidence import knots_problem, label_maps_problem
from kold_span.models.manifest import (MANIFEST_NAME, carry_over, check_contained, inside, read_json,
                                      verify_manifest, write_manifest)
from kold_span.models.network import MultiTaskModel
from kold_span.models.ngram import Companion
from kold_span.models.tasks import Task
from kold_span.text.normalize import check_steps

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
TOKENIZER_DIR = "tokenizer"
FORMAT_VERSION = 1
# The keys of config.json a model of FORMAT_VERSION cannot be read without ("a.b": key b inside object a);
# pooling, morpheme_pretokenize, perspective and ngram came later and have defaults.
REQUIRED_KEYS = ("tasks", "context.mode", "context.max_turns", "align.snap", "align.trim", "max_length", "stride",
                 "encoder.model_type")
TASK_KEYS = ("name", "kind", "source")
MODEL_DIRECTORY = "a kold-span model directory"  # what `write_model_dir` replaces without `overwrite`
# Beside a config.json, what makes a folder a model directory no output may be written into.
MODEL_MARKERS = (WEIGHTS_NAME, MANIFEST_NAME, "pytorch_model.bin")
_MISSING = object()


@dataclass(frozen=True)
class ModelDir:
    """A model directory whose config.json, links, manifest and tasks are checked (`read_model_dir`)."""

    path: Path
    config: dict[str, Any]
    tasks: list[Task]
    digests: Optional[dict[str, str]]  # its files' SHA-256, when the manifest was checked

    def load_network(self) -> tuple[MultiTaskModel, Any]:
        """The network with its weights, and the tokenizer; a file or value that fails is a `ModelFormatError`."""
        config, path = self.config, self.path / CONFIG_NAME
        tokenizer = _load_tokenizer(self.path / TOKENIZER_DIR)
        if config.get("morpheme_pretokenize"):
            attach_morpheme_pretokenizer(tokenizer)
        try:
            encoder = encoder_from_config(config["encoder"])
        except Exception as err:  # whichever raw error transformers' checks of a config value raise
            if isinstance(err, KoldSpanError):
                raise
            raise ModelFormatError(f"{path}: key 'encoder' does not describe an encoder "
                                   f"transformers can build ({err})") from err
        # Models saved before `model.pooling` existed read the first token.
        try:
            model = MultiTaskModel(encoder, self.tasks, pooling=config.get("pooling", "first"))
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, KoldSpanError):
                raise
            raise ModelFormatError(f"{path}: key 'tasks' describes heads that cannot be built "
                                   f"({type(err).__name__}: {str(err)[:200]})") from err
        weights = _load_weights(self.path / WEIGHTS_NAME)
        try:
            model.load_state_dict(weights)
        except RuntimeError as err:
            raise ModelFormatError(f"{self.path / WEIGHTS_NAME}: the weights do not fit the model "
                                   f"{CONFIG_NAME} describes ({str(err).splitlines()[0]})") from err
        _check_forward(model, tokenizer, path, config["max_length"])
        return model, tokenizer

    def companions(self) -> dict[str, Companion]:
        """The n-gram models fused into tasks (key `ngram`), by task name."""
        names = self.config.get("ngram", [])
        for name in names:
            inside(self.path, f"ngram/{name}", f"{self.path / CONFIG_NAME}: key 'ngram'")
        return {name: Companion.load(self.path, name) for name in names}


def read_model_dir(directory: Union[str, Path], verify: bool = True) -> ModelDir:
    """A model directory's config.json and tasks, checked, and no link out; its manifest checked unless `verify=False`.

    A `directory` that is no path is an `ArgumentError`, a missing one a FileNotFoundError; a bad config.json
    (`read_model_config`), a link out, a file that differs from the manifest, or a task kold-span cannot read, a
    `ModelFormatError` naming the file and the key.
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
    return ModelDir(directory, config, tasks, digests)


def write_model_dir(directory: Union[str, Path], config: dict[str, Any], model: MultiTaskModel, tokenizer: Any,
                    companions: dict[str, Companion], copies: Optional[dict[str, Path]] = None,
                    overwrite: bool = False) -> Path:
    """Write config.json (`config` after its `format_version`), the weights, the tokenizer, the n-gram models,
    `copies` ({name in the directory: file}, an exported graph) and, last, the manifest; returns `directory`.

    The directory is built beside `directory` and swapped in whole (`data.atomic.replace_directory`):
    an error or Ctrl-C midway leaves the model that was there loading. A non-empty `directory` that is
    no model directory (`is_model_dir`) is refused with an `OutputTargetError` unless `overwrite`.
    """
    from safetensors.torch import save_file

    with replace_directory(directory, is_model_dir, MODEL_DIRECTORY, overwrite) as staging:
        for name, source in (copies or {}).items():
            shutil.copyfile(source, inside(staging, name, "copies"))
        config = {"format_version": FORMAT_VERSION, **config}
        write_text_atomic(staging / CONFIG_NAME, json_text(config, indent=1, what=str(Path(directory) / CONFIG_NAME)))
        state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        save_file(state, str(staging / WEIGHTS_NAME))
        save_tokenizer(tokenizer, staging / TOKENIZER_DIR)
        for companion in companions.values():
            companion.save(staging)
        write_manifest(staging)  # last: the SHA-256 of every file above, checked at load
    return Path(directory)


def rewrite_config(source: Union[str, Path], target: Union[str, Path], config: dict[str, Any],
                   overwrite: bool = False) -> Path:
    """`source`'s files with `config` as its config.json, written as `target` and signed anew; returns `target`.

    `source`'s manifest is checked first (a damaged model is not re-signed); `target` is replaced
    whole (`data.atomic.replace_directory`), so `target == source` edits a model in place safely.
    A non-empty `target` that is no model directory is refused unless `overwrite`.
    """
    source = Path(source)
    read_model_config(source)
    verify_manifest(source)
    with replace_directory(target, is_model_dir, MODEL_DIRECTORY, overwrite) as staging:
        carry_over(source, staging, {CONFIG_NAME})
        write_text_atomic(staging / CONFIG_NAME, json_text(config, indent=1, what=str(Path(target) / CONFIG_NAME)))
        write_manifest(staging)
    return Path(target)


def is_model_dir(directory: Union[str, Path]) -> bool:
    """Whether `directory` is a kold-span model directory (its config.json an object with `format_version` and
    `tasks`), whole or damaged: what `write_model_dir` replaces without `overwrite`."""
    try:
        config = read_json(Path(directory) / CONFIG_NAME)
    except (OSError, ModelFormatError):
        return False
    return isinstance(config, dict) and "format_version" in config and "tasks" in config


def enclosing_model_dir(path: Union[str, Path]) -> Optional[Path]:
    """The model directory `path` is in (or is), if any: the nearest folder holding a config.json beside weights or
    a manifest (a kold-span model, or an encoder directory of transformers), links resolved.

    Example:
        >>> enclosing_model_dir("no/such/file.jsonl") is None
        True
    """
    resolved = Path(os.path.realpath(path))
    for folder in (resolved, *resolved.parents):
        if (folder / CONFIG_NAME).is_file() and any((folder / name).is_file() for name in MODEL_MARKERS):
            return folder
    return None


def read_model_config(directory: Union[str, Path]) -> dict[str, Any]:
    """The config.json of a model directory, checked: its format version, the keys it needs and the files beside it.

    A missing `directory` is a FileNotFoundError; no config.json, weights or tokenizer in it, a format_version other
    than FORMAT_VERSION, or a missing key, a `ModelFormatError` naming the file and the key.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"model directory {directory} does not exist")
    path = directory / CONFIG_NAME
    if not path.is_file():
        raise ModelFormatError(f"{directory} is not a kold-span model directory (no {CONFIG_NAME}); "
                               f"train one with `kold-span train CONFIG` and pass its model/ folder")
    config = read_json(path)
    if not isinstance(config, dict):
        raise ModelFormatError(f"{path}: expected a JSON object of keys, got {type(config).__name__}")
    if "format_version" not in config and (directory / "model" / CONFIG_NAME).is_file():
        raise ModelFormatError(f"{directory} is a training run's folder, not a model directory: pass its model "
                               f"folder, {directory / 'model'}")
    if "format_version" not in config:
        raise ModelFormatError(f"{path}: missing key 'format_version' (this kold-span reads format_version "
                               f"{FORMAT_VERSION})")
    version = config["format_version"]
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise ModelFormatError(f"{path}: format_version {version!r} is not supported; this kold-span reads "
                               f"format_version {FORMAT_VERSION} (a model saved by another version of kold-span?)")
    for key in REQUIRED_KEYS:
        if _get(config, key, _MISSING) is _MISSING:
            raise ModelFormatError(f"{path}: missing key {key!r} (format_version {FORMAT_VERSION} needs "
                                   f"{', '.join(REQUIRED_KEYS)})")
    _check_tasks(config["tasks"], path)
    _check_values(config, path)
    for name in (WEIGHTS_NAME, TOKENIZER_DIR):
        if not (directory / name).exists():
            raise ModelFormatError(f"{directory}: missing {name}, which a model directory holds beside {CONFIG_NAME}")
    return config


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
    section = config.get("normalize")  # absent or null: a model that reads text as written
    steps = section.get("steps") if isinstance(section, dict) else None
    need(section is None or isinstance(steps, list), "normalize", "an object with a list 'steps'")
    try:
        check_steps(steps or ())
    except ValueError as err:
        raise ModelFormatError(f"{path}: key 'normalize.steps': {err}") from None
    if "auto_map" in config["encoder"]:
        raise ModelFormatError(f"{path}: key 'encoder' names custom code ('auto_map'); a kold-span model "
                               "directory is data and never runs code from it")
    check_encoder_size(config["encoder"], f"{path}: key 'encoder'", ModelFormatError)
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
        ("temperature", numbers([task.get("temperature", 1.0)]) and 0 < task.get("temperature", 1.0) < float("inf"),
         "a positive number"),
        ("confidence_map", knots_problem(task.get("confidence_map", [])) is None,
         f"a confidence map ({knots_problem(task.get('confidence_map', []))})"),
        ("label_maps", label_maps_problem(task.get("label_maps", []), len(labels)) is None,
         f"a list of confidence maps ({label_maps_problem(task.get('label_maps', []), len(labels))})"),
        ("decision", decision_problem(task.get("decision")) is None,
         f"null or a decision policy ({decision_problem(task.get('decision'))})"),
    ]
    for key, ok, expected in checks:
        if not ok:
            raise ModelFormatError(f"{where}: {key} must be {expected}, got {repr(task.get(key))[:60]}")


BANDS = ("remove", "review")  # a decision policy's bands, strictest first


def decision_problem(decision: Any) -> Optional[str]:
    """What is wrong with a saved task's decision policy, or None when it is null or a valid one.

    A policy is {"label": str or null, "remove": band or null, "review": band or null}; a band is an
    object whose "threshold" is a number in [0, 1] (what it promised sits beside it); review's threshold is at
    most remove's.

    Example:
        >>> decision_problem({"label": "true", "remove": {"threshold": 0.9}, "review": {"threshold": 0.4}}) is None
        True
        >>> decision_problem({"label": "true", "remove": {"threshold": 0.3}, "review": {"threshold": 0.4}})
        "review's threshold 0.4 is above remove's 0.3"
    """
    if decision is None:
        return None
    if not isinstance(decision, dict) or not set(decision) <= {"label", *BANDS}:
        return "an object of label, remove and review"
    if decision.get("label") is not None and not isinstance(decision["label"], str):
        return "label must be a string"
    thresholds = {}
    for band in BANDS:
        value = decision.get(band)
        if value is None:
            continue
        threshold = value.get("threshold") if isinstance(value, dict) else None
        if not (isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and 0 <= threshold <= 1):
            return f"{band} must be an object with a threshold in [0, 1]"
        thresholds[band] = threshold
    if len(thresholds) == 2 and thresholds["review"] > thresholds["remove"]:
        return f"review's threshold {thresholds['review']} is above remove's {thresholds['remove']}"
    return None


def _get(config: dict[str, Any], dotted: str, default: Any = None) -> Any:
    """The value under a dotted key of config.json ("context.mode": key "mode" of the object under "context")."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _check_no_code(tokenizer_dir: Path) -> None:
    """A `ModelFormatError` if the tokenizer's configs name custom code (`auto_map`), which transformers would run."""
    for name in ("tokenizer_config.json", "config.json"):
        path = tokenizer_dir / name
        if not path.is_file():
            continue
        config = read_json(path)
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


def _check_gates(tasks: Sequence[Task], path: Path) -> None:
    """A `ModelFormatError` unless each span task's gate is a true/false sequence task of the model."""
    by_name = {task.name: task for task in tasks}
    for task in tasks:
        if task.gate is not None and not by_name[task.gate].is_boolean:
            raise ModelFormatError(f"{path}: task {task.name!r}: gate {task.gate!r} must be a true/false task, "
                                   f"its labels are {list(by_name[task.gate].labels)}")


def _check_forward(model: MultiTaskModel, tokenizer: Any, path: Path, max_length: int) -> None:
    """Two forward passes at load, a tiny one and one of a whole window: what would fail or give NaN mid-way through
    a user's file is a `ModelFormatError` now.

    transformers checks few of an encoder config's values when it builds the model; a wrong type
    (a float for a list, a string for a number) shows only when it runs, a `max_length` longer
    than the encoder's position table only on a long text, a tokenizer larger than the embedding
    table only on a rare token, and weights or a config value (layer_norm_eps below 0) that give
    NaN in every probability only in the output.
    """
    check_vocabulary(tokenizer, model.encoder, str(path), ModelFormatError)
    enc = tokenizer("가", "a", verbose=False)
    inputs = [torch.tensor([enc[key]]) for key in ("input_ids", "attention_mask")]
    types = enc.get("token_type_ids")
    # A window of max_length tokens, none of them padding (RoBERTa-style encoders number only those).
    filler = next(i for i in (tokenizer.cls_token_id, tokenizer.bos_token_id, tokenizer.unk_token_id, 0)
                  if i is not None)
    window = torch.full((1, max_length), filler, dtype=torch.long)
    with torch.inference_mode():
        try:
            logits = model.eval()(*inputs, torch.tensor([types]) if types is not None else None)
        except Exception as err:
            raise ModelFormatError(f"{path}: key 'encoder' describes an encoder that cannot run "
                                   f"({type(err).__name__}: {str(err)[:200]})") from err
        try:
            model(window, torch.ones_like(window), torch.zeros_like(window) if types is not None else None)
        except (IndexError, RuntimeError) as err:
            limit = model.encoder.config.to_dict().get("max_position_embeddings")
            raise ModelFormatError(f"{path}: key 'max_length' ({max_length}) is longer than the encoder reads "
                                   f"(max_position_embeddings: {limit}) ({type(err).__name__}: "
                                   f"{str(err).splitlines()[0][:150] if str(err) else ''})") from err
    broken = [name for name, value in logits.items() if not bool(torch.isfinite(value).all())]
    if broken:
        raise ModelFormatError(f"{path}: the model's outputs for task(s) {', '.join(broken)} are NaN or infinite "
                               "(its weights hold NaN, or the key 'encoder' a value such as layer_norm_eps below 0); "
                               "it cannot predict")


def _load_weights(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a model.safetensors; a truncated or corrupt file is a `ModelFormatError` naming it."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise ModelFormatError(f"{path}: not a readable safetensors file ({str(err).splitlines()[0][:200]}); "
                               "truncated or corrupt? copy the model directory again") from err
