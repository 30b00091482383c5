"""`kold-span robustness`: a model scored on a labelled file, clean and with words disguised by each evasion kind.

`measure` predicts the gold examples as they are, then, per kind and seed, a copy whose words are
disguised (`text.perturb.perturb_example`, gold spans mapped onto the disguised text), and scores
each with `evaluate_examples` (the scoring of `kold-span evaluate`). Only the texts a kind changed
are predicted again; the others keep their clean prediction. It also counts false positives on
benign texts (no gold span, every label negative): the share that gets a span or a positive label.
With `twins` (the same texts in another variety: KOLD's comments rewritten in Gyeongsang dialect), the
examples that have a twin are scored as given and as their twin (`measure_twins`), the drop per
metric beside the evasion kinds' drops.
`render_markdown`, `plot_drops` and `write_report` turn the result into robustness.md, .png, .json.

The model is anything with `predict_examples(examples, batch_size)` yielding `predict`'s rows
(`inference.Predictor`); `model_predictions` adapts it.
"""
from __future__ import annotations

import io
import statistics
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from kold_span.config.choices import EvasionKind, Targets
from kold_span.data.atomic import atomic_write, write_text_atomic
from kold_span.data.example import Example, LabelValue, label_str
from kold_span.data.jsonl import finite_or_null, json_text
from kold_span.errors import DataError, needs_extra
from kold_span.evaluation.prediction_files import evaluate_examples, prediction_fields
from kold_span.text.perturb import perturb_example

# examples → id → {labels: {name: value}, spans: {type: [(start, end)]}}
Predict = Callable[[Sequence[Example]], dict[str, dict[str, Any]]]
FILES = ("robustness.json", "robustness.md", "robustness.png")


def model_predictions(model: Any, batch_size: int = 32) -> Predict:
    """A `Predict` from a model with `predict_examples` (a `Predictor`): its rows as `prediction_fields`."""
    def predict(examples: Sequence[Example]) -> dict[str, dict[str, Any]]:
        return {str(row["id"]): prediction_fields(row, f"prediction of {row['id']}")
                for row in model.predict_examples(examples, batch_size)}
    return predict


def headline_metrics(scores: dict[str, Any]) -> list[str]:
    """The metrics a robustness table shows: each span type's char-F1, then each label's macro-F1.

    Example:
        >>> headline_metrics({"span/OFF/char_f1": 0.5, "span/OFF/char_micro_f1": 0.4,
        ...                   "label/OFF/macro_f1": 0.7, "label/OFF/accuracy": 0.8, "examples": 3})
        ['span/OFF/char_f1', 'label/OFF/macro_f1']
    """
    spans = sorted(k for k in scores if k.startswith("span/") and k.endswith("/char_f1"))
    labels = sorted(k for k in scores if k.startswith("label/") and k.endswith("/macro_f1"))
    return spans + labels


def is_negative(value: LabelValue, negative: Iterable[str]) -> bool:
    """Whether a label value says "nothing to flag": one of `negative` (as a label string), or an empty label set.

    Example:
        >>> is_negative(False, ["false"]), is_negative("none", ["false", "none"]), is_negative([], ["false"])
        (True, True, True)
        >>> is_negative("hate", ["false", "none"]), is_negative(["혐오"], ["false"])
        (False, False)
    """
    negative = set(negative)
    return all(label_str(v) in negative for v in value) if isinstance(value, list) else label_str(value) in negative


def _labels(example_labels: dict[str, LabelValue]) -> dict[str, LabelValue]:
    """The labels a benign check reads: values that are labels (not vote shares), not missing."""
    return {k: v for k, v in example_labels.items() if v is not None and not isinstance(v, dict)}


def is_benign(example: Example, negative: Iterable[str]) -> bool:
    """No gold span of any type and every label negative.

    Example:
        >>> is_benign(Example("1", "좋은 기사", labels={"OFF": False}), ["false"])
        True
        >>> is_benign(Example("2", "너 바보", labels={"OFF": True}, spans={"OFF": [(2, 4)]}), ["false"])
        False
    """
    negative = list(negative)
    return (not any(example.spans.values())
            and all(is_negative(v, negative) for v in _labels(example.labels).values()))


def is_flagged(prediction: dict[str, Any], label_names: Iterable[str], negative: Iterable[str]) -> bool:
    """Whether a prediction marks a span or gives one of `label_names` a positive value."""
    negative = list(negative)
    labels = prediction["labels"]
    return (any(prediction["spans"].values())
            or any(name in labels and labels[name] is not None and not is_negative(labels[name], negative)
                   for name in label_names))


def benign_flagged(gold: Sequence[Example], preds: dict[str, dict[str, Any]],
                   negative: Sequence[str]) -> tuple[int, Optional[float]]:
    """(how many gold texts are benign, the share of them the predictions flag; None without any).

    Example:
        >>> gold = [Example("1", "좋은 기사", labels={"OFF": False}), Example("2", "고마워요", labels={"OFF": False}),
        ...         Example("3", "바보", labels={"OFF": True}, spans={"OFF": [(0, 2)]})]
        >>> preds = {"1": {"labels": {"OFF": True}, "spans": {}}, "2": {"labels": {"OFF": False}, "spans": {"OFF": []}},
        ...          "3": {"labels": {"OFF": True}, "spans": {"OFF": [(0, 2)]}}}
        >>> benign_flagged(gold, preds, ["false"])
        (2, 0.5)
    """
    benign = [ex for ex in gold if is_benign(ex, negative)]
    if not benign:
        return 0, None
    flagged = sum(is_flagged(preds[ex.id], _labels(ex.labels), negative) for ex in benign)
    return len(benign), flagged / len(benign)


def twin_key(example: Example) -> str:
    """What pairs an example with its twin: its `meta["group"]` (a comment and its rewrite share one), else its id.

    Example:
        >>> twin_key(Example("c:7:dialect", "..", meta={"group": "c:7"})), twin_key(Example("c:7", ".."))
        ('c:7', 'c:7')
    """
    return str(example.meta.get("group", example.id))


def twin_pairs(gold: Sequence[Example], twins: Sequence[Example]) -> list[tuple[Example, Example]]:
    """Each gold example that has a twin, with it, in gold's order; a key given to two twins is a `DataError`.

    Example:
        >>> gold = [Example("1", "바보냐"), Example("2", "좋네")]
        >>> [(g.id, t.id) for g, t in twin_pairs(gold, [Example("2:dialect", "좋데이", meta={"group": "2"})])]
        [('2', '2:dialect')]
    """
    by_key: dict[str, Example] = {}
    for twin in twins:
        key = twin_key(twin)
        if key in by_key:
            raise DataError(f"two twins share the group {key!r} ({by_key[key].id!r} and {twin.id!r}): each text "
                            "may have one twin")
        by_key[key] = twin
    return [(ex, by_key[twin_key(ex)]) for ex in gold if twin_key(ex) in by_key]


def measure_twins(pairs: Sequence[tuple[Example, Example]], clean_preds: dict[str, dict[str, Any]], predict: Predict,
                  metrics: Sequence[str], policy: str = "semeval", negative: Sequence[str] = ("false",),
                  name: str = "twins") -> dict[str, Any]:
    """The paired texts scored as given (`clean_preds`) and as their twins, each metric's drop, benign twins flagged.

    Example:
        >>> pairs = [(Example("1", "너 바보냐", spans={"OFF": [(2, 4)]}),
        ...           Example("1:d", "니 바보가", spans={"OFF": [(2, 4)]}, meta={"group": "1"}))]
        >>> clean = {"1": {"labels": {}, "spans": {"OFF": [(2, 4)]}}}
        >>> out = measure_twins(pairs, clean, lambda exs: {e.id: {"labels": {}, "spans": {"OFF": [(0, 4)]}}
        ...                                                for e in exs}, ["span/OFF/char_f1"], name="dialect")
        >>> out["standard"], round(out["twin"]["span/OFF/char_f1"], 4), round(out["drop"]["span/OFF/char_f1"], 4)
        ({'span/OFF/char_f1': 1.0}, 0.6667, 0.3333)
        >>> out["pairs"], out["changed"]  # the one pair's texts differ
        (1, 1.0)
    """
    standard, twins = [g for g, _ in pairs], [t for _, t in pairs]
    standard_scores = evaluate_examples(standard, clean_preds, policy)
    span_types = {t for p in clean_preds.values() for t in p["spans"]}
    preds = {i: {"labels": p["labels"], "spans": {**dict.fromkeys(span_types, []), **p["spans"]}}
             for i, p in predict(twins).items()}
    twin_scores = evaluate_examples(twins, preds, policy)
    out: dict[str, Any] = {"name": name, "pairs": len(pairs),
                           "changed": sum(g.text != t.text for g, t in pairs) / max(len(pairs), 1),
                           "standard": {m: standard_scores.get(m) for m in metrics},
                           "twin": {m: twin_scores.get(m) for m in metrics}}
    out["drop"] = {m: None if out["standard"][m] is None or out["twin"][m] is None
                   else out["standard"][m] - out["twin"][m] for m in metrics}
    out["benign_flagged"] = benign_flagged(twins, preds, negative)[1]
    return out


def measure(gold: Sequence[Example], predict: Predict, kinds: Sequence[Union[EvasionKind, str]], seeds: int = 1,
            word_probability: float = 0.5, targets: Union[Targets, str] = Targets.ALL, policy: str = "semeval",
            negative: Sequence[str] = ("false",), twins: Optional[Sequence[Example]] = None,
            twins_name: str = "twins") -> dict[str, Any]:
    """Scores on `gold` (labelled examples, unique ids) as written and under each perturbation kind, `seeds` seeds
    each (0, 1, ...: the mean and standard deviation are over these).

    `predict` maps examples to their predictions by id (`model_predictions`); each eligible word ("all" words, or
    only those inside gold "spans") is disguised with `word_probability`; `policy` is the span F1's empty-gold rule
    (as `kold-span evaluate --policy`); `negative` holds the label values that mean "nothing to flag" (the benign
    texts'). `twins` are the same texts in another variety, paired with `gold` by `twin_key` (those without a twin
    are left out of that comparison) and called `twins_name` in the report (e.g. "dialect").
    Returns a JSON-ready dict: the settings, the headline `metrics`, the `clean` scores, and per kind the share of
    texts it changed, the perturbed scores (each seed's, mean, sd), the drop against clean (clean − perturbed mean)
    and the benign texts flagged; with `twins`, under "twins" what `measure_twins` reports.
    """
    ids = [ex.id for ex in gold]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise DataError(f"the gold examples' ids must be unique to score perturbed copies, repeated: {repeated}")
    targets = Targets.parse(targets, "targets")
    kinds = [EvasionKind.parse(k, "perturbation kind") for k in kinds]
    clean_preds = predict(gold)
    clean_scores = evaluate_examples(list(gold), clean_preds, policy)
    metrics = headline_metrics(clean_scores)
    benign_count, benign_clean = benign_flagged(gold, clean_preds, negative)
    span_types = {t for p in clean_preds.values() for t in p["spans"]}
    result: dict[str, Any] = {
        "examples": len(gold), "targets": targets.value, "word_probability": word_probability,
        "seeds": list(range(seeds)), "policy": policy, "metrics": metrics,
        "clean": {m: clean_scores[m] for m in metrics},
        "benign": {"texts": benign_count, "negative": list(negative), "clean": benign_clean},
        "kinds": {},
    }
    for kind in kinds:
        runs = []
        for seed in range(seeds):
            disguised = [perturb_example(ex, kind, seed, word_probability, targets) for ex in gold]
            changed = [d for ex, d in zip(gold, disguised) if d.text != ex.text]
            preds = {**clean_preds, **predict(changed)} if changed else dict(clean_preds)
            # A span type no disguised text gets any more is still scored (as missed), not left out.
            preds = {i: {"labels": p["labels"], "spans": {**dict.fromkeys(span_types, []), **p["spans"]}}
                     for i, p in preds.items()}
            scores = evaluate_examples(disguised, preds, policy)
            runs.append({"seed": seed, "changed": len(changed) / len(gold),
                         "scores": {m: scores.get(m) for m in metrics},
                         "benign_flagged": benign_flagged(disguised, preds, negative)[1]})
        result["kinds"][kind.value] = summarize_runs(runs, result["clean"])
    if twins is not None:
        pairs = twin_pairs(gold, twins)
        if not pairs:
            raise DataError(f"none of the {len(twins)} twins shares a group (meta.group) or an id with the "
                            f"{len(gold)} gold examples")
        result["twins"] = measure_twins(pairs, clean_preds, predict, metrics, policy, negative, twins_name)
    return result


def _mean_sd(values: Sequence[Optional[float]]) -> dict[str, Optional[float]]:
    """{"mean", "sd"} of the values present (sd: sample standard deviation, None under two values)."""
    present = [v for v in values if v is not None]
    if not present:
        return {"mean": None, "sd": None}
    return {"mean": statistics.fmean(present), "sd": statistics.stdev(present) if len(present) > 1 else None}


def summarize_runs(runs: Sequence[dict[str, Any]], clean: dict[str, Optional[float]]) -> dict[str, Any]:
    """One kind's seeds summarized: changed share, each metric's mean ± sd and drop, benign flagged.

    Example:
        >>> runs = [{"seed": 0, "changed": 0.5, "scores": {"m": 0.6}, "benign_flagged": 0.1},
        ...         {"seed": 1, "changed": 0.5, "scores": {"m": 0.4}, "benign_flagged": 0.1}]
        >>> out = summarize_runs(runs, {"m": 0.8})
        >>> round(out["perturbed"]["m"]["mean"], 3), round(out["drop"]["m"], 3), out["changed"]
        (0.5, 0.3, 0.5)
    """
    out: dict[str, Any] = {"changed": statistics.fmean(r["changed"] for r in runs), "perturbed": {}, "drop": {}}
    for metric, clean_value in clean.items():
        stats = _mean_sd([r["scores"][metric] for r in runs])
        out["perturbed"][metric] = {**stats, "runs": [r["scores"][metric] for r in runs]}
        out["drop"][metric] = (None if stats["mean"] is None or clean_value is None
                               else clean_value - stats["mean"])
    out["benign_flagged"] = _mean_sd([r["benign_flagged"] for r in runs])
    return out


def _number(value: Optional[float], sd: Optional[float] = None) -> str:
    return "–" if value is None else f"{value:.3f}" + (f" ± {sd:.3f}" if sd is not None else "")


def render_markdown(report: dict[str, Any], command: str = "") -> str:
    """robustness.md: the settings, then one row per kind: texts changed, each metric perturbed and its drop.

    Example:
        >>> report = {"examples": 2, "targets": "all", "word_probability": 0.5, "seeds": [0], "policy": "semeval",
        ...           "metrics": ["span/OFF/char_f1"], "clean": {"span/OFF/char_f1": 0.8},
        ...           "benign": {"texts": 1, "negative": ["false"], "clean": 0.0},
        ...           "kinds": {"nfd": summarize_runs([{"seed": 0, "changed": 1.0, "scores": {"span/OFF/char_f1": 0.5},
        ...                                             "benign_flagged": 1.0}], {"span/OFF/char_f1": 0.8})}}
        >>> print(render_markdown(report).splitlines()[-1])
        | nfd | 100% | 0.500 | 0.300 | 100% |
    """
    metrics = report["metrics"]
    lines = ["# Robustness to evasion", ""]
    if command:
        lines += ["```", command, "```", ""]
    benign = report["benign"]
    disguised = (f"words disguised: {report['targets']} words, each with probability {report['word_probability']}; "
                 f"perturbation seeds: {len(report['seeds'])}" if report["kinds"] else "no evasion kind scored")
    lines += [f"{report['examples']} examples; {disguised}; span F1 policy: "
              f"{report['policy']}. Drop = clean − perturbed (mean ± sd over the seeds); \"benign flagged\": the "
              f"share of the {benign['texts']} benign texts (no gold span, labels in {benign['negative']}) that "
              "get a span or a positive label.", ""]
    header = ["kind", "texts changed", *(cell for m in metrics for cell in (m, "drop")), "benign flagged"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    clean_row = ["clean", "–", *(cell for m in metrics for cell in (_number(report["clean"][m]), "–")),
                 _percent(benign["clean"])]
    lines.append("| " + " | ".join(clean_row) + " |")
    for kind, entry in report["kinds"].items():
        row = [kind, _percent(entry["changed"]),
               *(cell for m in metrics for cell in (_number(entry["perturbed"][m]["mean"], entry["perturbed"][m]["sd"]),
                                                   _number(entry["drop"][m]))),
               _percent(entry["benign_flagged"]["mean"])]
        lines.append("| " + " | ".join(row) + " |")
    twins = report.get("twins")
    if twins:
        row = [f"{twins['name']} ({twins['pairs']} twins)", _percent(twins["changed"]),
               *(cell for m in metrics for cell in (_number(twins["twin"][m]), _number(twins["drop"][m]))),
               _percent(twins["benign_flagged"])]
        lines += ["| " + " | ".join(row) + " |", "",
                  f"{twins['name']}: the {twins['pairs']} texts with a twin (paired by meta.group, else id), scored "
                  "as given and as their twin; the row's drop is against these texts as given, not the clean row:",
                  "", "| metric | as given | " + twins["name"] + " | drop |", "|---|---|---|---|"]
        lines += [f"| {m} | {_number(twins['standard'][m])} | {_number(twins['twin'][m])} | "
                  f"{_number(twins['drop'][m])} |" for m in metrics]
    return "\n".join(lines) + "\n"


def _percent(value: Optional[float]) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def plot_drops(report: dict[str, Any], target: Union[Path, io.BytesIO]) -> None:
    """Horizontal bars: each kind's drop of the first headline metric, with the sd over seeds."""
    with needs_extra("plots"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

    kinds = list(report["kinds"])
    metric = report["metrics"][0] if report["metrics"] else None
    drops = [(report["kinds"][k]["drop"].get(metric) or 0.0) if metric else 0.0 for k in kinds]
    sds = [(report["kinds"][k]["perturbed"][metric]["sd"] or 0.0) if metric else 0.0 for k in kinds]
    if report.get("twins"):  # one bar more: the twins' drop against the same texts as given
        kinds.append(report["twins"]["name"])
        drops.append((report["twins"]["drop"].get(metric) or 0.0) if metric else 0.0)
        sds.append(0.0)
    fig = Figure(figsize=(6, 1.2 + 0.3 * max(1, len(kinds))), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.barh(range(len(kinds)), drops, xerr=sds, color="#c0504d", capsize=2)
    ax.set_yticks(range(len(kinds)), kinds, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="#555555", linewidth=0.8)
    clean = report["clean"].get(metric) if metric else None
    ax.set_xlabel(f"drop in {metric} (clean {_number(clean)})" if metric else "no metric scored")
    ax.set_title(f"{report['examples']} examples, {report['targets']} words, {len(report['seeds'])} seed(s)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(target, format="png")


def write_report(report: dict[str, Any], out_dir: Union[str, Path], command: str = "") -> list[Path]:
    """Write robustness.json, robustness.md and robustness.png into `out_dir`, each whole or not at all."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FILES]
    markdown = render_markdown(report, command)
    plot = io.BytesIO()
    plot_drops(report, plot)
    write_text_atomic(paths[0], json_text(finite_or_null({"command": command, **report}), indent=1))
    write_text_atomic(paths[1], markdown)
    with atomic_write(paths[2], "wb") as f:
        f.write(plot.getvalue())
    return paths


def leave_out_rows(full: dict[str, Any], folds: Sequence[tuple[Sequence[str], dict[str, Any]]],
                   metric: Optional[str] = None) -> list[dict[str, Any]]:
    """Per kind: its drop for the model trained on every kind (`full`'s report) and for the model whose
    training left it out (the fold whose report scored it), so a kind's result is not from having seen it.
    `folds` holds (the kinds that fold's model was trained on, its report on the kinds it left out); `metric` is
    the one compared (default: the first headline metric of `full`).

    Example:
        >>> run = lambda drop: summarize_runs([{"seed": 0, "changed": 1.0, "scores": {"m": 0.8 - drop},
        ...                                     "benign_flagged": None}], {"m": 0.8})
        >>> full = {"metrics": ["m"], "clean": {"m": 0.8}, "kinds": {"leet": run(0.01), "nfd": run(0.0)}}
        >>> fold = {"metrics": ["m"], "clean": {"m": 0.78}, "kinds": {"leet": run(0.05)}}
        >>> [(r["kind"], round(r["seen"], 3), r["left_out"] and round(r["left_out"], 3))
        ...  for r in leave_out_rows(full, [(["nfd"], fold)])]
        [('leet', 0.01, 0.05), ('nfd', 0.0, None)]
    """
    metric = metric or full["metrics"][0]
    left_out: dict[str, tuple[Optional[float], Optional[float]]] = {}
    for trained, report in folds:
        for kind, entry in report["kinds"].items():
            if kind not in trained:
                left_out[kind] = (entry["drop"].get(metric), report["clean"].get(metric))
    return [{"kind": kind, "seen": entry["drop"].get(metric), "left_out": left_out.get(kind, (None, None))[0],
             "fold_clean": left_out.get(kind, (None, None))[1]} for kind, entry in full["kinds"].items()]


def render_leave_out(full: dict[str, Any], rows: Sequence[dict[str, Any]], metric: Optional[str] = None) -> str:
    """The leave-kinds-out table in Markdown: each kind's drop when trained on it and when left out.

    Example:
        >>> print(render_leave_out({"metrics": ["m"], "clean": {"m": 0.8}},
        ...                        [{"kind": "leet", "seen": 0.01, "left_out": 0.05, "fold_clean": 0.78}]))
        | kind | drop, trained on it (clean 0.800) | drop, left out of training | that model's clean m |
        |---|---|---|---|
        | leet | 0.010 | 0.050 | 0.780 |
    """
    metric = metric or full["metrics"][0]
    lines = [f"| kind | drop, trained on it (clean {_number(full['clean'].get(metric))}) | drop, left out of "
             f"training | that model's clean {metric} |", "|---|---|---|---|"]
    lines += [f"| {r['kind']} | {_number(r['seen'])} | {_number(r['left_out'])} | {_number(r['fold_clean'])} |"
              for r in rows]
    return "\n".join(lines)
