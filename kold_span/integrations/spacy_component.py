"""The spaCy pipeline component `kold_span`: a trained model directory's labels and spans on each `Doc`.

    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "kold_span.KiwiTokenizer.v1"}}})
    nlp.add_pipe("kold_span", config={"model": "checkpoints/demo/demo/model"})
    doc = nlp("이 쓰레기 같은 정치인들")

What a processed doc holds (`doc.cats`, a span group per span type in `doc.spans`, the whole
prediction in `doc._.kold_prediction`, the context read in `doc._.kold_context`, each task's
`allow`/`review`/`remove` in `doc._.kold_actions`) is docs/SPACY.md's table, the one place that lists it.

The context comes from `nlp.pipe([(text, {"context": ...})], as_tuples=True)`, else from
`doc._.kold_context` set before the component runs. The model loads on the first doc (or on
`nlp.get_pipe("kold_span").predictor`); `nlp.to_disk` writes it inside the pipeline, and
`spacy.load` reads that copy, not the directory named in the config.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence, Union

from kold_span.config.choices import TaskKind
from kold_span.data.example import Context
from kold_span.errors import ArgumentError, needs_extra

with needs_extra("spacy"):
    from spacy.language import Language
    from spacy.tokens import Doc, SpanGroup
    from spacy.util import minibatch

if TYPE_CHECKING:  # the predictor pulls in torch; spaCy imports this module whenever it builds a pipeline
    from kold_span.inference.predictor import Predictor
    from kold_span.models.tasks import Task

logger = logging.getLogger(__name__)

CONTEXT_ATTR = "kold_context"
PREDICTION_ATTR = "kold_prediction"
ACTIONS_ATTR = "kold_actions"
MODEL_DIR = "model"  # the model directory inside the component's folder of a saved pipeline
MAIN_SPAN_KEY = "sc"
ALIGNMENT_MODES = ("strict", "contract", "expand")

for _attr in (CONTEXT_ATTR, PREDICTION_ATTR, ACTIONS_ATTR):
    if not Doc.has_extension(_attr):
        Doc.set_extension(_attr, default=None)


def cats_of(labels: dict[str, dict[str, Any]]) -> dict[str, float]:
    """`doc.cats` from a prediction's labels: "{task}/{label}" → that label's probability.

    Example:
        >>> cats_of({"OFF": {"label": True, "probs": {"false": 0.1, "true": 0.9}}})
        {'OFF/false': 0.1, 'OFF/true': 0.9}
    """
    return {f"{task}/{label}": p for task, out in labels.items() for label, p in out["probs"].items()}


def span_keys_for(tasks: Sequence["Task"], overrides: dict[str, str], where: str = "the model") -> dict[str, str]:
    """The `doc.spans` key of each span type of the model's `tasks`: "sc" for the first span task's, its own name for
    the others, unless `overrides` (span type → key) names it; `where` names the model in the error for a type it
    does not predict.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> tasks = [Task("OFF", "sequence", "OFF"), Task("OFF_span", "span", "OFF"), Task("TGT_span", "span", "TGT")]
        >>> span_keys_for(tasks, {}), span_keys_for(tasks, {"TGT": "targets"})
        ({'OFF': 'sc', 'TGT': 'TGT'}, {'OFF': 'sc', 'TGT': 'targets'})
    """
    types = list(dict.fromkeys(t.source for t in tasks if t.kind is TaskKind.SPAN))
    unknown = sorted(set(overrides) - set(types))
    if unknown:
        raise ArgumentError(f"span_keys names span type(s) {unknown} that {where} does not predict; "
                            f"its span types are {types}")
    defaults = {span_type: MAIN_SPAN_KEY if i == 0 else span_type for i, span_type in enumerate(types)}
    return {span_type: overrides.get(span_type, key) for span_type, key in defaults.items()}


def span_groups(doc: Doc, spans: Sequence[dict[str, Any]], keys: dict[str, str],
                alignment_mode: str = "strict") -> dict[str, SpanGroup]:
    """The predicted character spans (`{type, start, end, score}`, end-exclusive) as token spans of `doc`: key →
    span group, for every key of `keys` (span type → key of `doc.spans`), spans labelled with their type in the
    order given, each span's score in `attrs["scores"]`. A span that does not become tokens by `alignment_mode`
    (as `Doc.char_span`'s) is left out and logged at debug level.

    Example:
        >>> import spacy
        >>> doc = spacy.blank("xx")("저 놈들이다")
        >>> off = [{"type": "OFF", "start": 2, "end": 3, "score": 0.9}]
        >>> span_groups(doc, off, {"OFF": "sc"})["sc"].attrs["scores"]
        []
        >>> group = span_groups(doc, off, {"OFF": "sc"}, "expand")["sc"]
        >>> [(s.text, s.label_) for s in group], group.attrs["scores"]
        ([('놈들이다', 'OFF')], [0.9])
    """
    check_alignment_mode(alignment_mode)
    members: dict[str, list[tuple[Any, float]]] = {key: [] for key in keys.values()}
    for span in spans:
        token_span = doc.char_span(span["start"], span["end"], label=span["type"], alignment_mode=alignment_mode)
        if token_span is None:
            logger.debug("span %s %d-%d of %r falls inside a token (alignment_mode=%s): left out of doc.spans",
                         span["type"], span["start"], span["end"], doc.text[:40], alignment_mode)
            continue
        members[keys[span["type"]]].append((token_span, span["score"]))
    return {key: SpanGroup(doc, name=key, spans=[s for s, _ in found], attrs={"scores": [p for _, p in found]})
            for key, found in members.items()}


def check_alignment_mode(mode: str) -> None:
    """Raise `ArgumentError` unless `mode` is one of `ALIGNMENT_MODES`."""
    if mode not in ALIGNMENT_MODES:
        raise ArgumentError(f"alignment_mode must be one of {ALIGNMENT_MODES}, got {mode!r}")


def doc_context(doc: Doc) -> Context:
    """The context of a doc: the "context" of `nlp.pipe(..., as_tuples=True)`'s dict, else `doc._.kold_context`.

    Example:
        >>> import spacy
        >>> doc = spacy.blank("xx")("그 의원 최고")
        >>> doc_context(doc) is None
        True
        >>> doc._.kold_context = ["첫 발언", "둘째 발언"]
        >>> doc_context(doc)
        ['첫 발언', '둘째 발언']
        >>> doc._context = {"context": "국회 본회의"}
        >>> doc_context(doc)
        '국회 본회의'
    """
    given = doc._context
    if isinstance(given, dict) and "context" in given:
        context, source = given["context"], "the as_tuples context's 'context'"
    else:
        context, source = getattr(doc._, CONTEXT_ATTR), f"doc._.{CONTEXT_ATTR}"
    if not (context is None or isinstance(context, str)
            or (isinstance(context, list) and all(isinstance(turn, str) for turn in context))):
        raise ArgumentError(f"{source} of the doc {doc.text[:30]!r} must be a string, a list of strings or None, "
                            f"got {type(context).__name__}")
    return context


class KoldSpanComponent:
    """Sets `doc.cats`, `doc.spans` and `doc._.kold_prediction` from a trained model directory."""

    def __init__(self, name: str, model: str, span_keys: Optional[dict[str, str]] = None,
                 alignment_mode: str = "expand", batch_size: int = 32, device: str = "cpu", runtime: str = "auto"):
        from kold_span.inference.pipeline import RunOptions

        check_alignment_mode(alignment_mode)
        self.name = name
        self.model = model
        self.span_keys = dict(span_keys or {})
        self.alignment_mode = alignment_mode
        self.options = RunOptions(batch_size, device=device, runtime=runtime)  # the model's and each call's
        self._predictor: Optional["Predictor"] = None
        self._keys: dict[str, str] = {}

    @property
    def predictor(self) -> "Predictor":
        """The model, loaded from `model` on first use (the same errors as `Predictor.from_pretrained`)."""
        if self._predictor is None:
            self._use(self.model)
        assert self._predictor is not None
        return self._predictor

    def _use(self, directory: Union[str, Path]) -> None:
        """Load the model directory and fix the span keys for its span types."""
        from kold_span.inference.predictor import Predictor

        predictor = Predictor.from_pretrained(directory, device=self.options.device, runtime=self.options.runtime)
        self._keys = span_keys_for(predictor.tasks, self.span_keys, f"the model {directory}")
        self._predictor = predictor

    def __call__(self, doc: Doc) -> Doc:
        return self.annotate([doc])[0]

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 1000) -> Iterator[Doc]:
        """Annotate docs `batch_size` at a time (spaCy's meaning: docs read ahead), one predict call each.

        The predictor sorts each call's texts by length and runs them through the network
        `batch_size` windows (the component's setting) at a time.
        """
        for docs in minibatch(stream, size=batch_size):
            yield from self.annotate(docs)

    def annotate(self, docs: list[Doc]) -> list[Doc]:
        """Predict labels and spans for the docs' texts (with their contexts) and set them on the docs."""
        contexts = [doc_context(doc) for doc in docs]
        predictions = self.predictor.predict([doc.text for doc in docs], contexts, self.options.batch_size)
        for doc, context, prediction in zip(docs, contexts, predictions):
            setattr(doc._, CONTEXT_ATTR, context)
            setattr(doc._, PREDICTION_ATTR, prediction)
            setattr(doc._, ACTIONS_ATTR, dict(prediction.get("actions", {})))
            doc.cats.update(cats_of(prediction["labels"]))
            for key, group in span_groups(doc, prediction["spans"], self._keys, self.alignment_mode).items():
                doc.spans[key] = group
        return docs

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """Write the model directory (config, weights, tokenizer) into the pipeline, under `model/`."""
        self.predictor.save_pretrained(Path(path) / MODEL_DIR)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "KoldSpanComponent":
        """Load the model directory `to_disk` wrote (not the one the config names)."""
        self._use(Path(path) / MODEL_DIR)
        return self


@Language.factory("kold_span", default_config={"span_keys": {}, "alignment_mode": "expand", "batch_size": 32,
                                               "device": "cpu", "runtime": "auto"},
                  assigns=["doc.cats", "doc.spans", f"doc._.{PREDICTION_ATTR}", f"doc._.{CONTEXT_ATTR}",
                           f"doc._.{ACTIONS_ATTR}"])
def make_kold_span(nlp: Language, name: str, model: str, span_keys: dict[str, str], alignment_mode: str,
                   batch_size: int, device: str, runtime: str = "auto") -> KoldSpanComponent:
    """`nlp.add_pipe("kold_span", config={"model": DIR})`; DIR is a model directory `kold-span train` wrote (loaded
    on the first doc). `span_keys` maps the span types whose `doc.spans` key is not the default; `alignment_mode`
    says how a span off token boundaries becomes tokens ("strict", "contract", "expand"); `batch_size` windows go
    through the network per forward pass, on `device`, run by `runtime`: "torch", "onnx" (the graph `kold-span
    export` wrote into the model directory) or "auto" (that graph when there is one and the device is the CPU).
    """
    return KoldSpanComponent(name, model, span_keys, alignment_mode, batch_size, device, runtime)
