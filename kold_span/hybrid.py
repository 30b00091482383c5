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

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from kold_span.baselines import HybridScorer, Metric, NgramBaseline, Probs, context_string
from kold_span.data import Example
from kold_span.tasks import label_str

NGRAM_DIR = "ngram"
STATE_VERSION = 1


class NgramScorer:
    """A fitted n-gram model reduced to what scoring needs: vectorizers and one linear layer.

    `from_baseline` takes a fitted `NgramBaseline`; `save` / `load` write and read it without
    pickle. `predict_proba` gives the same numbers as the baseline's (to ~1e-7 after a save, which
    stores the weights as float32).
    """

    def __init__(self, label: str, problem: str, use_context: bool, labels: Sequence[str],
                 output: str, vectorizers: list[dict[str, Any]], coef: np.ndarray, intercept: np.ndarray):
        self.label = label
        self.problem = problem
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
        if model.problem == "multi":
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
        meta = {"version": STATE_VERSION, "label": self.label, "problem": self.problem,
                "use_context": self.use_context, "labels": list(self.labels), "output": self.output,
                "vectorizers": [{"column": v["column"], "params": v["params"], "vocabulary": v["vocabulary"]}
                                for v in self.vectorizers], **(extra or {})}
        path_stem.with_suffix(".json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
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

        meta_path = path_stem.with_suffix(".json")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("version") != STATE_VERSION:
            raise ValueError(f"{meta_path}: n-gram state version {meta.get('version')!r}, "
                             f"this kold-span reads version {STATE_VERSION}")
        arrays = load_file(str(path_stem.with_suffix(".safetensors")))
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

    def fuse(self, encoder_probs: Sequence[Probs], ngram_probs: Sequence[Probs]) -> list[Probs]:
        """The fused ``{label: probability}`` per example."""
        return HybridScorer.fuse(encoder_probs, ngram_probs, self.weight)

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
        return cls(task, float(meta["weight"]), scorer, meta.get("dev_score"),
                   {float(w): s for w, s in meta.get("dev_scores", {}).items()}, int(meta.get("extra_examples", 0)))


def choose_companion(task: str, label: str, problem: str, train: Sequence[Example], dev: Sequence[Example],
                     dev_encoder_probs: Sequence[Probs], metric: Metric = "macro_f1",
                     allow_context: bool = True, extra: Sequence[Example] = (), refit: bool = True) -> Companion:
    """Choose the n-gram variant and the fusion weight on dev, then refit the n-gram on train + dev.

    Args:
        task: the task the companion belongs to.
        label: the label key the n-gram predicts (the task's source).
        problem: "single" or "multi".
        train: training examples (those without `label` are ignored).
        dev: dev examples, aligned with `dev_encoder_probs`; all must carry `label`.
        dev_encoder_probs: the encoder's ``{label: probability}`` on each dev example.
        metric: what the weight is chosen by (see `HybridScorer.choose_weight`).
        allow_context: False keeps the n-gram to the text (a model trained with `context.mode: none`).
        extra: more labelled examples the n-gram may learn from (not the encoder); with any,
            each n-gram variant is also fitted on train + extra, and kept if dev prefers it.
            Keep dev and test examples out of it: dev would score an n-gram that has seen it.
        refit: False returns the chosen n-gram as fitted for the choice, on train (and extra)
            only, for scoring dev afterwards (dev thresholds); `refit_companion` adds dev later.

    Returns:
        The companion: the text-only n-gram on train unless one that also reads the context,
        or that also learns from `extra`, scores higher on dev (the context only tried when
        training examples have contexts); ties keep the simpler variant and the smaller
        weight, as `HybridScorer.choose_weight` does.
    """
    if len(dev) != len(dev_encoder_probs):
        raise ValueError(f"{len(dev)} dev examples but {len(dev_encoder_probs)} encoder outputs")
    if not dev:
        raise ValueError(f"task {task!r}: fusing an n-gram needs labelled dev examples to choose its weight")
    gold = [[label_str(v) for v in ex.labels[label]] if problem == "multi" else label_str(ex.labels[label])
            for ex in dev]
    has_context = allow_context and any(context_string(ex).strip() for ex in train)
    extra = [ex for ex in extra if ex.labels.get(label) is not None]
    variants = [(use_context, more) for more in ([False, True] if extra else [False])
                for use_context in [False] + ([True] if has_context else [])]
    best = None
    for use_context, more in variants:
        ngram = NgramBaseline(label, problem, use_context=use_context).fit(list(train) + (extra if more else []))
        scorer = HybridScorer(problem=problem)
        weight = scorer.choose_weight(dev_encoder_probs, ngram.predict_proba(dev), gold, metric=metric)
        if best is None or scorer.dev_scores_[weight] > best[0]:
            best = (scorer.dev_scores_[weight], more, scorer, ngram)
    dev_score, more, scorer, ngram = best
    chosen = Companion(task, scorer.weight, NgramScorer.from_baseline(ngram), dev_score, dict(scorer.dev_scores_),
                       len(extra) if more else 0)
    return refit_companion(chosen, list(train) + list(dev) + taken_extra(chosen, extra)) if refit else chosen


def taken_extra(companion: Companion, extra: Sequence[Example]) -> list[Example]:
    """The examples of `extra` (as offered to `choose_companion`) that the companion's n-gram was fitted with.

    None unless dev preferred the n-gram with them; then those that carry its label.
    """
    if not companion.extra_examples:
        return []
    return [ex for ex in extra if ex.labels.get(companion.scorer.label) is not None]


def refit_companion(companion: Companion, examples: Sequence[Example]) -> Companion:
    """The same companion (weight, n-gram variant, dev scores) with its n-gram fitted again on `examples`."""
    scorer = companion.scorer
    model = NgramBaseline(scorer.label, scorer.problem, use_context=scorer.use_context).fit(list(examples))
    return replace(companion, scorer=NgramScorer.from_baseline(model))


def save_companions(companions: dict[str, Companion], directory: Union[str, Path]) -> None:
    for companion in companions.values():
        companion.save(Path(directory))


def load_companions(directory: Union[str, Path], tasks: Sequence[str]) -> dict[str, Companion]:
    return {task: Companion.load(Path(directory), task) for task in tasks}
