"""MultiPICo (LeWiDi 2025 format): multilingual post/reply irony with every annotator's label.

`MP_<split>.json` maps a record key to {"annotation task", "text": {"post", "reply"},
"annotators" ("Ann0,Ann10,…"), "number of annotations", "annotations" ({"Ann0": "0"|"1"}),
"soft_label" ({"0.0": p, "1.0": p}), "split", "lang", "other_info": {"source", "level",
"language_variety"}}. One record is one post/reply pair; the dev file holds 3,005 of them.
`MP_annotators_meta.json` maps an annotator number ("0" for Ann0) to their Age, Gender,
Nationality, Ethnicity simplified, Country of birth, Country of residence, Student status
and Employment status.

Traits are keyed in snake case ("Country of birth" → "country_of_birth"); the values
"DATA_EXPIRED" and NaN (withdrawn or missing answers) become None, and whole-number ages
become ints.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Optional, Union

from kold_span.corpora import register
from kold_span.corpora._common import bad_field, find_file, reports_skipped
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Annotation, Example
from kold_span.data.jsonl import parse_json_document, read_utf8
from kold_span.errors import DataError

MISSING_TRAIT = "DATA_EXPIRED"
_CLASS_KEYS = {"0": "0", "0.0": "0", "1": "1", "1.0": "1"}


@register("multipico")
@reports_skipped("multipico")
def read_multipico(path: Path, *, bad: BadRecords, split: str = "dev",
                   annotators_meta: Optional[Union[str, Path]] = None) -> list[Example]:
    """Read MultiPICo post/reply pairs (`MP_<split>.json` or its directory) with every annotator's label and traits
    (`annotators_meta`, by default `MP_annotators_meta.json` beside the data file).

    Examples have id `<file stem>-<record key>`, `context` = post, `text` = reply, one `Annotation` per annotator
    (labels {"irony": bool}, traits from the metadata; empty traits for an annotator the metadata lacks),
    `labels["irony_soft"]` = {"0": p, "1": p} (the file's soft label, or the annotators' shares when it has none),
    `labels["irony"]` = the majority label (None when the annotators tie) and meta "lang", "source", "level",
    "language_variety".

    Example:
        >>> import json, tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> folder = Path(tmp.name)
        >>> records = {"p1": {"text": {"post": "Lovely weather today", "reply": "Sure, for ducks"},
        ...                   "annotations": {"Ann0": "1", "Ann3": "1", "Ann5": "0"}, "lang": "en"}}
        >>> traits = {"0": {"Age": 31.0, "Gender": "Female"}, "3": {"Age": "DATA_EXPIRED", "Gender": "Male"}}
        >>> _ = (folder / "MP_dev.json").write_text(json.dumps(records), encoding="utf-8")
        >>> _ = (folder / "MP_annotators_meta.json").write_text(json.dumps(traits), encoding="utf-8")
        >>> [ex] = read_multipico(folder)
        >>> ex.context, ex.text, ex.labels["irony"], ex.labels["irony_soft"]
        ('Lovely weather today', 'Sure, for ducks', True, {'0': 0.3333333333333333, '1': 0.6666666666666666})
        >>> [(a.annotator, a.traits) for a in ex.annotations]
        [('Ann0', {'age': 31, 'gender': 'Female'}), ('Ann3', {'age': None, 'gender': 'Male'}), ('Ann5', {})]
        >>> tmp.cleanup()
    """
    file = find_file(path, [f"MP_{split}.json"], "multipico")
    meta_file = Path(annotators_meta) if annotators_meta else file.with_name("MP_annotators_meta.json")
    traits = _read_traits(meta_file)
    records = _load_json(file)
    if not isinstance(records, dict):
        raise DataError(f"{file}: expected a JSON object of records keyed by id, got {type(records).__name__}")
    examples = []
    for key, record in records.items():
        with bad.guard():
            examples.append(_example(f"{file.stem}-{key}", record, traits, f"{file}: record {key!r}"))
    return examples


def _load_json(file: Path) -> Any:
    """Parse a JSON file (NaN allowed, as the metadata uses it); errors name the line."""
    if not file.is_file():
        raise FileNotFoundError(f"multipico: {file} not found")
    return parse_json_document(read_utf8(file), file)


def _read_traits(file: Path) -> dict[str, dict[str, Any]]:
    """Annotator id ("Ann12") → traits."""
    data = _load_json(file)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise DataError(f"{file}: expected a JSON object mapping annotator ids to objects of traits")
    # The metadata key "12" (or "Ann12") is "Ann12" in annotations; 'Country of birth' → 'country_of_birth'.
    return {key if key.startswith("Ann") else f"Ann{key}":
            {re.sub(r"\W+", "_", name.strip()).lower(): _trait_value(value) for name, value in answers.items()}
            for key, answers in data.items()}


def _trait_value(value: Any) -> Any:
    """None for withdrawn/missing answers, int for whole-number floats, else unchanged."""
    if value == MISSING_TRAIT or (isinstance(value, float) and math.isnan(value)):
        return None
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _example(example_id: str, record: Any, traits: dict[str, dict[str, Any]], where: str) -> Example:
    """One record → an example."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected an object, got {type(record).__name__}")
    text = record.get("text")
    if not isinstance(text, dict) or not all(isinstance(text.get(k), str) for k in ("post", "reply")):
        raise bad_field(where, "text", "expected an object with string fields 'post' and 'reply'")
    labels = record.get("annotations")
    if not isinstance(labels, dict) or not labels:
        raise bad_field(where, "annotations", "expected a non-empty object annotator → '0'/'1'")
    wrong = {a: v for a, v in labels.items() if v not in ("0", "1")}
    if wrong:
        raise bad_field(where, "annotations", f"expected labels '0' or '1', got {wrong}")
    listed = record.get("annotators")
    if isinstance(listed, str) and set(listed.split(",")) != set(labels):
        raise bad_field(where, "annotators", f"{listed!r} does not match the annotators of 'annotations'")
    ones = sum(v == "1" for v in labels.values())
    zeros = len(labels) - ones
    soft = _soft_label(record.get("soft_label"), where) or {"0": zeros / len(labels), "1": ones / len(labels)}
    other = record.get("other_info") or {}
    if not isinstance(other, dict):
        raise bad_field(where, "other_info", f"expected an object (source, level, language_variety), got {other!r}")
    return Example(
        id=example_id, text=text["reply"], context=text["post"],
        labels={"irony": None if ones == zeros else ones > zeros, "irony_soft": soft},
        annotations=[Annotation(annotator=a, labels={"irony": v == "1"}, traits=dict(traits.get(a, {})))
                     for a, v in labels.items()],
        meta={"lang": record.get("lang"), **{k: other.get(k) for k in ("source", "level", "language_variety")}})


def _soft_label(soft: Any, where: str) -> Optional[dict[str, float]]:
    """The file's soft label with keys "0"/"1", None when the record has none."""
    if soft is None:
        return None
    if not isinstance(soft, dict) or not set(soft) <= set(_CLASS_KEYS):
        raise bad_field(where, "soft_label", f"expected an object with keys '0.0' and '1.0', got {soft!r}")
    out = {"0": 0.0, "1": 0.0}
    for key, p in soft.items():
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
            raise bad_field(where, "soft_label", f"probability of {key!r} must be a number in [0, 1], got {p!r}")
        out[_CLASS_KEYS[key]] += float(p)
    if not math.isclose(out["0"] + out["1"], 1.0, abs_tol=1e-6):
        raise bad_field(where, "soft_label", f"probabilities sum to {out['0'] + out['1']}, not 1")
    return out
