"""The encoder fused with a TF-IDF n-gram model: a sequence task's probabilities as a weighted mean.

On a corpus of a thousand examples an n-gram logistic regression is often as good as a small
transformer, and the two make different mistakes. A task configured with ``fuse_ngram: true``
gets, after training, an `NgramBaseline` of its label; the fusion weight (1 = encoder only,
0 = n-gram only) and whether the n-gram also reads the context are chosen on the dev split
(with the n-gram fitted on train only, or it would look perfect on dev), then the n-gram is
refitted on train + dev. Labelled examples from elsewhere (`fuse_ngram_train`: say the other
Spanish variants for IroSvA mx) can be offered to the n-gram alone; dev decides whether it
takes them, since more data of a neighbouring kind helps an n-gram on one corpus and hurts it
on the next. The fitted n-gram is saved beside the model without pickle: its
vocabularies as JSON, its IDF and linear weights as safetensors.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from kold_span.config.choices import Problem
from kold_span.data.atomic import write_text_atomic
from kold_span.data.example import Context, Example, context_turns
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, ModelFormatError
from kold_span.models.kinds import MergedExample
from kold_span.models.kinds.problems import Prediction, Probs, label_problem
from kold_span.models.manifest import read_json
from kold_span.models.tasks import Task

# An n-gram model learns label values: not a soft task's vote shares.
NGRAM_PROBLEMS = tuple(p.value for p in Problem if p.label_valued)


def gold_label(example: Example, label: str, problem: Problem) -> Optional[Prediction]:
    """The example's `label` as a vocabulary string (single) or a sorted list of them (multi); None if missing."""
    value = example.labels.get(label)
    return None if value is None else label_problem(problem).gold_label(value)


def ngram_problem(problem: Problem) -> Problem:
    """`problem` (or its string value) as a `Problem` an n-gram model can learn (see `NGRAM_PROBLEMS`)."""
    if problem not in NGRAM_PROBLEMS:
        raise ArgumentError(f"problem must be one of {NGRAM_PROBLEMS}, got {problem!r}")
    return Problem(problem)


def labelled_examples(examples: Sequence[Example], label: str,
                      problem: Problem) -> tuple[list[Example], list[Prediction]]:
    """The examples that carry `label`, with their gold labels; an error when there are none."""
    pairs = [(ex, gold) for ex in examples if (gold := gold_label(ex, label, problem)) is not None]
    if not pairs:
        raise ArgumentError(f"no example has a label {label!r}; labels seen: "
                            f"{sorted({k for ex in examples for k in ex.labels})}")
    return [ex for ex, _ in pairs], [gold for _, gold in pairs]


def context_string(example: Example) -> str:
    """The example's context turns joined by newlines ("" when it has none)."""
    return "\n".join(context_turns(example.context))


class NgramBaseline:
    """TF-IDF character and word n-grams + logistic regression (one-vs-rest for multi-label)."""

    def __init__(self, label: str, problem: Problem = Problem.SINGLE, analyzers: Sequence[str] = ("char_wb", "word"),
                 char_ngram: tuple[int, int] = (2, 5), word_ngram: tuple[int, int] = (1, 2),
                 use_context: bool = False, C: float = 4.0, class_weight: Optional[str] = "balanced",
                 max_features: Optional[int] = None, min_df: int = 1, threshold: float = 0.5) -> None:
        """A TF-IDF + logistic-regression classifier of `label`, SINGLE (one label per example) or MULTI (a list of
        labels, each decided at `threshold`).

        `analyzers` are the TF-IDF vectorizers to union: "char_wb" (character n-grams inside word boundaries,
        `char_ngram`) and/or "word" (`word_ngram` of tokens of word characters, single characters included: many
        Korean words are one syllable); `max_features` caps each one's vocabulary. `use_context` adds the same
        vectorizers fitted separately on the context (turns joined), so context n-grams get their own weights.
        `C` and `class_weight` go to the logistic regression.

        Example:
            >>> train = [Example("1", "you idiot", labels={"off": True}),
            ...          Example("2", "nice day", labels={"off": False})]
            >>> NgramBaseline("off").fit(train).predict([Example("3", "idiot")])
            ['true']
        """
        self.problem = ngram_problem(problem)
        unknown = set(analyzers) - {"char_wb", "word"}
        if unknown or not analyzers:
            raise ArgumentError(f"analyzers must be a non-empty subset of ('char_wb', 'word'), got {list(analyzers)}")
        self.label = label
        self.analyzers = tuple(analyzers)
        self.char_ngram = tuple(char_ngram)
        self.word_ngram = tuple(word_ngram)
        self.use_context = use_context
        self.C = C
        self.class_weight = class_weight
        self.max_features = max_features
        self.min_df = min_df
        self.threshold = threshold
        self.pipeline_ = None
        self.labels_: tuple[str, ...] = ()

    def _vectorizers(self):
        """A fresh union of the configured TF-IDF vectorizers."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.pipeline import FeatureUnion

        common = dict(sublinear_tf=True, min_df=self.min_df, max_features=self.max_features, lowercase=True)
        parts = []
        if "char_wb" in self.analyzers:
            parts.append(("char", TfidfVectorizer(analyzer="char_wb", ngram_range=self.char_ngram, **common)))
        if "word" in self.analyzers:
            parts.append(("word", TfidfVectorizer(analyzer="word", ngram_range=self.word_ngram,
                                                  token_pattern=r"(?u)\b\w+\b", **common)))
        return FeatureUnion(parts)

    def _columns(self, examples: Sequence[Example]):
        """Texts (and contexts) as the object array the column transformer reads."""
        rows = [[ex.text, context_string(ex)] if self.use_context else [ex.text] for ex in examples]
        return np.array(rows, dtype=object).reshape(len(rows), 2 if self.use_context else 1)

    def fit(self, examples: Sequence[Example]) -> "NgramBaseline":
        """Fit the vectorizers and the classifier (examples without `label` are ignored); `labels_`: sorted labels."""
        from sklearn.compose import ColumnTransformer
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import MultiLabelBinarizer

        examples, golds = labelled_examples(examples, self.label, self.problem)
        if self.use_context and not any(context_string(ex).strip() for ex in examples):
            raise ArgumentError(f"use_context=True but none of the {len(examples)} training examples has a context")
        columns = [("text", self._vectorizers(), 0)]
        if self.use_context:
            columns.append(("context", self._vectorizers(), 1))
        classifier = LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=2000)
        if self.problem.thresholded:  # one binary classifier per label
            self.binarizer_ = MultiLabelBinarizer()
            targets = self.binarizer_.fit_transform(golds)
            self.labels_ = tuple(self.binarizer_.classes_)
            classifier = OneVsRestClassifier(classifier)
        else:
            targets = golds
            self.labels_ = tuple(sorted(set(golds)))
            if len(self.labels_) < 2:
                raise ArgumentError(f"label {self.label!r} has a single value {self.labels_[0]!r} in training; "
                                    f"a classifier needs at least two")
        self.pipeline_ = Pipeline([("features", ColumnTransformer(columns)), ("classifier", classifier)])
        self.pipeline_.fit(self._columns(examples), targets)
        return self

    def predict_proba(self, examples: Sequence[Example]) -> list[Probs]:
        """Per example, ``{label: probability}`` over `labels_`: summing to 1 for "single", each label on its own for
        "multi"."""
        if self.pipeline_ is None:
            raise RuntimeError("NgramBaseline.predict_proba called before fit")
        if not examples:
            return []
        matrix = self.pipeline_.predict_proba(self._columns(examples))
        columns = (self.labels_ if self.problem.thresholded
                   else tuple(str(c) for c in self.pipeline_.named_steps["classifier"].classes_))
        return [{name: float(p) for name, p in zip(columns, row)} for row in matrix]

    def predict(self, examples: Sequence[Example]) -> list[Prediction]:
        """The predicted label (single) or sorted labels at or above `threshold` (multi) of each example."""
        return [decode_probs(p, self.problem, self.threshold) for p in self.predict_proba(examples)]


def decode_probs(probs: Probs, problem: Problem, threshold: float = 0.5) -> Prediction:
    """Probabilities → the top label ("single"; ties: the smallest) or the labels ≥ threshold ("multi").

    Example:
        >>> decode_probs({"b": 0.4, "a": 0.4, "c": 0.2}, "single"), decode_probs({"b": 0.4, "a": 0.6}, "multi", 0.4)
        ('a', ['a', 'b'])
    """
    return label_problem(problem).decode_probs(probs, threshold)


def fuse_probs(probs_a: Sequence[Probs], probs_b: Sequence[Probs], weight: float) -> list[Probs]:
    """Interpolate two aligned lists of ``{label: probability}``: ``weight * A + (1 - weight) * B``, weight in [0, 1],
    over the union of both dicts' labels (a label a model does not score counts as 0 for it).

    Example:
        >>> fuse_probs([{"x": 1.0}], [{"x": 0.0, "y": 1.0}], 0.25)
        [{'x': 0.25, 'y': 0.75}]
    """
    if not 0.0 <= weight <= 1.0:
        raise ArgumentError(f"weight must be in [0, 1], got {weight}")
    if len(probs_a) != len(probs_b):
        raise ValueError(f"probs_a and probs_b differ in length: {len(probs_a)} != {len(probs_b)}")
    return [{name: weight * a.get(name, 0.0) + (1 - weight) * b.get(name, 0.0)
             for name in [*a, *(n for n in b if n not in a)]} for a, b in zip(probs_a, probs_b)]


NGRAM_DIR = "ngram"
STATE_VERSION = 1
STATE_KEYS = ("label", "problem", "use_context", "labels", "output", "vectorizers")  # what NgramScorer.load reads


class NgramScorer:
    """A fitted n-gram model reduced to what scoring needs: vectorizers and one linear layer.

    `from_baseline` takes a fitted `NgramBaseline`; `save` / `load` write and read it without
    pickle. `predict_proba` gives the same numbers as the baseline's (to ~1e-7 after a save, which
    stores the weights as float32).
    """

    def __init__(self, label: str, problem: Problem, use_context: bool, labels: Sequence[str],
                 output: str, vectorizers: list[dict[str, Any]], coef: np.ndarray, intercept: np.ndarray):
        self.label = label
        self.problem = ngram_problem(problem)
        self.use_context = use_context
        self.labels = tuple(labels)
        self.output = output  # "binary" (one logit for labels[1]), "softmax" or "sigmoid" (one per label)
        self.vectorizers = vectorizers  # [{"column": 0|1, "params": {...}, "vocabulary": [...], "idf": array}]
        self.coef = coef
        self.intercept = intercept
        self._built: Optional[list[Any]] = None

    @classmethod
    def from_baseline(cls, model: NgramBaseline) -> "NgramScorer":
        """The linear weights and vectorizers of a fitted `NgramBaseline`."""
        if model.pipeline_ is None:
            raise RuntimeError("NgramScorer.from_baseline needs a fitted NgramBaseline")
        vectorizers = []
        for _, union, column in model.pipeline_.named_steps["features"].transformers_:
            for _, vectorizer in union.transformer_list:
                params = {key: value for key, value in vectorizer.get_params().items()
                          if key in ("analyzer", "ngram_range", "sublinear_tf", "lowercase", "token_pattern")}
                params["ngram_range"] = list(params["ngram_range"])
                vocabulary = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
                vectorizers.append({"column": int(column), "params": params, "vocabulary": vocabulary,
                                    "idf": np.asarray(vectorizer.idf_, dtype=np.float64)})
        classifier = model.pipeline_.named_steps["classifier"]
        if model.problem.thresholded:
            rows, biases = [], []
            width = sum(len(v["vocabulary"]) for v in vectorizers)
            for estimator in classifier.estimators_:
                if hasattr(estimator, "coef_"):
                    rows.append(estimator.coef_[0])
                    biases.append(estimator.intercept_[0])
                else:  # a label constant in training: sklearn predicts that constant
                    rows.append(np.zeros(width))
                    biases.append(np.inf if float(np.ravel(estimator.y_)[0]) > 0.5 else -np.inf)
            coef, intercept, output = np.vstack(rows), np.asarray(biases), "sigmoid"
            labels = model.labels_
        else:
            coef, intercept = classifier.coef_, classifier.intercept_
            output = "binary" if len(classifier.classes_) == 2 else "softmax"
            labels = tuple(str(c) for c in classifier.classes_)
        return cls(model.label, model.problem, model.use_context, labels, output, vectorizers,
                   np.asarray(coef, dtype=np.float64), np.asarray(intercept, dtype=np.float64))

    def _vectorizer_objects(self) -> list[Any]:
        from sklearn.feature_extraction.text import TfidfVectorizer

        if self._built is None:
            self._built = []
            for spec in self.vectorizers:
                params = {**spec["params"], "ngram_range": tuple(spec["params"]["ngram_range"])}
                vectorizer = TfidfVectorizer(vocabulary=spec["vocabulary"], **params)
                vectorizer.idf_ = spec["idf"]
                self._built.append(vectorizer)
        return self._built

    def predict_proba(self, texts: Sequence[str], contexts: Sequence[str]) -> list[Probs]:
        """``{label: probability}`` per text; `contexts` are the context turns joined by newlines."""
        import scipy.sparse
        from scipy.special import expit, softmax

        if not texts:
            return []
        columns = (list(texts), list(contexts))
        blocks = [vectorizer.transform(columns[spec["column"]])
                  for spec, vectorizer in zip(self.vectorizers, self._vectorizer_objects())]
        logits = np.asarray(scipy.sparse.hstack(blocks).tocsr() @ self.coef.T) + self.intercept
        if self.output == "binary":
            positive = expit(logits[:, 0])
            matrix = np.stack([1.0 - positive, positive], axis=1)
        elif self.output == "softmax":
            matrix = softmax(logits, axis=1)
        else:
            matrix = expit(logits)
        return [{name: float(p) for name, p in zip(self.labels, row)} for row in matrix]

    def save(self, path_stem: Path, extra: Optional[dict[str, Any]] = None) -> None:
        """Write ``<stem>.json`` (settings, label order, vocabularies) and ``<stem>.safetensors`` (numbers)."""
        from safetensors.numpy import save_file

        path_stem.parent.mkdir(parents=True, exist_ok=True)
        meta = {"version": STATE_VERSION, "label": self.label, "problem": self.problem.value,
                "use_context": self.use_context, "labels": list(self.labels), "output": self.output,
                "vectorizers": [{"column": v["column"], "params": v["params"], "vocabulary": v["vocabulary"]}
                                for v in self.vectorizers], **(extra or {})}
        write_text_atomic(path_stem.with_suffix(".json"), json_text(meta))
        # float32 on disk halves the file (UnSmile, 11 labels: 57 MB → 28 MB); scoring casts back to float64.
        # C order: safetensors writes the buffer as is, and sklearn's coef_ can be Fortran-ordered.
        arrays = {"coef": np.ascontiguousarray(self.coef, dtype=np.float32),
                  "intercept": np.ascontiguousarray(self.intercept, dtype=np.float32)}
        arrays.update({f"idf_{i}": np.ascontiguousarray(v["idf"], dtype=np.float32)
                       for i, v in enumerate(self.vectorizers)})
        save_file(arrays, str(path_stem.with_suffix(".safetensors")))

    @classmethod
    def load(cls, path_stem: Path) -> tuple["NgramScorer", dict[str, Any]]:
        """Read what `save` wrote; returns the scorer and the whole JSON (with any `extra` keys)."""
        from safetensors.numpy import load_file

        meta_path, arrays_path = path_stem.with_suffix(".json"), path_stem.with_suffix(".safetensors")
        for path in (meta_path, arrays_path):
            if not path.is_file():
                raise ModelFormatError(f"missing n-gram file {path} (an n-gram model is a .json and a .safetensors)")
        meta = read_json(meta_path)
        if not isinstance(meta, dict) or meta.get("version") != STATE_VERSION:
            version = meta.get("version") if isinstance(meta, dict) else None
            raise ModelFormatError(f"{meta_path}: n-gram state version {version!r}, "
                                   f"this kold-span reads version {STATE_VERSION}")
        missing = [key for key in STATE_KEYS if key not in meta]
        if missing:
            raise ModelFormatError(f"{meta_path}: missing key {missing[0]!r} (version {STATE_VERSION} needs "
                                   f"{', '.join(STATE_KEYS)})")
        arrays = load_file(str(arrays_path))
        vectorizers = [{**spec, "idf": arrays[f"idf_{i}"].astype(np.float64)}
                       for i, spec in enumerate(meta["vectorizers"])]
        scorer = cls(meta["label"], meta["problem"], meta["use_context"], meta["labels"], meta["output"],
                     vectorizers, arrays["coef"].astype(np.float64), arrays["intercept"].astype(np.float64))
        return scorer, meta


@dataclass
class Companion:
    """An n-gram model fused into one sequence task: ``weight * encoder + (1 - weight) * n-gram``."""

    task: str
    weight: float
    scorer: NgramScorer
    dev_score: Optional[float] = None
    dev_scores: dict[float, float] = field(default_factory=dict)  # weight → dev metric, as chosen
    extra_examples: int = 0  # examples from `fuse_ngram_train` the n-gram was fitted with (0: none taken)

    @property
    def use_context(self) -> bool:
        return self.scorer.use_context

    def ngram_probs(self, texts: Sequence[str], contexts: Sequence[str]) -> list[Probs]:
        """The n-gram's probabilities (a text-only n-gram has no context vectorizer and ignores `contexts`)."""
        return self.scorer.predict_proba(texts, contexts)

    def fuse_array(self, labels: Sequence[str], encoder: np.ndarray, ngram: Probs) -> np.ndarray:
        """One example's fused probabilities in the task's label order (a label the n-gram lacks counts 0)."""
        other = np.array([ngram.get(name, 0.0) for name in labels], dtype=np.float64)
        return (self.weight * encoder.astype(np.float64) + (1.0 - self.weight) * other).astype(encoder.dtype)

    def summary(self) -> dict[str, Any]:
        return {"weight": self.weight, "ngram_context": self.use_context, "dev_score": self.dev_score,
                "dev_scores": {str(w): s for w, s in self.dev_scores.items()}, "extra_examples": self.extra_examples}

    def save(self, directory: Path) -> None:
        self.scorer.save(directory / NGRAM_DIR / self.task, {"task": self.task, **self.summary()})

    @classmethod
    def load(cls, directory: Path, task: str) -> "Companion":
        scorer, meta = NgramScorer.load(directory / NGRAM_DIR / task)
        if "weight" not in meta:
            raise ModelFormatError(f"{(directory / NGRAM_DIR / task).with_suffix('.json')}: missing key 'weight' "
                                   "(the fusion weight of the n-gram model)")
        return cls(task, float(meta["weight"]), scorer, meta.get("dev_score"),
                   {float(w): s for w, s in meta.get("dev_scores", {}).items()}, int(meta.get("extra_examples", 0)))


def fuse_companions(companions: dict[str, Companion], tasks: Sequence[Task], texts: Sequence[str],
                    contexts: Sequence[Context], merged: Sequence[MergedExample]) -> None:
    """Replace, in place, each fused task's encoder probabilities in `merged` by their fusion with its n-gram's."""
    joined = ["\n".join(context_turns(c)) for c in contexts]
    for task in tasks:
        companion = companions.get(task.name)
        if companion is None:
            continue
        for m, ngram in zip(merged, companion.ngram_probs(texts, joined)):
            m.sequence_probs[task.name] = companion.fuse_array(task.labels, m.sequence_probs[task.name], ngram)
