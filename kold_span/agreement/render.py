"""The report as Markdown (report.md) and as the two-line summary the command prints."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from kold_span.agreement.coefficients import KAPPA_LEVELS
from kold_span.agreement.plots import CROWD, heatmap_annotators, kappa_name

MAX_PAIRS_LISTED = 30
MAX_BIASED_LISTED = 10
MIN_BIAS_ITEMS = 10
MAX_LABELS_LISTED = 20  # labels whose counts report.md lists (all are in report.json)


def render_markdown(report: Mapping[str, Any]) -> str:
    """The human-readable report."""
    source = report.get("source", {})
    lines = [f"# Agreement report: label `{report['label']}`", ""]
    if source:
        options = ", ".join(f"{k}={v!r}" for k, v in source.get("reader_options", {}).items()) or "none"
        lines += [f"- Source: `{source['path']}` (reader `{source['format']}`, options: {options})"]
        if source.get("skipped_records"):
            lines += [f"- Bad records skipped by the reader: {source['skipped_records']}"]
    boot = report["bootstrap"]
    lines += [f"- Level of measurement: **{report['level']}** ({_level_note(report)})",
              f"- Bootstrap: {boot['n_boot']} resamples of items, seed {boot['seed']}, "
              f"percentile {boot['confidence']:.0%} intervals", ""]
    lines += _data_section(report) + _coefficient_section(report) + _pairs_section(report)
    lines += _unanimity_section(report) + _bias_section(report) + _hard_case_section(report)
    lines += _span_section(report) + _group_section(report)
    return "\n".join(lines).rstrip() + "\n"


def _level_note(report: Mapping[str, Any]) -> str:
    """What the level means for the coefficients of the report, in a few words."""
    level = report["level"]
    if level == "nominal":
        return "labels are categories: Fleiss' and Cohen's kappa, Krippendorff's alpha"
    if level == "ordinal":
        return (f"labels are ranks: Cohen's kappa with {report['kappa_weights']} weights, "
                f"Krippendorff's ordinal alpha")
    return f"labels are amounts: Krippendorff's {level} alpha; kappas (categories or ranks) are not computed"


def _data_section(report: Mapping[str, Any]) -> list[str]:
    per_item = report["ratings_per_item"]
    counts = list(report["label_counts"].items())
    labels = ", ".join(f"`{lab}`: {n}" for lab, n in counts[:MAX_LABELS_LISTED])
    if len(counts) > MAX_LABELS_LISTED:
        labels += f", … (the first {MAX_LABELS_LISTED} in label order; all in report.json)"
    lines = ["## Data", "", "| | |", "|---|---|",
             f"| examples | {report['n_examples']} |",
             f"| items (examples with 1+ rating of `{report['label']}`) | {report['n_items']} |",
             f"| items with 2+ ratings | {report['n_items_multi']} |",
             f"| annotators | {report['n_annotators']} |",
             f"| ratings | {report['n_ratings']} |",
             f"| ratings per item (min / median / max) | "
             f"{per_item['min']} / {per_item['median']:g} / {per_item['max']} |",
             f"| labels ({len(report['label_counts'])}; ratings per label) | {labels} |", ""]
    left_out = [(report["unrated_examples"], "examples without any rating of the label (left out)"),
                (report["missing_values"], "annotations without a value of the label (None counts as not labelled)"),
                (report["duplicate_annotations"], "repeated annotations by one annotator of one example "
                                                  "(the first is kept)")]
    lines += [f"- {n} {what}" for n, what in left_out if n]
    return lines + ([""] if any(n for n, _ in left_out) else [])


def _coefficient_section(report: Mapping[str, Any]) -> list[str]:
    lines = ["## Chance-corrected agreement", "",
             "| coefficient | value | 95% CI | band | items used |", "|---|---|---|---|---|"]
    fleiss, cohen, alpha = report["fleiss"], report["cohen"], report["krippendorff"]
    if fleiss:
        lines.append(f"| Fleiss' kappa | {_fmt(fleiss['value'])} | not computed | {fleiss['band'] or 'n/a'} | "
                     f"the {fleiss['n_items_used']} items with exactly {fleiss['raters_per_item']} ratings "
                     f"(the modal number of raters among the {report['n_items_multi']} items with 2+) |")
    kappa = f"mean pairwise {kappa_name(report)}"
    if cohen and not cohen["n_pairs"]:
        lines.append(f"| {kappa} | n/a | n/a | n/a | no annotator pair shares 2+ items |")
    elif cohen:
        lines.append(f"| {kappa} | {_fmt(cohen['mean'])} | {_fmt_ci(cohen['ci'])} | "
                     f"{cohen['band'] or 'n/a'} | each pair's shared items; mean over the {cohen['n_pairs_defined']} "
                     f"defined of {cohen['n_pairs']} pairs sharing 2+ items |")
    if alpha:
        lines.append(f"| Krippendorff's alpha ({report['level']}) | {_fmt(alpha['value'])} | {_fmt_ci(alpha['ci'])} | "
                     f"{alpha['band'] or 'n/a'} | all {report['n_items_multi']} items with 2+ ratings "
                     f"(missing ratings allowed) |")
    if not (fleiss or cohen or alpha):
        lines.append("| (none: no item has 2 or more ratings) | | | | |")
    return lines + ["", "Bands: Landis & Koch, simplified (`agreement.interpret_kappa`).", ""]


def _pairs_section(report: Mapping[str, Any]) -> list[str]:
    if report["level"] not in KAPPA_LEVELS:
        return ["## Pairwise Cohen's kappa", "", f"Not computed at level {report['level']}: Cohen's kappa treats "
                f"labels as categories (or, weighted, as ranks). Use --level nominal or ordinal for it.", ""]
    name = kappa_name(report)
    lines = [f"## Pairwise {name}", "", f"![pairwise {name}](kappa_heatmap.png)", ""]
    shown = heatmap_annotators(report)
    if report["n_annotators"] > len(shown):
        lines += [f"The heatmap shows the {len(shown)} annotators with the most items, of "
                  f"{report['n_annotators']}.", ""]
    cohen = report["cohen"]
    if not cohen or not cohen["pairs"]:
        return lines + ["No annotator pair shares 2 or more items.", ""]
    pairs = cohen["pairs"][:MAX_PAIRS_LISTED]
    if len(cohen["pairs"]) > len(pairs):
        lines += [f"The {len(pairs)} pairs sharing the most items, of {len(cohen['pairs'])} "
                  f"(all pairs are in report.json):", ""]
    lines += ["| annotator A | annotator B | shared items | kappa | 95% CI |", "|---|---|---|---|---|"]
    lines += [f"| {p['a']} | {p['b']} | {p['n_items']} | {_fmt(p['kappa'])} | {_fmt_ci(p['ci'])} |" for p in pairs]
    return lines + [""]


def _unanimity_section(report: Mapping[str, Any]) -> list[str]:
    unanimity = report["unanimity"]
    if not unanimity:
        return []
    lines = ["## Unanimity", "", f"Items with 2+ ratings whose annotators all agree: "
             f"**{unanimity['overall']:.1%}** of {report['n_items_multi']}.", "",
             "| majority class | unanimous |", "|---|---|"]
    lines += [f"| `{c}` | {rate:.1%} |" for c, rate in unanimity["per_class"].items()]
    return lines + ["", "Per class: among items whose majority label is that class "
                        "(tied items only count overall).", ""]


def _bias_section(report: Mapping[str, Any]) -> list[str]:
    lines = ["## Annotator bias", ""]
    bias = report["bias"]
    if bias is None:
        return lines + ["Not computed: the labels are not bool or numbers.", ""]
    rows = bias["annotators"]
    if report["n_annotators"] > CROWD:
        rows = [r for r in rows if r["n_items"] >= MIN_BIAS_ITEMS][:MAX_BIASED_LISTED]
        lines += [f"The {len(rows)} most biased annotators among those with {MIN_BIAS_ITEMS}+ items "
                  f"(all {len(bias['annotators'])} are in report.json)." if rows else
                  f"No annotator has {MIN_BIAS_ITEMS}+ items; all {len(bias['annotators'])} are in report.json.", ""]
    leaning = ("marks `True` more often than the majority" if report.get("label_kind") == "bool"
               else "gives higher values than the majority")
    lines += [f"Bias = mean of (label − item majority) over the annotator's items with a clear majority; "
              f"positive: {leaning}. Mean |bias|: {_fmt(bias['mean_abs'])}.", ""]
    if rows:
        lines += ["| annotator | bias | items |", "|---|---|---|"]
        lines += [f"| {r['annotator']} | {r['bias']:+.3f} | {r['n_items']} |" for r in rows]
    return lines + [""]


def _hard_case_section(report: Mapping[str, Any]) -> list[str]:
    entropy = report["entropy"]
    hard = entropy["hard_cases"]
    lines = ["## Item entropy and hard cases", "", "![item entropy](entropy_hist.png)", "",
             f"Hard cases (label entropy > {entropy['threshold']} bits): **{hard['count']}** of "
             f"{report['n_items']} items."]
    if hard["listed"]:
        more = f" (the {len(hard['listed'])} with the highest entropy)" if hard["count"] > len(hard["listed"]) else ""
        lines += [f"Listed{more}:", "", "| id | entropy | labels | text |", "|---|---|---|---|"]
        lines += [f"| {h['id']} | {h['entropy']:.3f} | "
                  f"{', '.join(f'{lab}: {n}' for lab, n in h['labels'].items())} | {_md_cell(h['text'])} |"
                  for h in hard["listed"]]
    return lines + [""]


def _span_section(report: Mapping[str, Any]) -> list[str]:
    spans = report["spans"]
    if spans is None:
        return []
    return ["## Span agreement", "",
            f"Span type `{spans['span_type']}`, character level, over the {spans['n_texts']} texts with 2+ span "
            f"annotators ({spans['n_annotations']} annotations; a text an annotator left unmarked counts as empty).",
            "", "| measure | value | band |", "|---|---|---|",
            f"| mean pairwise char F1 (SemEval policy) | {_fmt(spans['mean_pairwise_f1'])} | |",
            f"| mean pairwise char kappa (each character an item) | {_fmt(spans['char_kappa'])} | "
            f"{spans['band'] or 'n/a'} |", ""]


def _group_section(report: Mapping[str, Any]) -> list[str]:
    groups = report["groups"]
    if not groups:
        return []
    lines = [f"## By {groups['key']}", "",
             f"The label statistics per value of `meta[{groups['key']!r}]` (each group bootstrapped on its own items).",
             "", f"| {groups['key']} | items | annotators | Fleiss | mean {kappa_name(report)} [95% CI] | "
             f"Krippendorff alpha ({report['level']}) [95% CI] | unanimity | hard cases |",
             "|---|---|---|---|---|---|---|---|"]
    for row in groups["rows"]:
        fleiss, cohen, alpha, unanimity = row["fleiss"], row["cohen"], row["krippendorff"], row["unanimity"]
        lines.append(f"| {row['group']} | {row['n_items']} | {row['n_annotators']} | "
                     f"{_fmt(fleiss['value']) if fleiss else 'n/a'} | "
                     f"{_fmt_with_ci(cohen['mean'], cohen['ci']) if cohen else 'n/a'} | "
                     f"{_fmt_with_ci(alpha['value'], alpha['ci']) if alpha else 'n/a'} | "
                     f"{format(unanimity['overall'], '.1%') if unanimity else 'n/a'} | {row['hard_cases']} |")
    return lines + [""]


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _fmt_ci(ci: Optional[Sequence[float]]) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _fmt_with_ci(value: Optional[float], ci: Optional[Sequence[float]]) -> str:
    """A value and its interval as the tables show them.

    Example:
        >>> _fmt_with_ci(0.5, [0.25, 0.75]), _fmt_with_ci(0.5, None), _fmt_with_ci(None, None)
        ('0.500 [0.250, 0.750]', '0.500', 'n/a')
    """
    return _fmt(value) if value is None or ci is None else f"{_fmt(value)} {_fmt_ci(ci)}"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def summary(report: Mapping[str, Any]) -> str:
    """Two lines: the data and the main coefficients."""
    fleiss, cohen, alpha = report["fleiss"], report["cohen"], report["krippendorff"]
    level, weights = report["level"], report["kappa_weights"]
    parts = [f"alpha ({level}) {_fmt_with_ci(alpha['value'], alpha['ci'])}" if alpha else f"alpha ({level}) n/a"]
    if level == "nominal":
        parts.insert(0, f"Fleiss {_fmt(fleiss['value'])}" if fleiss else "Fleiss n/a")
    if level in KAPPA_LEVELS:
        name = f"mean Cohen ({weights})" if weights else "mean Cohen"
        parts.insert(-1, f"{name} {_fmt_with_ci(cohen['mean'], cohen['ci'])}" if cohen else f"{name} n/a")
    unanimity = report["unanimity"]
    return (f"label {report['label']!r}: {report['n_items']} items, {report['n_annotators']} annotators, "
            f"{len(report['label_counts'])} labels, level {level}\n" + "; ".join(parts)
            + (f"; unanimity {unanimity['overall']:.1%}" if unanimity else "")
            + f"; hard cases {report['entropy']['hard_cases']['count']}")
