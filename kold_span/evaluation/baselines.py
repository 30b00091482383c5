"""Baselines a user would otherwise reach for: majority label, TF-IDF n-grams, span lexicon and token tagger.

Each has `fit(examples)` / `predict(examples)` over canonical `Example`s. Labels are
vocabulary strings (`label_str`: True → "true"); spans are end-exclusive character
offsets. The span baselines that learn nothing (`SPAN_BASELINES`: the whole text, every
non-space character) are the floor a corpus of long rationale spans (KOLD) sets.
`HybridScorer` interpolates two models' label probabilities (e.g. the n-gram model and a
transformer), and `run_baselines` scores every applicable baseline on a train/test pair.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any, Callable, Optional, Sequence, Union

from kold_span.config.choices import Problem
from kold_span.config.schema import FUSE_METRICS
from kold_span.data.example import (Example, Span, merge_spans, spans_to_offsets)
from kold_span.errors import ArgumentError
from kold_span.metrics import (best_on_grid, binary_prf, classification_report_dict, mean_char_f1,
                               multilabel_scores)
from kold_span.models.kinds.problems import Prediction, Probs, label_problem
from kold_span.models.ngram import (NgramBaseline, context_string, decode_probs, fuse_probs, labelled_examples,
                                    ngram_problem)
from kold_span.text.align import eojeol_offsets

WEIGHT_GRID = tuple(i / 10 for i in range(11))


# --------------------------------------------------------------------------- majority


class MajorityBaseline:
    """Predicts the most frequent training label for every example."""

    def __init__(self, label: str, problem: Optional[Problem] = None) -> None:
        """A majority predictor of `label`; `problem` (a `Problem` or its value) is by default MULTI when the training
        values are lists, else SINGLE.

        Example:
            >>> train = [Example("a", "x", labels={"off": True}), Example("b", "y", labels={"off": True}),
            ...          Example("c", "z", labels={"off": False})]
            >>> MajorityBaseline("off").fit(train).predict([Example("d", "w")])
            ['true']
        """
        self.label = label
        self.problem = ngram_problem(problem) if problem is not None else None
        self.prediction_: Optional[Prediction] = None

    def fit(self, examples: Sequence[Example]) -> "MajorityBaseline":
        """Count the training labels (examples without `label` are ignored) and keep, for "single", the most frequent
        label (ties: the smallest string), for "multi" the labels present in more than half of the examples."""
        if self.problem is None:
            self.problem = (Problem.MULTI if any(isinstance(ex.labels.get(self.label), list) for ex in examples)
                            else Problem.SINGLE)
        _, golds = labelled_examples(examples, self.label, self.problem)
        if self.problem.thresholded:  # each label on its own: those of most examples
            counts = Counter(name for gold in golds for name in gold)
            self.prediction_ = sorted(name for name, n in counts.items() if n > len(golds) / 2)
        else:
            counts = Counter(golds)
            self.prediction_ = min(counts, key=lambda name: (-counts[name], name))
        return self

    def predict(self, examples: Sequence[Example]) -> list[Prediction]:
        """The majority label ("single") or label list ("multi") once per example."""
        if self.prediction_ is None:
            raise RuntimeError("MajorityBaseline.predict called before fit")
        return [list(self.prediction_) if isinstance(self.prediction_, list) else self.prediction_
                for _ in examples]


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
        """A lexicon-lookup tagger of `span_type` spans: a word needs `min_count` occurrences inside a span and
        (occurrences inside a span / all occurrences) of at least `min_precision`. An occurrence is inside a span
        when a span covers any of its characters.

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
        """Learn `lexicon_` (each kept word: its precision) from the training spans; an example without spans of
        `span_type` has none (its words count as seen outside spans)."""
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
        """Per example, the sorted end-exclusive spans of its lexicon words (punctuation around them excluded)."""
        if self.lexicon_ is None:
            raise RuntimeError("LexiconSpanTagger.predict called before fit")
        return [merge_spans(span for word, span in word_spans(ex.text) if word in self.lexicon_)
                for ex in examples]


def whole_text_spans(examples: Sequence[Example]) -> list[list[Span]]:
    """One span over each whole text (none over an empty one).

    Example:
        >>> whole_text_spans([Example("1", "너 바보"), Example("2", "")])
        [[(0, 4)], []]
    """
    return [[(0, len(ex.text))] if ex.text else [] for ex in examples]


def non_space_spans(examples: Sequence[Example]) -> list[list[Span]]:
    """Every non-space character of each text: one span per whitespace-delimited word (eojeol).

    Example:
        >>> non_space_spans([Example("1", " 너  바보 ")])
        [[(1, 2), (4, 6)]]
    """
    return [list(eojeol_offsets(ex.text)) for ex in examples]


# Span baselines that learn nothing, by name: examples → spans.
SPAN_BASELINES: dict[str, Callable[[Sequence[Example]], list[list[Span]]]] = {
    "whole_text": whole_text_spans, "non_space": non_space_spans}


class TokenNgramTagger:
    """Marks the whitespace words (eojeol) a TF-IDF n-gram classifier of the word and its neighbours calls inside."""

    LABEL = "inside"

    def __init__(self, span_type: str = "OFF", **ngram_options: Any) -> None:
        """A token tagger built on `NgramBaseline`: one training example per word of each text.

        A word is "inside" when a gold span covers more than half of its characters; its
        context is the word before and the word after it. Predicted words next to each other
        become one span with the whitespace between them, as gold spans over a clause hold it.
        `ngram_options` are `NgramBaseline` arguments (analyzers, max_features, min_df, C, ...).

        Example:
            >>> train = [Example(str(i), text, spans={"OFF": [(0, 5)]})
            ...          for i, text in enumerate(["미친 놈 진짜", "미친 놈 또", "미친 놈 왔다"])]
            >>> train += [Example("8", "오늘 좋은 날", spans={"OFF": []}), Example("9", "좋은 날 진짜", spans={"OFF": []})]
            >>> TokenNgramTagger().fit(train).predict([Example("t", "오늘 미친 놈 봤다")])
            [[(3, 7)]]
        """
        self.span_type = span_type
        self.model = NgramBaseline(self.LABEL, Problem.SINGLE, use_context=True, **ngram_options)

    def _words(self, example: Example) -> list[Example]:
        """One example per word of `example`: the word as text, its neighbours as context, "inside" from gold."""
        words = eojeol_offsets(example.text)
        covered = spans_to_offsets(example.spans.get(self.span_type, []))
        out = []
        for i, (start, end) in enumerate(words):
            neighbours = [example.text[s:e] for s, e in (words[i - 1:i] + words[i + 1:i + 2])]
            inside = 2 * sum(j in covered for j in range(start, end)) > end - start
            out.append(Example(f"{example.id}:{i}", example.text[start:end], context=" ".join(neighbours) or "∅",
                               labels={self.LABEL: inside}))
        return out

    def fit(self, examples: Sequence[Example]) -> "TokenNgramTagger":
        """Fit the word classifier on every word of the training texts."""
        self.model.fit([word for ex in examples for word in self._words(ex)])
        return self

    def predict(self, examples: Sequence[Example]) -> list[list[Span]]:
        """The spans of each text: runs of predicted words, the whitespace between them included."""
        words = [self._words(ex) for ex in examples]
        flat = self.model.predict([w for ws in words for w in ws])
        out, i = [], 0
        for ex, ws in zip(examples, words):
            offsets = eojeol_offsets(ex.text)
            marked = [offsets[j] for j, label in enumerate(flat[i:i + len(ws)]) if label == "true"]
            i += len(ws)
            spans: list[list[int]] = []
            for start, end in marked:
                if spans and not ex.text[spans[-1][1]:start].strip():
                    spans[-1][1] = end
                else:
                    spans.append([start, end])
            out.append([(s, e) for s, e in spans])
        return out


# --------------------------------------------------------------------------- hybrid


Metric = Union[str, Callable[[list[Prediction], list[Prediction]], float]]


class HybridScorer:
    """Linear interpolation of two models' per-example label probabilities, its weight chosen on dev."""

    def __init__(self, weight: float = 0.5, problem: Problem = Problem.SINGLE, threshold: float = 0.5) -> None:
        """A fusion of model A and model B, ``weight * A + (1 - weight) * B`` (`weight` in [0, 1]), decoded as SINGLE
        (top label) or MULTI (labels whose fused probability is ≥ `threshold`).

        Example:
            >>> HybridScorer(weight=0.5).predict([{"a": 0.8, "b": 0.2}], [{"a": 0.1, "b": 0.9}])
            ['b']
        """
        self.weight = weight
        self.problem = ngram_problem(problem)
        self.threshold = threshold
        self.dev_scores_: dict[float, float] = {}

    fuse = staticmethod(fuse_probs)

    def predict_proba(self, probs_a: Sequence[Probs], probs_b: Sequence[Probs]) -> list[Probs]:
        """`fuse` with this scorer's weight."""
        return self.fuse(probs_a, probs_b, self.weight)

    def predict(self, probs_a: Sequence[Probs], probs_b: Sequence[Probs],
                weight: Optional[float] = None) -> list[Prediction]:
        """The probabilities fused (at this scorer's weight, or `weight`) and decoded into labels (`decode_probs`)."""
        fused = self.fuse(probs_a, probs_b, self.weight if weight is None else weight)
        return [decode_probs(p, self.problem, self.threshold) for p in fused]

    def choose_weight(self, dev_probs_a: Sequence[Probs], dev_probs_b: Sequence[Probs],
                      dev_gold: Sequence[Any], metric: Metric = "macro_f1") -> float:
        """Pick and return the weight in {0, 0.1, …, 1} that scores best on dev (ties: the smallest); `dev_scores_`
        keeps every weight's score.

        `dev_gold` holds raw gold values (converted with `label_str`; lists for "multi"); `metric` is one of
        `FUSE_METRICS` for the problem, or a callable ``metric(gold, predicted) -> float``, higher better.

        Example:
            >>> a = [{"t": 0.9, "f": 0.1}, {"t": 0.6, "f": 0.4}]
            >>> b = [{"t": 0.2, "f": 0.8}, {"t": 0.1, "f": 0.9}]
            >>> HybridScorer().choose_weight(a, b, ["t", "f"], "accuracy")  # both right for 0.5 ≤ weight ≤ 0.7
            0.5
        """
        gold = [label_problem(self.problem).gold_label(g) for g in dev_gold]
        score = self._metric(metric, gold)
        self.dev_scores_ = {w: score(gold, self.predict(dev_probs_a, dev_probs_b, w)) for w in WEIGHT_GRID}
        self.weight = best_on_grid(WEIGHT_GRID, self.dev_scores_.__getitem__, prefer=0.0)
        return self.weight

    def _metric(self, metric: Metric, gold: list[Prediction]) -> Callable[[list, list], float]:
        """A named metric as a function of (gold, predicted)."""
        if callable(metric):
            return metric
        allowed = FUSE_METRICS[self.problem]
        if metric not in allowed:
            raise ArgumentError(f"{self.problem}-label metric must be one of {allowed} or a callable, got {metric!r}")
        return lambda g, p: label_scores(g, p, self.problem)[metric]


# --------------------------------------------------------------------------- scores


def label_scores(gold: Sequence[Prediction], predicted: Sequence[Prediction], problem: Problem,
                 probs: Optional[Sequence[Probs]] = None) -> dict[str, Any]:
    """The metrics of one label baseline: "single", accuracy, macro_f1, balanced_accuracy, plus precision/recall/f1
    of "true" when the labels are "true"/"false"; "multi", micro_f1, macro_f1 (and lrap with `probs`).

    Example:
        >>> label_scores(["true", "false"], ["true", "true"], "single")["f1"]
        0.6666666666666666
    """
    return LABEL_SCORES[ngram_problem(problem)](gold, predicted, probs)


def single_prediction_scores(gold: Sequence[str], predicted: Sequence[str],
                             probs: Optional[Sequence[Probs]] = None) -> dict[str, Any]:
    """Predicted single labels' accuracy, macro_f1, balanced_accuracy; P, R and F1 of "true" for true/false labels."""
    report = classification_report_dict(list(gold), list(predicted))
    scores = {key: report[key] for key in ("accuracy", "macro_f1", "balanced_accuracy")}
    if set(gold) | set(predicted) <= {"true", "false"}:
        prf = binary_prf(list(gold), list(predicted), positive="true")
        scores.update(precision=prf["precision"], recall=prf["recall"], f1=prf["f1"])
    return scores


def multi_prediction_scores(gold: Sequence[list[str]], predicted: Sequence[list[str]],
                            probs: Optional[Sequence[Probs]] = None) -> dict[str, Any]:
    """Predicted label lists' micro_f1 and macro_f1 over the labels either side names; lrap too with `probs`."""
    return multilabel_scores(gold, predicted, labels=sorted({name for names in [*gold, *predicted] for name in names}),
                             scores=probs)


# The scores of a label baseline, per problem (an n-gram or majority model learns label values only).
LABEL_SCORES: dict[Problem, Callable[..., dict[str, Any]]] = {Problem.SINGLE: single_prediction_scores,
                                                               Problem.MULTI: multi_prediction_scores}


def run_baselines(train: Sequence[Example], test: Sequence[Example], label: Optional[str],
                  problem: Problem = Problem.SINGLE, span_type: Optional[str] = None,
                  ngram_options: Optional[dict[str, Any]] = None,
                  lexicon_options: Optional[dict[str, Any]] = None,
                  span_baselines: Sequence[str] = ("lexicon",)) -> dict[str, Any]:
    """Fit every applicable baseline on `train` and score it on `test`.

    Label baselines run when `label` is given: "majority", "ngram", and
    "ngram_context" when any example has a context. Examples without the label (e.g.
    MultiPICo ties) are left out of both sides. The span baselines run when `span_type` is
    given and are scored by mean character F1 (the SemEval rule): "lexicon" (`LexiconSpanTagger`), "token_ngram"
    (`TokenNgramTagger`, with `ngram_options`) and those of `SPAN_BASELINES` ("whole_text", "non_space").
    Returns ``{"n_train", "n_test", <baseline>: {metric: value}}`` (see `label_scores`; a span baseline has
    "char_f1", "lexicon" also "lexicon_size").

    Example:
        >>> train = [Example("1", "bad idiot", labels={"off": True}, spans={"OFF": [(4, 9)]}),
        ...          Example("2", "good day", labels={"off": False}, spans={"OFF": []})]
        >>> run_baselines(train, train, "off", span_type="OFF")["lexicon"]["char_f1"]
        1.0
    """
    problem = ngram_problem(problem)
    results: dict[str, Any] = {"n_train": len(train), "n_test": len(test)}
    if label is not None:
        train_l, _ = labelled_examples(train, label, problem)
        test_l, gold = labelled_examples(test, label, problem)
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
            results[name] = label_scores(gold, predicted, problem, probs)
    if span_type is not None:
        unknown = sorted(set(span_baselines) - {"lexicon", "token_ngram", *SPAN_BASELINES})
        if unknown:
            raise ArgumentError(f"unknown span baseline {unknown[0]!r}; known: lexicon, token_ngram, "
                                f"{', '.join(SPAN_BASELINES)}")
        golds = [spans_to_offsets(ex.spans.get(span_type, [])) for ex in test]
        for name in span_baselines:
            if name in SPAN_BASELINES:
                predicted_spans = SPAN_BASELINES[name](test)
            else:
                tagger: Any = (LexiconSpanTagger(span_type, **(lexicon_options or {})) if name == "lexicon"
                               else TokenNgramTagger(span_type, **(ngram_options or {}))).fit(train)
                predicted_spans = tagger.predict(test)
            results[name] = {"char_f1": mean_char_f1([spans_to_offsets(s) for s in predicted_spans], golds)}
            if name == "lexicon":
                results[name]["lexicon_size"] = len(tagger.lexicon_ or {})
    return results
