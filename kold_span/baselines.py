"""Baselines a user would otherwise reach for: majority label, TF-IDF n-grams, a span lexicon.

Each has `fit(examples)` / `predict(examples)` over canonical `Example`s. Labels are
vocabulary strings (`label_str`: True → "true"); spans are end-exclusive character
offsets. `HybridScorer` interpolates two models' label probabilities (e.g. the n-gram
model and a transformer), and `run_baselines` scores every applicable baseline on a
train/test pair.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any, Callable, Optional, Sequence, Union

from kold_span.data import Example, Span, context_turns, merge_spans, spans_to_offsets
from kold_span.metrics import binary_prf, classification_report_dict, mean_char_f1, multilabel_scores
from kold_span.tasks import label_str

Probs = dict[str, float]
Prediction = Union[str, list[str]]
WEIGHT_GRID = tuple(i / 10 for i in range(11))
PROBLEMS = ("single", "multi")


def gold_label(example: Example, label: str, problem: str) -> Optional[Prediction]:
    """The example's `label` as a vocabulary string (single) or a sorted list of them (multi); None if missing."""
    value = example.labels.get(label)
    if value is None:
        return None
    if problem == "multi":
        values = value if isinstance(value, list) else [value]
        return sorted({label_str(v) for v in values})
    return label_str(value)


def _check_problem(problem: str) -> None:
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")


def _labelled(examples: Sequence[Example], label: str, problem: str) -> tuple[list[Example], list[Prediction]]:
    """The examples that carry `label`, with their gold labels; an error when there are none."""
    pairs = [(ex, gold) for ex in examples if (gold := gold_label(ex, label, problem)) is not None]
    if not pairs:
        raise ValueError(f"no example has a label {label!r}; labels seen: "
                         f"{sorted({k for ex in examples for k in ex.labels})}")
    return [ex for ex, _ in pairs], [gold for _, gold in pairs]


# --------------------------------------------------------------------------- majority


class MajorityBaseline:
    """Predicts the most frequent training label for every example."""

    def __init__(self, label: str, problem: Optional[str] = None) -> None:
        """A majority-label predictor.

        Args:
            label: the label key to predict (e.g. "hate", "irony").
            problem: "single" or "multi"; by default "multi" when the training
                values are lists, else "single".

        Example:
            >>> train = [Example("a", "x", labels={"off": True}), Example("b", "y", labels={"off": True}),
            ...          Example("c", "z", labels={"off": False})]
            >>> MajorityBaseline("off").fit(train).predict([Example("d", "w")])
            ['true']
        """
        if problem is not None:
            _check_problem(problem)
        self.label = label
        self.problem = problem
        self.prediction_: Optional[Prediction] = None

    def fit(self, examples: Sequence[Example]) -> "MajorityBaseline":
        """Count the training labels; examples without `label` are ignored.

        Args:
            examples: training examples.

        Returns:
            self. For "single" the most frequent label (ties: the smallest string);
            for "multi" the labels present in more than half of the examples.
        """
        if self.problem is None:
            self.problem = ("multi" if any(isinstance(ex.labels.get(self.label), list) for ex in examples)
                            else "single")
        _, golds = _labelled(examples, self.label, self.problem)
        if self.problem == "multi":
            counts = Counter(name for gold in golds for name in gold)
            self.prediction_ = sorted(name for name, n in counts.items() if n > len(golds) / 2)
        else:
            counts = Counter(golds)
            self.prediction_ = min(counts, key=lambda name: (-counts[name], name))
        return self

    def predict(self, examples: Sequence[Example]) -> list[Prediction]:
        """The majority label (or label list) once per example.

        Args:
            examples: examples to label.

        Returns:
            One label string ("single") or list of label strings ("multi") per example.
        """
        if self.prediction_ is None:
            raise RuntimeError("MajorityBaseline.predict called before fit")
        return [list(self.prediction_) if isinstance(self.prediction_, list) else self.prediction_
                for _ in examples]


# --------------------------------------------------------------------------- n-grams


def context_string(example: Example) -> str:
    """The example's context turns joined by newlines ("" when it has none)."""
    return "\n".join(context_turns(example.context))


class NgramBaseline:
    """TF-IDF character and word n-grams + logistic regression (one-vs-rest for multi-label)."""

    def __init__(self, label: str, problem: str = "single", analyzers: Sequence[str] = ("char_wb", "word"),
                 char_ngram: tuple[int, int] = (2, 5), word_ngram: tuple[int, int] = (1, 2),
                 use_context: bool = False, C: float = 4.0, class_weight: Optional[str] = "balanced",
                 max_features: Optional[int] = None, min_df: int = 1, threshold: float = 0.5) -> None:
        """A TF-IDF + logistic-regression classifier of `label`.

        Args:
            label: the label key to predict.
            problem: "single" (one label per example) or "multi" (a list of labels).
            analyzers: which TF-IDF vectorizers to union: "char_wb" (character n-grams
                inside word boundaries) and/or "word".
            char_ngram: n-gram range of the character vectorizer.
            word_ngram: n-gram range of the word vectorizer (tokens of word characters,
                single characters included: many Korean words are one syllable).
            use_context: add the same vectorizers fitted separately on the context
                (turns joined), so context n-grams get their own weights.
            C: inverse regularisation strength of the logistic regression.
            class_weight: "balanced" or None, passed to the logistic regression.
            max_features: cap on the vocabulary of each vectorizer (None: no cap).
            min_df: minimum document frequency of an n-gram.
            threshold: multi-label decision threshold on each label's probability.

        Example:
            >>> train = [Example("1", "you idiot", labels={"off": True}),
            ...          Example("2", "nice day", labels={"off": False})]
            >>> NgramBaseline("off").fit(train).predict([Example("3", "idiot")])
            ['true']
        """
        _check_problem(problem)
        unknown = set(analyzers) - {"char_wb", "word"}
        if unknown or not analyzers:
            raise ValueError(f"analyzers must be a non-empty subset of ('char_wb', 'word'), got {list(analyzers)}")
        self.label = label
        self.problem = problem
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
        import numpy as np

        rows = [[ex.text, context_string(ex)] if self.use_context else [ex.text] for ex in examples]
        return np.array(rows, dtype=object).reshape(len(rows), 2 if self.use_context else 1)

    def fit(self, examples: Sequence[Example]) -> "NgramBaseline":
        """Fit the vectorizers and the classifier; examples without `label` are ignored.

        Args:
            examples: training examples.

        Returns:
            self, with `labels_` the label vocabulary (sorted).
        """
        from sklearn.compose import ColumnTransformer
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import MultiLabelBinarizer

        examples, golds = _labelled(examples, self.label, self.problem)
        if self.use_context and not any(context_string(ex).strip() for ex in examples):
            raise ValueError(f"use_context=True but none of the {len(examples)} training examples has a context")
        columns = [("text", self._vectorizers(), 0)]
        if self.use_context:
            columns.append(("context", self._vectorizers(), 1))
        classifier = LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=2000)
        if self.problem == "multi":
            self.binarizer_ = MultiLabelBinarizer()
            targets = self.binarizer_.fit_transform(golds)
            self.labels_ = tuple(self.binarizer_.classes_)
            classifier = OneVsRestClassifier(classifier)
        else:
            targets = golds
            self.labels_ = tuple(sorted(set(golds)))
            if len(self.labels_) < 2:
                raise ValueError(f"label {self.label!r} has a single value {self.labels_[0]!r} in training; "
                                 f"a classifier needs at least two")
        self.pipeline_ = Pipeline([("features", ColumnTransformer(columns)), ("classifier", classifier)])
        self.pipeline_.fit(self._columns(examples), targets)
        return self

    def predict_proba(self, examples: Sequence[Example]) -> list[Probs]:
        """Per-example probability of every label.

        Args:
            examples: examples to score.

        Returns:
            One ``{label: probability}`` per example over `labels_`; for "single" they
            sum to 1, for "multi" each label is scored on its own.
        """
        if self.pipeline_ is None:
            raise RuntimeError("NgramBaseline.predict_proba called before fit")
        if not examples:
            return []
        matrix = self.pipeline_.predict_proba(self._columns(examples))
        columns = (self.labels_ if self.problem == "multi"
                   else tuple(str(c) for c in self.pipeline_.named_steps["classifier"].classes_))
        return [{name: float(p) for name, p in zip(columns, row)} for row in matrix]

    def predict(self, examples: Sequence[Example]) -> list[Prediction]:
        """The predicted label (single) or labels at or above `threshold` (multi) of each example.

        Args:
            examples: examples to label.

        Returns:
            One label string or sorted list of label strings per example.
        """
        return [decode_probs(p, self.problem, self.threshold) for p in self.predict_proba(examples)]


def decode_probs(probs: Probs, problem: str, threshold: float = 0.5) -> Prediction:
    """Probabilities → the top label ("single"; ties: the smallest) or the labels ≥ threshold ("multi")."""
    if problem == "multi":
        return sorted(name for name, p in probs.items() if p >= threshold)
    return min(probs, key=lambda name: (-probs[name], name))


# --------------------------------------------------------------------------- lexicon spans


_TOKEN = re.compile(r"\S+")


def _is_punct(char: str) -> bool:
    """Punctuation or symbol (emoji included): stripped from the edges of lexicon words."""
    return unicodedata.category(char)[0] in "PS"


def word_spans(text: str) -> list[tuple[str, Span]]:
    """Whitespace tokens, lowercased and stripped of surrounding punctuation, with their offsets.

    Example:
        >>> word_spans('"Idiot!" he said')
        [('idiot', (1, 6)), ('he', (9, 11)), ('said', (12, 16))]
    """
    words = []
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        while start < end and _is_punct(text[start]):
            start += 1
        while end > start and _is_punct(text[end - 1]):
            end -= 1
        if start < end:
            words.append((text[start:end].lower(), (start, end)))
    return words


class LexiconSpanTagger:
    """Marks every occurrence of a word often seen inside training spans (as the Toxic Spans organisers' baseline)."""

    def __init__(self, span_type: str = "OFF", min_count: int = 1, min_precision: float = 0.5) -> None:
        """A lexicon-lookup span tagger.

        Args:
            span_type: the span type learnt from and predicted (a key of `Example.spans`).
            min_count: a word needs at least this many occurrences inside a span.
            min_precision: a word needs (occurrences inside a span / all occurrences) at
                least this high. An occurrence is inside a span when a span covers any of
                its characters.

        Example:
            >>> train = [Example("1", "you idiot.", spans={"OFF": [(4, 9)]})]
            >>> LexiconSpanTagger().fit(train).predict([Example("2", "Idiot, idiot!")])
            [[(0, 5), (7, 12)]]
        """
        self.span_type = span_type
        self.min_count = min_count
        self.min_precision = min_precision
        self.lexicon_: Optional[dict[str, float]] = None

    def fit(self, examples: Sequence[Example]) -> "LexiconSpanTagger":
        """Learn the lexicon from the training spans.

        Args:
            examples: training examples; one without spans of `span_type` counts as
                having none (its words count as seen outside spans).

        Returns:
            self, with `lexicon_` mapping each kept word to its precision.
        """
        inside: Counter[str] = Counter()
        seen: Counter[str] = Counter()
        for ex in examples:
            covered = spans_to_offsets(ex.spans.get(self.span_type, []))
            for word, (start, end) in word_spans(ex.text):
                seen[word] += 1
                if any(i in covered for i in range(start, end)):
                    inside[word] += 1
        self.lexicon_ = {word: inside[word] / seen[word] for word in sorted(inside)
                         if inside[word] >= self.min_count and inside[word] / seen[word] >= self.min_precision}
        return self

    def predict(self, examples: Sequence[Example]) -> list[list[Span]]:
        """The spans of lexicon words in each text.

        Args:
            examples: examples to tag.

        Returns:
            One sorted list of end-exclusive (start, end) spans per example, one per
            lexicon-word occurrence (punctuation around it excluded).
        """
        if self.lexicon_ is None:
            raise RuntimeError("LexiconSpanTagger.predict called before fit")
        return [merge_spans(span for word, span in word_spans(ex.text) if word in self.lexicon_)
                for ex in examples]


# --------------------------------------------------------------------------- hybrid


Metric = Union[str, Callable[[list[Prediction], list[Prediction]], float]]


class HybridScorer:
    """Linear interpolation of two models' per-example label probabilities, its weight chosen on dev."""

    def __init__(self, weight: float = 0.5, problem: str = "single", threshold: float = 0.5) -> None:
        """A fusion of model A and model B: ``weight * A + (1 - weight) * B``.

        Args:
            weight: the weight of model A in [0, 1].
            problem: "single" (top label) or "multi" (labels ≥ `threshold`).
            threshold: multi-label decision threshold on the fused probability.

        Example:
            >>> HybridScorer(weight=0.5).predict([{"a": 0.8, "b": 0.2}], [{"a": 0.1, "b": 0.9}])
            ['b']
        """
        _check_problem(problem)
        self.weight = weight
        self.problem = problem
        self.threshold = threshold
        self.dev_scores_: dict[float, float] = {}

    @staticmethod
    def fuse(probs_a: Sequence[Probs], probs_b: Sequence[Probs], weight: float) -> list[Probs]:
        """Interpolate two aligned lists of ``{label: probability}``.

        Args:
            probs_a: model A's probabilities, one dict per example.
            probs_b: model B's probabilities, aligned with `probs_a`.
            weight: the weight of A in [0, 1]; B gets ``1 - weight``.

        Returns:
            One dict per example over the union of both dicts' labels (a label a
            model does not score counts as 0 for it).

        Example:
            >>> HybridScorer.fuse([{"x": 1.0}], [{"x": 0.0, "y": 1.0}], 0.25)
            [{'x': 0.25, 'y': 0.75}]
        """
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be in [0, 1], got {weight}")
        if len(probs_a) != len(probs_b):
            raise ValueError(f"probs_a and probs_b differ in length: {len(probs_a)} != {len(probs_b)}")
        fused = []
        for a, b in zip(probs_a, probs_b):
            names = list(a) + [name for name in b if name not in a]
            fused.append({name: weight * a.get(name, 0.0) + (1 - weight) * b.get(name, 0.0) for name in names})
        return fused

    def predict_proba(self, probs_a: Sequence[Probs], probs_b: Sequence[Probs]) -> list[Probs]:
        """`fuse` with this scorer's weight."""
        return self.fuse(probs_a, probs_b, self.weight)

    def predict(self, probs_a: Sequence[Probs], probs_b: Sequence[Probs]) -> list[Prediction]:
        """The fused probabilities decoded into labels (see `decode_probs`)."""
        return [decode_probs(p, self.problem, self.threshold) for p in self.predict_proba(probs_a, probs_b)]

    def choose_weight(self, dev_probs_a: Sequence[Probs], dev_probs_b: Sequence[Probs],
                      dev_gold: Sequence[Any], metric: Metric = "macro_f1") -> float:
        """Pick the weight in {0, 0.1, …, 1} that scores best on dev, and keep it.

        Args:
            dev_probs_a: model A's dev probabilities.
            dev_probs_b: model B's dev probabilities.
            dev_gold: gold labels (raw values are converted with `label_str`; lists for "multi").
            metric: "accuracy", "macro_f1", "balanced_accuracy" (single), "micro_f1" or
                "macro_f1" (multi), or a callable ``metric(gold, predicted) -> float``
                where higher is better.

        Returns:
            The chosen weight (ties: the smallest weight); `dev_scores_` keeps every
            weight's score.

        Example:
            >>> a = [{"t": 0.9, "f": 0.1}, {"t": 0.6, "f": 0.4}]
            >>> b = [{"t": 0.2, "f": 0.8}, {"t": 0.1, "f": 0.9}]
            >>> HybridScorer().choose_weight(a, b, ["t", "f"], "accuracy")  # both right for 0.5 ≤ weight ≤ 0.7
            0.5
        """
        gold = [sorted({label_str(v) for v in g}) if self.problem == "multi" else label_str(g) for g in dev_gold]
        score = self._metric(metric, gold)
        self.dev_scores_ = {}
        for weight in WEIGHT_GRID:
            predicted = [decode_probs(p, self.problem, self.threshold)
                         for p in self.fuse(dev_probs_a, dev_probs_b, weight)]
            self.dev_scores_[weight] = score(gold, predicted)
        best = max(self.dev_scores_.values())
        self.weight = min(w for w, s in self.dev_scores_.items() if s == best)
        return self.weight

    def _metric(self, metric: Metric, gold: list[Prediction]) -> Callable[[list, list], float]:
        """A named metric as a function of (gold, predicted)."""
        if callable(metric):
            return metric
        if self.problem == "multi":
            if metric not in ("micro_f1", "macro_f1"):
                raise ValueError(f"multi-label metric must be 'micro_f1', 'macro_f1' or a callable, got {metric!r}")
            return lambda g, p: multilabel_scores(g, p, labels=_label_inventory(g, p))[metric]
        if metric not in ("accuracy", "macro_f1", "balanced_accuracy"):
            raise ValueError(f"metric must be 'accuracy', 'macro_f1', 'balanced_accuracy' or a callable, "
                             f"got {metric!r}")
        return lambda g, p: classification_report_dict(g, p)[metric]


def _label_inventory(*label_lists: Sequence[list[str]]) -> list[str]:
    """Every label in some lists of label lists, sorted."""
    return sorted({name for labels in label_lists for names in labels for name in names})


# --------------------------------------------------------------------------- scores


def label_scores(gold: Sequence[Prediction], predicted: Sequence[Prediction], problem: str,
                 probs: Optional[Sequence[Probs]] = None) -> dict[str, Any]:
    """The metrics of one label baseline.

    Args:
        gold: gold label strings (lists for "multi").
        predicted: predicted label strings, aligned with `gold`.
        problem: "single" or "multi".
        probs: optional per-example probabilities (adds "lrap" for "multi").

    Returns:
        "single": accuracy, macro_f1, balanced_accuracy, plus precision/recall/f1 of
        "true" when the labels are "true"/"false"; "multi": micro_f1, macro_f1 (and lrap).

    Example:
        >>> label_scores(["true", "false"], ["true", "true"], "single")["f1"]
        0.6666666666666666
    """
    if problem == "multi":
        return multilabel_scores(gold, predicted, labels=_label_inventory(gold, predicted), scores=probs)
    report = classification_report_dict(list(gold), list(predicted))
    scores = {key: report[key] for key in ("accuracy", "macro_f1", "balanced_accuracy")}
    if set(gold) | set(predicted) <= {"true", "false"}:
        prf = binary_prf(list(gold), list(predicted), positive="true")
        scores.update(precision=prf["precision"], recall=prf["recall"], f1=prf["f1"])
    return scores


def run_baselines(train: Sequence[Example], test: Sequence[Example], label: Optional[str],
                  problem: str = "single", span_type: Optional[str] = None,
                  ngram_options: Optional[dict[str, Any]] = None,
                  lexicon_options: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Fit every applicable baseline on `train` and score it on `test`.

    Label baselines run when `label` is given: "majority", "ngram", and
    "ngram_context" when any example has a context. Examples without the label (e.g.
    MultiPICo ties) are left out of both sides. The "lexicon" span tagger runs when
    `span_type` is given and is scored by mean character F1 (the SemEval rule).

    Args:
        train: training examples.
        test: test examples.
        label: the label key, or None to run only the span baseline.
        problem: "single" or "multi".
        span_type: the span type for `LexiconSpanTagger`, or None.
        ngram_options: extra `NgramBaseline` arguments (e.g. ``{"max_features": 50000}``).
        lexicon_options: extra `LexiconSpanTagger` arguments.

    Returns:
        ``{"n_train", "n_test", <baseline>: {metric: value}}`` (see `label_scores`;
        "lexicon" has "char_f1" and "lexicon_size").

    Example:
        >>> train = [Example("1", "bad idiot", labels={"off": True}, spans={"OFF": [(4, 9)]}),
        ...          Example("2", "good day", labels={"off": False}, spans={"OFF": []})]
        >>> run_baselines(train, train, "off", span_type="OFF")["lexicon"]["char_f1"]
        1.0
    """
    _check_problem(problem)
    results: dict[str, Any] = {"n_train": len(train), "n_test": len(test)}
    if label is not None:
        train_l, _ = _labelled(train, label, problem)
        test_l, gold = _labelled(test, label, problem)
        results.update(n_train=len(train_l), n_test=len(test_l))
        majority = MajorityBaseline(label, problem).fit(train_l)
        results["majority"] = label_scores(gold, majority.predict(test_l), problem)
        variants = [("ngram", False)]
        if any(context_string(ex).strip() for ex in train_l):
            variants.append(("ngram_context", True))
        for name, use_context in variants:
            model = NgramBaseline(label, problem, use_context=use_context, **(ngram_options or {})).fit(train_l)
            probs = model.predict_proba(test_l)
            predicted = [decode_probs(p, problem, model.threshold) for p in probs]
            results[name] = label_scores(gold, predicted, problem, probs if problem == "multi" else None)
    if span_type is not None:
        tagger = LexiconSpanTagger(span_type, **(lexicon_options or {})).fit(train)
        predicted_spans = tagger.predict(test)
        results["lexicon"] = {
            "char_f1": mean_char_f1([spans_to_offsets(s) for s in predicted_spans],
                                    [spans_to_offsets(ex.spans.get(span_type, [])) for ex in test]),
            "lexicon_size": len(tagger.lexicon_ or {}),
        }
    return results
