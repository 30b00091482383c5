"""Perspective's attributes as a model's tasks and labels, and its AnalyzeComment response.

An attribute's summary score is the probability of one label of one sequence task (OFF = true);
its span scores are the spans of one span task, at character precision (Perspective scores whole
sentences). A span-only attribute scores the comment with its most confident span (0 without one).

The default mapping, from the model's tasks alone:

- a true/false task: its name in capitals (`OFF`), scoring `true`, with the spans of the span task
  of the same source (one gated by it first);
- any other sequence task: one attribute per label, `TASK_LABEL` in capitals (`GRP_GROUP`);
- a span task no attribute above took: its name in capitals (`TGT_SPAN`);
- `TOXICITY`, the name pipelines written for Perspective ask for: the true/false task of source
  `OFF` (KOLD's offensive-or-not), when the model has one.

`--attributes FILE` (YAML or JSON) replaces the default for a model::

    languages: [ko]
    attributes:
      TOXICITY: {task: OFF, label: "true", spans: OFF_span}
      TARGETED_INSULT: {spans: TGT_span}
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from kold_span.config.choices import TaskKind
from kold_span.config.binding import build_dataclass
from kold_span.config.yaml12 import read_yaml_document
from kold_span.errors import ConfigError, RequestError
from kold_span.inference.inputs import shown_names
from kold_span.models.tasks import Task
from kold_span.service.requests import AnalyzeRequest
from kold_span.text.align import utf16_units

DEFAULT_LANGUAGES = ("ko",)


@dataclass(frozen=True)
class Attribute:
    """One attribute: a sequence task's label probability and/or a span task's spans.

    Example:
        >>> off = Attribute("OFF", task="OFF", label="true", span_type="OFF")
        >>> record = {"labels": {"OFF": {"label": True, "probs": {"false": 0.1, "true": 0.9}}},
        ...           "spans": [{"type": "OFF", "start": 2, "end": 4, "text": "바보", "score": 0.8}]}
        >>> off.summary(record), off.span_scores(record)
        (0.9, [{'begin': 2, 'end': 4, 'score': {'value': 0.8, 'type': 'PROBABILITY'}}])
    """

    name: str
    task: Optional[str] = None
    label: Optional[str] = None
    spans: Optional[str] = None  # the span task's name
    span_type: Optional[str] = None  # the `type` its spans carry (the task's source)

    def summary(self, record: dict[str, Any]) -> float:
        """The attribute's score of one prediction record."""
        if self.task is not None:
            return float(record["labels"][self.task]["probs"][self.label])
        return max((s["score"] for s in record["spans"] if s["type"] == self.span_type), default=0.0)

    def span_scores(self, record: dict[str, Any], units: Optional[list[int]] = None) -> list[dict[str, Any]]:
        """Perspective's `spanScores`: the record's spans of this attribute's type, at code-point offsets, or at
        UTF-16 offsets (Perspective's) given `units` (`text.align.utf16_units` of the comment)."""
        def at(offset: int) -> int:
            return units[offset] if units is not None else offset

        return [{"begin": at(s["start"]), "end": at(s["end"]), "score": {"value": s["score"], "type": "PROBABILITY"}}
                for s in record["spans"] if s["type"] == self.span_type]

    def describe(self) -> dict[str, Any]:
        """What `/info` shows of it."""
        return {k: v for k, v in (("task", self.task), ("label", self.label), ("spans", self.spans)) if v}


@dataclass
class AttributeMap:
    """A model's attributes by name and the languages it answers for."""

    attributes: dict[str, Attribute]
    languages: list[str] = field(default_factory=lambda: list(DEFAULT_LANGUAGES))


def attribute_name(*parts: str) -> str:
    """Perspective's spelling: capitals, digits and underscores.

    Example:
        >>> attribute_name("GRP", "group"), attribute_name("OFF_span"), attribute_name("sarcasm", "not sarcastic")
        ('GRP_GROUP', 'OFF_SPAN', 'SARCASM_NOT_SARCASTIC')
    """
    return re.sub(r"[^A-Z0-9]+", "_", "_".join(parts).upper()).strip("_")


def _span_task_for(task: Task, tasks: Sequence[Task]) -> Optional[Task]:
    """The span task that shows where a true/false task's `true` lies: same source, gated by it first."""
    same = [t for t in tasks if t.kind is TaskKind.SPAN and t.source == task.source]
    return next((t for t in same if t.gate == task.name), same[0] if same else None)


def default_attributes(tasks: Sequence[Task]) -> AttributeMap:
    """The default mapping (see the module docstring).

    Example:
        >>> tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true")),
        ...          Task("OFF_span", "span", "OFF", gate="OFF"), Task("TGT_span", "span", "TGT", gate="OFF")]
        >>> {name: a.describe() for name, a in default_attributes(tasks).attributes.items()}
        ... # doctest: +NORMALIZE_WHITESPACE
        {'OFF': {'task': 'OFF', 'label': 'true', 'spans': 'OFF_span'}, 'TGT_SPAN': {'spans': 'TGT_span'},
         'TOXICITY': {'task': 'OFF', 'label': 'true', 'spans': 'OFF_span'}}
    """
    found: list[Attribute] = []
    used_spans = set()
    for task in tasks:
        if task.kind is not TaskKind.SEQUENCE:
            continue
        if task.is_boolean:
            span = _span_task_for(task, tasks)
            if span is not None:
                used_spans.add(span.name)
            found.append(Attribute(attribute_name(task.name), task.name, "true", span and span.name,
                                   span and span.source))
        else:
            found += [Attribute(attribute_name(task.name, label), task.name, label) for label in task.labels]
    found += [Attribute(attribute_name(t.name), spans=t.name, span_type=t.source)
              for t in tasks if t.kind is TaskKind.SPAN and t.name not in used_spans]
    toxicity = next((a for a in found if a.task and a.label == "true"
                     and next(t for t in tasks if t.name == a.task).source == "OFF"), None)
    if toxicity is not None and all(a.name != "TOXICITY" for a in found):
        found.append(Attribute("TOXICITY", toxicity.task, toxicity.label, toxicity.spans, toxicity.span_type))
    attributes: dict[str, Attribute] = {}
    for attribute in found:
        if attribute.name in attributes:
            raise ConfigError(f"two of the model's tasks both make attribute {attribute.name!r}; "
                              "name the attributes yourself with --attributes FILE")
        attributes[attribute.name] = attribute
    return AttributeMap(attributes)


@dataclass
class _AttributeEntry:
    task: Optional[str] = None
    label: Optional[str] = None
    spans: Optional[str] = None


def load_attributes(path: Union[str, Path], tasks: Sequence[Task]) -> AttributeMap:
    """An attribute mapping file (YAML or JSON), checked against the model's tasks.

    Every error names the file and the key.
    """
    path = Path(path)
    raw = read_yaml_document(path, ConfigError)
    where = str(path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with keys attributes (and languages)")
    if unknown := sorted(set(raw) - {"attributes", "languages"}):
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'; allowed keys here: attributes, languages")
    entries = raw.get("attributes")
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(f"{where}: 'attributes' must be a mapping of attribute names to "
                          "{task, label, spans}, with at least one")
    languages = raw.get("languages", list(DEFAULT_LANGUAGES))
    if not isinstance(languages, list) or not all(isinstance(x, str) for x in languages):
        raise ConfigError(f"{where}: 'languages' must be a list of language codes, e.g. [ko]")
    by_name = {t.name: t for t in tasks}
    sequence = [t.name for t in tasks if t.kind is TaskKind.SEQUENCE]
    spans = [t.name for t in tasks if t.kind is TaskKind.SPAN]
    attributes = {}
    for name, entry in entries.items():
        key = f"attributes.{name}"
        if isinstance(entry, dict) and isinstance(entry.get("label"), bool):
            entry = {**entry, "label": str(entry["label"]).lower()}  # YAML's true is the label "true"
        spec = build_dataclass(_AttributeEntry, entry, where, f"{key}.")
        if spec.task is None and spec.spans is None:
            raise ConfigError(f"{where}: '{key}' needs a task (a sequence task: {', '.join(sequence) or 'none'}) "
                              f"or spans (a span task: {', '.join(spans) or 'none'})")
        label = spec.label
        if spec.task is not None:
            task = by_name.get(spec.task)
            if task is None or task.kind is not TaskKind.SEQUENCE:
                raise ConfigError(f"{where}: '{key}.task' is {spec.task!r}; the model's sequence tasks are "
                                  f"{', '.join(sequence) or 'none'}")
            label = label if label is not None else ("true" if task.is_boolean else None)
            if label not in task.labels:
                raise ConfigError(f"{where}: '{key}.label' is {label!r}; task {task.name} has labels "
                                  f"{', '.join(task.labels)}")
        elif label is not None:
            raise ConfigError(f"{where}: '{key}.label' needs a task")
        if spec.spans is not None and spec.spans not in spans:
            raise ConfigError(f"{where}: '{key}.spans' is {spec.spans!r}; the model's span tasks are "
                              f"{', '.join(spans) or 'none'}")
        attributes[str(name)] = Attribute(str(name), spec.task, label, spec.spans,
                                          by_name[spec.spans].source if spec.spans else None)
    return AttributeMap(attributes, languages)


def _primary(language: str) -> str:
    return language.split("-")[0].split("_")[0].lower()


# The script each language is written in (ISO 15924), for telling a comment's language by its letters.
SCRIPTS = {"ko": "Hang", "ja": "Jpan", "zh": "Hani", "en": "Latn", "de": "Latn", "fr": "Latn", "es": "Latn",
           "it": "Latn", "pt": "Latn", "nl": "Latn", "pl": "Latn", "tr": "Latn", "id": "Latn", "vi": "Latn",
           "ru": "Cyrl", "uk": "Cyrl", "ar": "Arab", "hi": "Deva", "th": "Thai", "el": "Grek", "he": "Hebr"}
SCRIPT_NAMES = {"HANGUL": "Hang", "LATIN": "Latn", "CJK": "Hani", "HIRAGANA": "Jpan", "KATAKANA": "Jpan",
                "CYRILLIC": "Cyrl", "ARABIC": "Arab", "DEVANAGARI": "Deva", "THAI": "Thai", "GREEK": "Grek",
                "HEBREW": "Hebr", "FULLWIDTH": "Latn"}
KOREAN_SHARE = 0.3  # Korean comments mix in Latin words (MC, lol); this share of Hangul letters is Korean


def letter_script(text: str) -> Optional[str]:
    """The script most of the text's letters are in (Hangul from `KOREAN_SHARE` of them); None without letters.

    Example:
        >>> letter_script("저 MC 진행할 때마다 밥맛 떨어진다"), letter_script("what a nice day"), letter_script("ㅋㅋ 123")
        ('Hang', 'Latn', 'Hang')
        >>> letter_script("123 !!") is None
        True
    """
    counts: Counter = Counter()
    for ch in text:
        if ch.isalpha():
            counts[SCRIPT_NAMES.get(unicodedata.name(ch, "").split(" ")[0], "Zyyy")] += 1
    if not counts:
        return None
    if counts["Hang"] >= KOREAN_SHARE * sum(counts.values()):
        return "Hang"
    return counts.most_common(1)[0][0]


def detect_languages(text: str, mapping: AttributeMap) -> list[str]:
    """The comment's language among the model's, told by its letters' script; `und-<script>` for a
    script none of the model's languages is written in, and the model's languages when there are no letters.

    Example:
        >>> m = AttributeMap({})
        >>> detect_languages("꺼져라 진짜", m), detect_languages("get lost", m), detect_languages("?!", m)
        (['ko'], ['und-Latn'], ['ko'])
    """
    script = letter_script(text)
    if script is None:
        return list(mapping.languages)
    same = [x for x in mapping.languages if SCRIPTS.get(_primary(x)) == script]
    if same:
        return same[:1]
    if all(_primary(x) in SCRIPTS for x in mapping.languages):
        return [f"und-{script}"]
    return list(mapping.languages)  # a language whose script is not known here: no grounds to refuse


def unsupported_language(attribute: str, languages: list[str]) -> RequestError:
    """Perspective's 400 for a language the attribute was not trained on."""
    return RequestError(400, f"Attribute {attribute} does not support request languages: {', '.join(languages)}",
                        "languages", [{"errorType": "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE",
                                       "languageNotSupportedByAttributeError": {
                                           "detectedLanguages": languages, "attribute": attribute}}])


def check_analyze(request: AnalyzeRequest, mapping: AttributeMap) -> list[str]:
    """The request's languages (given, or detected); a 400 for an attribute the model does not have or a
    language it was not trained for (LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE, as Perspective answers it)."""
    if unknown := [name for name in request.thresholds if name not in mapping.attributes]:
        raise RequestError(400, f"requestedAttributes: this model has no attribute {shown_names(unknown, False)}; "
                                f"it has {', '.join(mapping.attributes)}", f"requestedAttributes.{unknown[0]}")
    languages = request.languages or detect_languages(request.example.text, mapping)
    if mapping.languages:
        wanted = {_primary(x) for x in languages}
        if not wanted & {_primary(x) for x in mapping.languages}:
            raise unsupported_language(next(iter(request.thresholds)), languages)
    return languages


def analyze_response(request: AnalyzeRequest, record: dict[str, Any], mapping: AttributeMap,
                     languages: Optional[list[str]] = None) -> dict[str, Any]:
    """Perspective's AnalyzeComment response for one prediction record (`languages`: what `check_analyze`
    found; detected ones are also `detectedLanguages`, as Perspective answers a request without them).

    An attribute scoring under its `scoreThreshold` is left out, as Perspective leaves it out.
    """
    scores = {}
    for name, threshold in request.thresholds.items():
        attribute = mapping.attributes[name]
        value = attribute.summary(record)
        if threshold is not None and value < threshold:
            continue
        entry: dict[str, Any] = {"summaryScore": {"value": value, "type": "PROBABILITY"}}
        if request.span_annotations and attribute.spans:
            entry["spanScores"] = attribute.span_scores(record, utf16_units(request.example.text))
        scores[name] = entry
    languages = list(request.languages or languages or mapping.languages)
    response: dict[str, Any] = {"attributeScores": scores, "languages": languages}
    if not request.languages:
        response["detectedLanguages"] = languages
    if request.client_token is not None:
        response["clientToken"] = request.client_token
    return response
