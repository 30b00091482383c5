"""`kold-span functional`: how often a model flags each functionality of the functional suite, and its identity bias.

The suite's cases (`corpora.functional`: benign texts about groups, counter-speech, negated abuse, reclaimed
terms, untargeted profanity, abuse of objects, and hateful counterparts) are predicted once. Two numbers per
case, defined here and nowhere else:

- **flagged**: the prediction marks any span, or the model's offensive task says true. The offensive task
  is the true/false sequence task that gates a span task, else the model's first true/false sequence task,
  else none (a span-only model is flagged by its spans alone).
- **score** (the offensive probability the bias AUCs rank by): P(true) of the offensive task; for a model
  without one, the largest P(B) + P(I) of any text token of its span tasks (the quantity a span threshold
  is applied to; 0 for a text without tokens).

`functionality_table` gives the share flagged per functionality (and per group of functionalities);
`metrics.bias_aucs` and `metrics.bias_summary` the Jigsaw benchmark's subgroup, BPSN and BNSP AUCs per
identity term. `render_markdown` and `write_report` write functional.md, functional.json and cases.jsonl.

The model is anything with `tasks`, `merged_outputs(texts, contexts, batch_size)` and
`labels_and_spans(text, merged)` (`inference.Predictor`, an ensemble).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np

from kold_span.config.choices import Problem
from kold_span.data.atomic import write_text_atomic
from kold_span.data.example import Example
from kold_span.data.jsonl import finite_or_null, json_text
from kold_span.metrics import bias_aucs, bias_summary
from kold_span.models.kinds import kind_of
from kold_span.models.tasks import Task

FILES = ("functional.json", "functional.md", "cases.jsonl")
# Rows that sum several functionalities up (the targets are stated on these, in docs).
GROUPS = (("identity statements (neutral, positive)", False, ("neutral_identity", "positive_identity")),
          ("counter-speech (quoting, referring)", False, ("counter_quote", "counter_reference")),
          ("all benign", False, None),
          ("all hateful", True, None))
FLAGGED_RULE = ("flagged: the model marks any span, or its offensive task (the true/false task gating a span "
                "task, else its first true/false task) says true")
SCORE_RULE = ("score: P(true) of the offensive task; without one, the largest P(B) + P(I) of a text token "
              "over the span tasks")
CHUNK = 256  # texts predicted at a time: bounded memory on a suite of any size


def offensive_task(tasks: Sequence[Task]) -> Optional[Task]:
    """The true/false sequence task that gates a span task, else the first true/false sequence task, else None.

    Example:
        >>> tasks = [Task("TGT", "sequence", "TGT", labels=("group", "individual")),
        ...          Task("OFF", "sequence", "OFF", labels=("false", "true")),
        ...          Task("OFF_span", "span", "OFF", gate="OFF")]
        >>> offensive_task(tasks).name, offensive_task(tasks[:1]), offensive_task(tasks[1:2]).name
        ('OFF', None, 'OFF')
    """
    boolean = [t for t in tasks if not kind_of(t).token_level and t.problem is Problem.SINGLE and t.is_boolean]
    gates = {t.gate for t in tasks if kind_of(t).token_level and t.gate}
    return next((t for t in boolean if t.name in gates), boolean[0] if boolean else None)


def case_outcome(tasks: Sequence[Task], merged: Any, row: dict[str, Any]) -> tuple[bool, float]:
    """(flagged, score) of one prediction: `row` as `Predictor.labels_and_spans` gives it, `merged` its probabilities.

    Example:
        >>> from kold_span.models.kinds import MergedExample
        >>> span = Task("OFF_span", "span", "OFF")
        >>> merged = MergedExample(token_offsets=[(0, 2), (3, 5)],
        ...                        token_probs={"OFF_span": np.array([[0.9, 0.05, 0.05], [0.4, 0.35, 0.25]])})
        >>> case_outcome([span], merged, {"labels": {}, "spans": []})  # no span drawn; the 2nd token's 0.35 + 0.25
        (False, 0.6)
    """
    task = offensive_task(tasks)
    flagged = bool(row["spans"])
    if task is not None:
        flagged = flagged or row["labels"][task.name]["label"] is True
        return flagged, float(merged.sequence_probs[task.name][task.labels.index("true")])
    inside = [float(np.asarray(merged.token_probs[t.name])[:, 1:].sum(axis=1).max()) for t in tasks
              if kind_of(t).token_level and len(merged.token_probs.get(t.name, ()))]
    return flagged, round(max(inside, default=0.0), 6)


def predict_cases(model: Any, cases: Sequence[Example], batch_size: int = 32) -> list[tuple[bool, float]]:
    """(flagged, score) per case, in order."""
    out: list[tuple[bool, float]] = []
    for start in range(0, len(cases), CHUNK):
        chunk = cases[start:start + CHUNK]
        texts, contexts = [c.text for c in chunk], [c.context for c in chunk]
        for text, merged in zip(texts, model.merged_outputs(texts, contexts, batch_size)):
            out.append(case_outcome(model.tasks, merged, model.labels_and_spans(text, merged)))
    return out


def functionality_table(cases: Sequence[Example], flagged: Sequence[bool]) -> dict[str, dict[str, Any]]:
    """Per functionality (benign ones first, each in the suite's order), its gold, templates, cases and share flagged.

    Example:
        >>> cases = [Example(str(i), "t", labels={"hateful": h}, meta={"functionality": f, "template": f + str(i // 2)})
        ...          for i, (f, h) in enumerate([("negated_abuse", False)] * 4 + [("threat", True)] * 2)]
        >>> functionality_table(cases, [True, False, False, False, True, True])["negated_abuse"]
        {'hateful': False, 'templates': 2, 'cases': 4, 'flagged': 0.25}
    """
    rows: dict[str, dict[str, Any]] = {}
    for hateful in (False, True):
        for case, hit in zip(cases, flagged):
            if case.labels["hateful"] is not hateful:
                continue
            row = rows.setdefault(case.meta["functionality"], {"hateful": hateful, "templates": set(), "hits": []})
            row["templates"].add(case.meta["template"])
            row["hits"].append(bool(hit))
    return {name: {"hateful": row["hateful"], "templates": len(row["templates"]), "cases": len(row["hits"]),
                   "flagged": sum(row["hits"]) / len(row["hits"])} for name, row in rows.items()}


def group_rows(cases: Sequence[Example], flagged: Sequence[bool]) -> dict[str, dict[str, Any]]:
    """The share flagged of each group of functionalities in `GROUPS` that has cases."""
    out = {}
    for name, hateful, functionalities in GROUPS:
        hits = [bool(hit) for case, hit in zip(cases, flagged) if case.labels["hateful"] is hateful
                and (functionalities is None or case.meta["functionality"] in functionalities)]
        if hits:
            out[name] = {"hateful": hateful, "cases": len(hits), "flagged": sum(hits) / len(hits)}
    return out


def measure(cases: Sequence[Example], outcomes: Sequence[tuple[bool, float]]) -> dict[str, Any]:
    """The report of one model on the cases: flagged shares by functionality and group, the bias AUCs.

    Example:
        >>> cases = [Example(str(i), "t", labels={"hateful": h}, meta={"functionality": f, "template": f,
        ...                                                           "identity": g, "lang": "en"})
        ...          for i, (f, h, g) in enumerate([("neutral_identity", False, "a"), ("derogation", True, "a"),
        ...                                         ("object_abuse", False, None), ("derogation", True, "b")])]
        >>> report = measure(cases, [(False, 0.2), (True, 0.9), (True, 0.7), (True, 0.6)])
        >>> report["groups"]["all benign"]["flagged"], report["bias"]["terms"]["a"]["bpsn_auc"]
        (0.5, 1.0)
    """
    flagged = [f for f, _ in outcomes]
    labels = [bool(c.labels["hateful"]) for c in cases]
    scores = [s for _, s in outcomes]
    terms = bias_aucs(labels, scores, [c.meta.get("identity") for c in cases])
    return {"cases": len(cases), "languages": sorted({c.meta["lang"] for c in cases}),
            "flagged_rule": FLAGGED_RULE, "score_rule": SCORE_RULE,
            "functionalities": functionality_table(cases, flagged), "groups": group_rows(cases, flagged),
            "bias": {"terms": terms, **bias_summary(labels, scores, terms)}}


def _percent(value: Optional[float]) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _number(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_markdown(report: dict[str, Any], command: str = "") -> str:
    """functional.md: the rules, the table per functionality, the groups, the bias AUCs per identity term.

    Example:
        >>> report = {"cases": 2, "languages": ["en"], "flagged_rule": "f", "score_rule": "s",
        ...           "functionalities": {"negated_abuse": {"hateful": False, "templates": 1, "cases": 2,
        ...                                                 "flagged": 0.5}},
        ...           "groups": {}, "bias": {"terms": {}, "overall_auc": None, "mean_subgroup_auc": None,
        ...                                  "mean_bpsn_auc": None, "mean_bnsp_auc": None, "final": None}}
        >>> "| negated_abuse | not hateful | 1 | 2 | 50.0% |" in render_markdown(report)
        True
    """
    lines = ["# Functional tests", ""]
    if command:
        lines += ["```", command, "```", ""]
    model = f"model `{report['model']}`, " if report.get("model") else ""
    part = f" ({report['part']} templates)" if report.get("part") else ""
    lines += [f"{model}{report['cases']} cases{part}, language(s) {', '.join(report['languages'])}. "
              f"{report['flagged_rule'][0].upper()}{report['flagged_rule'][1:]}; "
              f"{report['score_rule']}.", "",
              "| functionality | gold | templates | cases | flagged |", "|---|---|---|---|---|"]
    for name, row in report["functionalities"].items():
        gold = "hateful" if row["hateful"] else "not hateful"
        lines.append(f"| {name} | {gold} | {row['templates']} | {row['cases']} | {_percent(row['flagged'])} |")
    for name, row in report["groups"].items():
        gold = "hateful" if row["hateful"] else "not hateful"
        lines.append(f"| **{name}** | {gold} | | {row['cases']} | **{_percent(row['flagged'])}** |")
    bias = report["bias"]
    lines += ["", "Identity-term bias (Jigsaw Unintended Bias AUCs, ranked by the score; background: every other "
              "case):", "", "| identity | cases | subgroup AUC | BPSN AUC | BNSP AUC |", "|---|---|---|---|---|"]
    for term, row in bias["terms"].items():
        lines.append(f"| {term} | {row['texts']} | {_number(row['subgroup_auc'])} | {_number(row['bpsn_auc'])} | "
                     f"{_number(row['bnsp_auc'])} |")
    lines.append(f"| **generalized mean (p = −5)** | | {_number(bias['mean_subgroup_auc'])} | "
                 f"{_number(bias['mean_bpsn_auc'])} | {_number(bias['mean_bnsp_auc'])} |")
    lines += ["", f"Overall AUC {_number(bias['overall_auc'])}; the benchmark's final score (0.25 × overall + 0.25 × "
              f"each generalized mean) {_number(bias['final'])}."]
    return "\n".join(lines) + "\n"


def case_rows(cases: Sequence[Example], outcomes: Sequence[tuple[bool, float]]) -> Iterable[dict[str, Any]]:
    """One JSON row per case: what it is and what the model made of it."""
    for case, (flagged, score) in zip(cases, outcomes):
        yield {"id": case.id, "text": case.text, "lang": case.meta["lang"], "functionality": case.meta["functionality"],
               "template": case.meta["template"], "identity": case.meta.get("identity"),
               "hateful": case.labels["hateful"], "flagged": flagged, "score": score}


def write_report(report: dict[str, Any], cases: Sequence[Example], outcomes: Sequence[tuple[bool, float]],
                 out_dir: Union[str, Path], command: str = "") -> list[Path]:
    """Write functional.json, functional.md and cases.jsonl into `out_dir`, each whole or not at all."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FILES]
    write_text_atomic(paths[0], json_text(finite_or_null({"command": command, **report}), indent=1))
    write_text_atomic(paths[1], render_markdown(report, command))
    write_text_atomic(paths[2], "".join(json_text(row) + "\n" for row in case_rows(cases, outcomes)))
    return paths
