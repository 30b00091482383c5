"""Agreement report of a corpus's raw annotations: `kold-span agreement FILE --format NAME --out DIR`.

The path reads top to bottom: a corpus reader gives examples with per-annotator
`Annotation`s → `ratings_table` turns one label into a ratings table (per item,
annotator → label; the format of `kold_span.agreement`) → `build_report` computes the
coefficients with `kold_span.agreement` → `write_report` writes report.md,
report.json, kappa_heatmap.png and entropy_hist.png.

Labels may be bool, str, int or float (one kind per label). They are categories unless
`level` says otherwise: at ``"nominal"`` the report gives Fleiss' kappa, Cohen's kappa and
alpha; at ``"ordinal"`` a weighted Cohen's kappa (`weights`, linear or quadratic) and the
ordinal alpha; at ``"interval"`` and ``"ratio"`` alpha alone, since a kappa treats labels
as categories or ranks, not as amounts.

How: `ratings` (examples → table), `stats` (coefficients, bias, entropy, spans; intervals from
`bootstrap`), `render` (report.md and the summary) and `plots` (the PNGs).

Example:
    >>> from kold_span import corpora
    >>> examples = corpora.read("multipico", "tests/fixtures/corpora/multipico")  # doctest: +SKIP
    >>> report = build_report(examples, group_by="lang", n_boot=200)  # doctest: +SKIP
    >>> write_report(report, "out/agreement")  # doctest: +SKIP
"""
from __future__ import annotations

import io
import statistics
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from kold_span import agreement
from kold_span.agreement.bootstrap import CONFIDENCE, DEFAULT_N_BOOT, MAX_N_BOOT
from kold_span.agreement.plots import plot_entropy_hist, plot_kappa_heatmap
from kold_span.agreement.ratings import RatingsTable, default_label, default_span_type, ratings_table
from kold_span.agreement.render import render_markdown
from kold_span.agreement.stats import bias_stats, entropy_stats, label_stats, span_stats
from kold_span.data.atomic import atomic_write, write_text_atomic
from kold_span.data.example import Example
from kold_span.data.jsonl import finite_or_null, json_text
from kold_span.errors import ArgumentError, DataError

DEFAULT_WEIGHTS = "quadratic"  # of the weighted kappa at level ordinal
MAX_PAIR_CIS = 100  # pairs (most shared items first) that get a bootstrap interval of their own
FORMATS = ("kold", "multipico", "toxic_spans_raw", "jsonl")
FILES = ("report.md", "report.json", "kappa_heatmap.png", "entropy_hist.png")


def build_report(examples: Sequence[Example], label: Optional[str] = None, span_type: Optional[str] = None,
                 group_by: Optional[str] = None, n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                 level: str = "nominal", weights: Optional[str] = None) -> dict[str, Any]:
    """Agreement statistics of one label (and one span type) of examples with raw annotations: a JSON-ready dict, the
    input of `write_report`.

    `label` defaults to `default_label`; `span_type` (character-level agreement) to the first one present (no span
    section when the annotations carry no spans). With `group_by` (a `meta` key, e.g. "lang") the label statistics
    are repeated per value. `n_boot` item resamples give the 95% intervals. `level` is the label's level of
    measurement (`agreement.LEVELS`); at "ordinal", `weights` are those of Cohen's kappa (default
    `DEFAULT_WEIGHTS`), which no other level takes. No example with annotations, a label that is not a single value
    per annotator or mixes kinds, or a label that is not a number at a level other than nominal, is a `DataError`;
    `n_boot` outside 1 to `MAX_N_BOOT`, a `group_by` key no example's meta has, an unknown level or weights, weights
    at a level other than ordinal, or no annotation holding `label` or `span_type`, an `ArgumentError`.
    """
    if not any(example.annotations for example in examples):
        raise DataError("no example carries per-annotator annotations; read the corpus with a reader "
                        "that keeps them (kold, multipico, toxic_spans_raw, or jsonl written from one)")
    if not 1 <= n_boot <= MAX_N_BOOT:
        raise ArgumentError(f"n_boot must be from 1 to {MAX_N_BOOT}, got {n_boot}")
    if group_by is not None:
        keys = sorted({key for example in examples for key in example.meta})
        if group_by not in keys:
            raise ArgumentError(f"group_by {group_by!r}: no example has this meta field; the fields present: "
                                f"{', '.join(keys) or 'none'}")
    weights = _level_weights(level, weights)
    label = label or default_label(examples)
    table = ratings_table(examples, label)
    if not table.ratings:
        raise ArgumentError(f"no annotation carries the label {label!r}")
    if level != "nominal" and table.value_kind != "number":
        example, value = next((ex, v) for ex, item in zip(table.examples, table.ratings) for v in item.values())
        raise DataError(f"level {level!r} needs numeric labels, but label {label!r} holds {table.value_kind} values "
                        f"(example {example.id!r}: {value!r}); use --level nominal, or write the labels as numbers")
    if span_type is not None:
        known = sorted({name for ex in examples for a in ex.annotations for name in a.spans})
        if span_type not in known:
            raise ArgumentError(f"no annotation marks spans of type {span_type!r}; span types present: "
                                f"{', '.join(known) or 'none'}")
    span_type = span_type or default_span_type(examples)
    stats = label_stats(table.ratings, n_boot, seed, pair_cis=MAX_PAIR_CIS, level=level, weights=weights)
    rated = Counter(a for item in table.ratings for a in item)
    per_item = sorted(len(item) for item in table.ratings)
    report: dict[str, Any] = {
        "label": label,
        "label_kind": table.value_kind,
        "level": level,
        "kappa_weights": weights,
        "n_examples": len(examples),
        "unrated_examples": table.unrated_examples,
        "missing_values": table.missing_values,
        "duplicate_annotations": table.duplicate_annotations,
        "ratings_per_item": {"min": per_item[0], "median": statistics.median(per_item), "max": per_item[-1]},
        "annotator_items": {a: n for a, n in sorted(rated.items(), key=lambda kv: (-kv[1], str(kv[0])))},
        "bootstrap": {"n_boot": n_boot, "seed": seed, "confidence": CONFIDENCE, "unit": "items"},
        **stats,
        "bias": bias_stats(table.ratings),
        "entropy": entropy_stats(table),
        "spans": span_stats(examples, span_type) if span_type else None,
        "groups": None,
    }
    if group_by:
        report["groups"] = {"key": group_by, "rows": _group_rows(table, group_by, n_boot, seed, level, weights)}
    return report


def _level_weights(level: str, weights: Optional[str]) -> Optional[str]:
    """The kappa weights a level uses: `weights` (default `DEFAULT_WEIGHTS`) at ordinal, none elsewhere."""
    if level not in agreement.LEVELS:
        raise ArgumentError(f"level must be one of {agreement.LEVELS}, got {level!r}")
    if weights is not None and weights not in agreement.KAPPA_WEIGHTS:
        raise ArgumentError(f"kappa weights must be one of {agreement.KAPPA_WEIGHTS}, got {weights!r}")
    if level != "ordinal":
        if weights is not None:
            raise ArgumentError(f"kappa weights apply at level 'ordinal' only (a weighted kappa needs ranked "
                                f"labels), got weights {weights!r} at level {level!r}")
        return None
    return weights or DEFAULT_WEIGHTS


def _group_rows(table: RatingsTable, key: str, n_boot: int, seed: int, level: str,
                weights: Optional[str]) -> list[dict[str, Any]]:
    """`label_stats` per value of `meta[key]` (pairs left out to keep the JSON small)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for example, item in zip(table.examples, table.ratings):
        groups.setdefault(str(example.meta.get(key)), []).append(item)
    rows = []
    for value in sorted(groups):
        stats = label_stats(groups[value], n_boot, seed, level=level, weights=weights)
        if stats["cohen"]:
            stats["cohen"] = {k: v for k, v in stats["cohen"].items() if k != "pairs"}
        rows.append({"group": value, **stats})
    return rows


def write_report(report: Mapping[str, Any], out_dir: Union[str, Path]) -> list[Path]:
    """Write report.md, report.json, kappa_heatmap.png and entropy_hist.png into `out_dir`; returns their paths.

    Every file is rendered before the first is written, and each is written whole or not at all
    (`atomic_write`): a report that fails leaves the previous files as they were.
    """
    out = Path(out_dir)
    paths = [out / name for name in FILES]
    markdown = render_markdown(report)
    data = json_text(finite_or_null(report), indent=1) + "\n"
    heatmap, histogram = io.BytesIO(), io.BytesIO()
    plot_kappa_heatmap(report, heatmap)
    plot_entropy_hist(report, histogram)
    write_text_atomic(paths[0], markdown)
    write_text_atomic(paths[1], data)
    for path, image in zip(paths[2:], (heatmap, histogram)):
        with atomic_write(path, "wb") as f:
            f.write(image.getvalue())
    return paths


def run(path: Union[str, Path], fmt: str, out_dir: Union[str, Path], *,
        reader_options: Optional[Mapping[str, Any]] = None, **options) -> dict[str, Any]:
    """Read a corpus, build its report (`options` go to `build_report`) and write it to `out_dir`."""
    from kold_span import corpora

    reader_options = dict(reader_options or {})
    examples = corpora.read(fmt, path, **reader_options)
    skipped = getattr(corpora.get_reader(fmt), "last_report", None)
    report = {"source": {"path": str(path), "format": fmt, "reader_options": reader_options,
                         "skipped_records": skipped.count if skipped is not None else 0}}
    report.update(build_report(examples, **options))
    write_report(report, out_dir)
    return report
