"""The KOLD v1 record layout shared by the sample generator and the test fixtures.

Standard library only. Raw annotator indices follow KOLD: the end index is INCLUSIVE
(spans are end-exclusive everywhere else here). The gold fields (OFF, TGT, GRP, OFF_span,
TGT_span) are derived from three raw annotations by `gold_from_raw`, the at-least-2-of-3
rule that data/sample/README.md describes; it is written without kold_span, so that the
package's KOLD reader is checked against an independent implementation.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Optional, Sequence

SPAN_SEPARATOR = "|"  # joins the texts of several gold spans in OFF_span / TGT_span

Span = tuple[int, int]  # end-exclusive


# Target groups: GRP name -> the raw (Korean, hierarchical) name annotators pick.
# Feminists sit under "gender" in the raw names but under "others" in GRP, as in KOLD.
GROUPS: dict[str, str] = {
    "gender-women": "집단-성 정체성-여성",
    "gender-men": "집단-성 정체성-남성",
    "gender-lgbtq+": "집단-성 정체성-성소수자",
    "race-chinese": "집단-인종 및 국적-중국인",
    "race-black": "집단-인종 및 국적-흑인",
    "race-korean-chinese": "집단-인종 및 국적-조선족",
    "race-indian": "집단-인종 및 국적-인도인",
    "race-southeast-asian": "집단-인종 및 국적-동남아시아인",
    "race-others": "집단-인종 및 국적-기타",
    "politics-progressive": "집단-정치 성향-진보",
    "politics-conservative": "집단-정치 성향-보수",
    "religion-christian": "집단-종교-기독교",
    "religion-muslim": "집단-종교-이슬람",
    "religion-catholic": "집단-종교-천주교",
    "religion-buddhist": "집단-종교-불교",
    "religion-others": "집단-종교-기타",
    "others-feminist": "집단-성 정체성-페미니스트",
    "others-age": "집단-기타-연령",
    "others-disabled": "집단-기타-장애인",
    "others-diseased": "집단-기타-질병",
    "others-others": "집단-기타-기타",
}
RAW_TO_GRP = {raw: grp for grp, raw in GROUPS.items()}
UNKNOWN_GROUP = "알 수 없음"  # raw "don't know"; never counts towards GRP
TARGET_TYPES = ("individual", "group", "others", "untargeted")
NOT_SPECIFIED = "not specified"


# --------------------------------------------------------------------------------------
# Gold fields from raw annotations (the at-least-2-of-3 rule).


def check_raw(comment: str, raw: list[dict[str, Any]], where: str) -> None:
    """Fail loudly when parallel index lists differ in length or point outside the comment."""
    for i, a in enumerate(raw):
        for kind in ("off", "tgt"):
            starts, ends = a[f"{kind}_start_idx"], a[f"{kind}_end_idx"]
            assert len(starts) == len(ends), f"{where}: annotator {i} {kind} start/end lengths differ"
            for s, e in zip(starts, ends):
                assert 0 <= s <= e < len(comment), f"{where}: annotator {i} {kind} span [{s}..{e}] outside comment"


def majority_offsets(comment: str, raw: list[dict[str, Any]], kind: str) -> list[Span]:
    """End-exclusive spans of the characters marked by at least 2 annotators (inclusive raw ends)."""
    votes = [0] * len(comment)
    for a in raw:
        marked = set()
        for s, e in zip(a[f"{kind}_start_idx"], a[f"{kind}_end_idx"]):
            marked.update(range(s, e + 1))
        for i in marked:
            votes[i] += 1
    spans: list[Span] = []
    start: Optional[int] = None
    for i, v in enumerate(votes + [0]):
        if v >= 2 and start is None:
            start = i
        elif v < 2 and start is not None:
            spans.append((start, i))
            start = None
    return spans


def span_text(comment: str, spans: list[Span]) -> str:
    """The gold span field: the covered substrings joined by SPAN_SEPARATOR ("" when none)."""
    return SPAN_SEPARATOR.join(comment[s:e] for s, e in spans)


def gold_from_raw(comment: str, raw: list[dict[str, Any]]) -> dict[str, Any]:
    """OFF, TGT, GRP, OFF_span, TGT_span from three raw annotations."""
    off = sum(bool(a["offensiveness"]) for a in raw) >= 2
    if not off:
        return {"OFF": False, "TGT": None, "GRP": None, "OFF_span": "", "TGT_span": ""}
    type_votes = {t: 0 for t in TARGET_TYPES}
    group_votes = {g: 0 for g in GROUPS}
    for a in raw:
        for t in {t for inner in a["target"] for t in inner if t != NOT_SPECIFIED}:
            type_votes[t] += 1
        for g in {RAW_TO_GRP[r] for inner in a["target_group"] for r in inner if r != UNKNOWN_GROUP}:
            group_votes[g] += 1
    best = max(type_votes.values())
    assert best >= 2, f"no majority target type for {comment!r}"
    tgt = next(t for t in TARGET_TYPES if type_votes[t] == best)
    grp = ", ".join(g for g in GROUPS if group_votes[g] >= 2) if tgt == "group" else ""
    return {
        "OFF": True,
        "TGT": tgt,
        "GRP": grp or None,
        "OFF_span": span_text(comment, majority_offsets(comment, raw, "off")),
        "TGT_span": span_text(comment, majority_offsets(comment, raw, "tgt")),
    }


def annotation(aid: int, offensive: bool, off: Sequence[Span] = (), target: Sequence[str] = (),
               groups: Sequence[str] = (), tgt: Sequence[Span] = ()) -> dict[str, Any]:
    """One raw annotator dict; spans are given end-exclusive and written with inclusive ends."""
    return {
        "offensiveness": offensive,
        "annotator_id": aid,
        "off_start_idx": [s for s, _ in off],
        "off_end_idx": [e - 1 for _, e in off],
        "target": [list(target)] if target else [],
        "target_group": [list(groups)] if groups else [],
        "tgt_start_idx": [s for s, _ in tgt],
        "tgt_end_idx": [e - 1 for _, e in tgt],
    }


def make_record(guid: str, source: str, date: str, title: str, comment: str,
                raw: list[dict[str, Any]]) -> dict[str, Any]:
    """A KOLD record with gold fields derived from `raw`."""
    assert SPAN_SEPARATOR not in comment, f"{guid}: comment contains the span separator"
    check_raw(comment, raw, guid)
    return {"guid": guid, "source": source, "date": date, "title": title, "comment": comment,
            **gold_from_raw(comment, raw), "raw_labels": raw}


def write_json(path: Path, records: list[dict[str, Any]]) -> None:
    """Pretty but compact UTF-8 JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def summary(records: list[dict[str, Any]]) -> str:
    """Counts for the README and the console."""
    off = sum(r["OFF"] for r in records)
    tgt = Counter(r["TGT"] for r in records if r["OFF"])
    grp = Counter(g for r in records if r["GRP"] for g in r["GRP"].split(", "))
    multi_grp = sum(1 for r in records if r["GRP"] and ", " in r["GRP"])
    multi_off = sum(1 for r in records if SPAN_SEPARATOR in r["OFF_span"])
    empty_off = sum(1 for r in records if r["OFF"] and not r["OFF_span"])
    disagree = sum(1 for r in records if len({a["offensiveness"] for a in r["raw_labels"]}) > 1)
    lines = [f"records: {len(records)}  offensive: {off}  not offensive: {len(records) - off}",
             f"TGT: {dict(sorted(tgt.items()))}",
             f"GRP ({len(grp)} groups, {multi_grp} multi-group records): {dict(sorted(grp.items()))}",
             f"multi-span OFF: {multi_off}  offensive without OFF_span: {empty_off}  "
             f"offensiveness disagreement: {disagree}"]
    return "\n".join(lines)
