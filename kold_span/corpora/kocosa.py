"""KoCoSa (Yu-billie/KoCoSa_sarcasm_detection): Korean dialogue sarcasm with explanations.

The file is a pandas-style dict-of-dicts JSON: `{"Context": {"0": ...}, "Response": {...},
"Sarcasm_Label": {...}, "Sarcasm_Explanation": {...}}`, all four keyed by the same record keys.
`Context` holds one turn per line ("A: …" / "B: …"; a few lines are stage directions such as
"(A few minutes later)" without a speaker mark); `Response` is one marked turn. The reader's
`speaker_swap` is the KoCoSa paper's augmentation (`data.transforms.swap_speakers`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from kold_span.corpora import register
from kold_span.corpora._common import bad_field, find_file, reports_skipped
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Example
from kold_span.data.jsonl import parse_json_document, read_utf8
from kold_span.data.transforms import swap_share
from kold_span.errors import ArgumentError, DataError

COLUMNS = ("Context", "Response", "Sarcasm_Label", "Sarcasm_Explanation")
SARCASM = {"Sarcasm": True, "Non-Sarcasm": False}
_MARK = re.compile(r"^([A-Z]):")


@register("kocosa")
@reports_skipped("kocosa")
def read_kocosa(path: Path, *, bad: BadRecords, split: str = "dev", speaker_swap: float = 0.0,
                seed: int = 0) -> list[Example]:
    """Read a KoCoSa JSON file (a directory means its `KoCoSa_{split}.json`).

    `speaker_swap` is the share of examples whose speakers are swapped (0.5 reproduces the paper's augmentation;
    exactly round(share × n) examples, chosen with `seed`). Examples have id `<file stem>-<record key>`; `context` is
    the list of context turns (each stripped, blank lines dropped, speaker marks kept: "A: …"); `text` is the stripped
    response with its mark; `labels["sarcasm"]` is True for "Sarcasm", False for "Non-Sarcasm"; meta holds "speakers"
    (one letter or None per context turn), "response_speaker", "explanation" and "speakers_swapped".

    Example:
        >>> import json, tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> columns = {"Context": {"0": "A: 시험 망쳤어\\nB: 무슨 일 있었어?"}, "Response": {"0": "A: 정말 최고의 하루네"},
        ...            "Sarcasm_Label": {"0": "Sarcasm"}, "Sarcasm_Explanation": {"0": "A가 반대로 말한다"}}
        >>> _ = (Path(folder.name) / "KoCoSa_dev.json").write_text(json.dumps(columns), encoding="utf-8")
        >>> [ex] = read_kocosa(folder.name)
        >>> ex.id, ex.context, ex.text, ex.labels, ex.meta["speakers"]
        ('KoCoSa_dev-0', ['A: 시험 망쳤어', 'B: 무슨 일 있었어?'], 'A: 정말 최고의 하루네', {'sarcasm': True}, ['A', 'B'])
        >>> [ex] = read_kocosa(folder.name, speaker_swap=1.0)
        >>> ex.context, ex.text, ex.meta["explanation"]
        (['B: 시험 망쳤어', 'A: 무슨 일 있었어?'], 'B: 정말 최고의 하루네', 'B가 반대로 말한다')
        >>> folder.cleanup()
    """
    if not 0.0 <= speaker_swap <= 1.0:
        raise ArgumentError(f"kocosa: speaker_swap must be between 0 and 1, got {speaker_swap!r}")
    file = find_file(path, [f"KoCoSa_{split}.json"], "kocosa")
    columns = _load_columns(file)
    keys = list(dict.fromkeys(key for column in COLUMNS for key in columns[column]))
    examples = []
    for key in keys:
        where = f"{file}: record {key!r}"
        with bad.guard():
            examples.append(_example(f"{file.stem}-{key}", {c: columns[c].get(key) for c in COLUMNS}, where))
    return swap_share(examples, speaker_swap, seed) if speaker_swap else examples


def _load_columns(file: Path) -> dict[str, dict[str, Any]]:
    """The four column dicts of the file; a missing or malformed column is a `DataError`."""
    data = parse_json_document(read_utf8(file), file)
    if not isinstance(data, dict):
        raise DataError(f"{file}: expected a JSON object of columns {list(COLUMNS)}, got {type(data).__name__}")
    for column in COLUMNS:
        if not isinstance(data.get(column), dict):
            raise DataError(f"{file}: column {column!r} missing or not an object of records")
    return data


def _example(example_id: str, record: dict[str, Any], where: str) -> Example:
    """One record (column → value) → an example."""
    for column in COLUMNS:
        if not isinstance(record[column], str):
            problem = "missing" if record[column] is None else f"expected a string, got {record[column]!r}"
            raise bad_field(where, column, problem)
    turns = [line.strip() for line in record["Context"].split("\n") if line.strip()]
    if not turns:
        raise bad_field(where, "Context", "no dialogue turns")
    response = record["Response"].strip()
    response_speaker = _speaker(response)
    if response_speaker is None:
        raise bad_field(where, "Response", f"expected a speaker mark like 'A: …', got {response[:30]!r}")
    label = record["Sarcasm_Label"]
    if label not in SARCASM:
        raise bad_field(where, "Sarcasm_Label", f"expected one of {list(SARCASM)}, got {label!r}")
    return Example(id=example_id, text=response, context=turns, labels={"sarcasm": SARCASM[label]},
                   meta={"speakers": [_speaker(t) for t in turns], "response_speaker": response_speaker,
                         "explanation": record["Sarcasm_Explanation"], "speakers_swapped": False})


def _speaker(turn: str) -> Optional[str]:
    """The speaker letter of a turn "A: …", or None for a line without a mark."""
    match = _MARK.match(turn)
    return match.group(1) if match else None
