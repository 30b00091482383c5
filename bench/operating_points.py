"""Do thresholds chosen on dev keep their promise on held-out data? Written into docs/benchmarks/operating-points.md.

    python bench/operating_points.py --run checkpoints/demo/demo --name demo
    python bench/operating_points.py --run RUN --name beep --label hate:hate --label hate:offensive

For every task of a trained run that takes a decision: `remove` chosen on the run's dev split for
precision `--precision` (0.90) and `review` for recall `--recall` (0.90), as `kold-span thresholds`
chooses them (with its bootstrap interval); then, on the run's test split (held out from both
training and the choice), the precision and recall met at `remove`, whether that precision lies in
the interval promised on dev, and the share of benign test texts (no gold positive) the review band
shows a reviewer. A sequence task that is not true/false (BEEP!'s hate: none / offensive / hate)
is measured only for the labels named with `--label TASK:LABEL` (repeatable), each cut one-vs-rest
on that label's probability as `kold-span thresholds --set TASK:LABEL` cuts it; its benign texts are
those whose gold lacks the label. The splits are the run's own, carved again from its config.json (`report.run_splits`);
a run trained with `data.negatives` has their held-out benign share added to its test split.
Precision depends on how many texts are benign, and such a test split holds more of them than dev:
beside the test precision stands the precision the same cut has on test with its texts reweighted to
dev's share of benign texts (`precision_at_benign_share`), which tells a change in the mix from a
change in the model.

`--fit-calibration` is for a run trained before temperatures or confidence maps existed, or before
their latest form: on dev, each task's temperature is fitted as training fits it
(`training.calibration.fit_temperatures`) when the model has none, and every confidence map anew
(`fit_confidence_maps`, replacing any the model has); the outputs are calibrated before the
thresholds are chosen, and each task's expected calibration error on dev and test, as the model
came (less any map), after the temperature and after the map, is reported beside the count of test
decisions calibration changed.
Beside each ECE after calibration stands its noise floor (`metrics.calibration_error_floor`):
the mean and 95th percentile of the ECE a perfectly calibrated model with the same scores would
get on the same rows (`--samples` draws, seed 0); an ECE above that percentile is miscalibration
the data can tell from sampling noise.
"""
from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import DOCS, isa_flags, machine_line, run_splits, save_results, write_section  # noqa: E402

from kold_span.corpora.experiment import BENIGN  # noqa: E402
from kold_span.errors import ArgumentError, UnreachableTargetError  # noqa: E402
from kold_span.evaluation.operating_points import (decision_band, decision_label, examples_digest,  # noqa: E402
                                                   label_scores, sequence_counts, span_counts, task_counts,
                                                   threshold_table)
from kold_span.evaluation.task_scores import calibration_error, confidence_hits, task_outcomes  # noqa: E402
from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.metrics import ECE_BINS, calibration_error_floor, expected_calibration_error  # noqa: E402
from kold_span.models.kinds import apply_calibration, kind_of  # noqa: E402
from kold_span.training import Calibration, fit_confidence_maps, fit_temperatures, with_maps  # noqa: E402

PAGE = DOCS / "operating-points.md"


def counts_at(task, label, decoding, examples, merged, threshold: float):
    """The `Counts` of `examples` at one threshold: `threshold_table` makes its row, `precision_at_benign_share`
    reweights it."""
    if kind_of(task).token_level:
        return span_counts(task, decoding, examples, merged, grid=(threshold,))
    return sequence_counts(*label_scores(task, label, examples, merged), grid=(threshold,))


def precision_at_benign_share(counts, share: Optional[float]) -> Optional[float]:
    """Precision at the first threshold of `counts` had the benign texts (no gold positive) been `share` of them.

    Precision depends on how many texts are benign: the same cut flags more wrong texts in a stream with more
    benign ones. Each benign text is weighted share / (their share here), each other (1 - share) / (theirs),
    and precision is the weighted true positives over the weighted flagged units. None when one of the two
    groups is absent or nothing is flagged.

    Example:
        >>> from kold_span.evaluation.operating_points import sequence_counts
        >>> counts = sequence_counts([0.9, 0.9, 0.9, 0.1], [True, False, False, False], grid=(0.5,))
        >>> precision_at_benign_share(counts, 0.75)  # as it is: 1 right of 3 flagged
        0.333333
        >>> precision_at_benign_share(counts, 0.5)  # benign weighted 2/3 each, the other 2: 2 / (2 + 4/3)
        0.6
    """
    benign = counts.benign
    if share is None or benign.all() or not benign.any():
        return None
    weights = np.where(benign, share / benign.mean(), (1 - share) / (1 - benign.mean()))
    flagged = float(weights @ counts.flagged[0])
    return round(float(weights @ counts.tp[0]) / flagged, 6) if flagged else None


def label_share_weights(dev_gold: Sequence[int], test_gold: Sequence[int]) -> Optional[np.ndarray]:
    """A weight per test row that gives each gold label dev's share of the rows (a label dev lacks weighs 0);
    None when the shares are already dev's.

    Calibration, like precision, depends on the mix: a head calibrated on dev, where one text in five is
    benign, is off on a stream where one in seven is, though it scores each kind of text as well. ECE
    with these weights (`metrics.expected_calibration_error(weights=...)`) is the held-out ECE at dev's mix.

    Example:
        >>> label_share_weights([0, 1, 1, 1], [0, 0, 1, 1]).tolist()  # dev 1/4 of label 0, test 1/2
        [0.5, 0.5, 1.5, 1.5]
        >>> label_share_weights([0, 1], [1, 0]) is None
        True
    """
    dev, test = np.asarray(dev_gold), np.asarray(test_gold)
    labels, counts = np.unique(dev, return_counts=True)
    dev_share = dict(zip(labels.tolist(), (counts / len(dev)).tolist()))
    labels, counts = np.unique(test, return_counts=True)
    test_share = dict(zip(labels.tolist(), (counts / len(test)).tolist()))
    weights = np.array([dev_share.get(label, 0.0) / test_share[label] for label in test.tolist()])
    return None if np.allclose(weights, 1.0) else weights


def calibrated(task, splits: dict, merged: dict, samples: int) -> dict:
    """Per split, the task's ECE as `merged` stand (calibrated) and its noise floor's mean and 95th
    percentile (what a perfectly calibrated model with these scores would get); for a single-label task
    whose test side mixes its gold labels otherwise than dev, test's at dev's mix too (`label_share_weights`)."""
    out, scored = {}, {split: confidence_hits(task, splits[split], merged[split]) for split in splits}
    for split, (confidences, hits) in scored.items():
        floor = calibration_error_floor(confidences, samples=samples)
        out.update({f"{split}_after": expected_calibration_error(confidences, hits),
                    f"{split}_floor_mean": floor["mean"], f"{split}_floor_p95": floor["p95"]})
    kind = kind_of(task)
    if kind.exclusive(task) and not kind.token_level and "dev" in splits and "test" in splits:
        gold = {split: task_outcomes(task, splits[split], merged[split])[1].argmax(axis=-1) for split in splits}
        weights = label_share_weights(gold["dev"], gold["test"])
        if weights is not None:
            confidences, hits = scored["test"]
            floor = calibration_error_floor(confidences, samples=samples, weights=weights)
            out.update({"test_at_dev_mix": expected_calibration_error(confidences, hits, weights=weights),
                        "test_at_dev_mix_floor_mean": floor["mean"], "test_at_dev_mix_floor_p95": floor["p95"]})
    return out


def fit_calibration(config, predictor: Predictor, splits: dict, merged: dict,
                    samples: int = 1000) -> tuple[Predictor, dict]:
    """`predictor` with what training now fits on dev (its temperatures when it has none, its confidence maps),
    `merged` calibrated in place, and each task's ECE as the model came, after the temperature and after the map
    (the last with its noise floor from `samples` draws). `merged` must come from a predictor without maps
    (`measure` drops a model's own, to fit them as this code does)."""
    if any(task.map_knots for task in predictor.tasks):
        raise ValueError("fit_calibration: predict without the model's confidence maps first")
    tops = {task.name: task_outcomes(task, splits["test"], merged["test"])[0].argmax(axis=-1)
            for task in predictor.tasks}
    ece = {task.name: {f"{split}_before": calibration_error(task, splits[split], merged[split]) for split in splits}
           for task in predictor.tasks}
    fitted_temperatures = not any(task.temperature != 1.0 for task in predictor.tasks)
    if fitted_temperatures:
        temperatures, _ = fit_temperatures(config.tasks, predictor.tasks, splits["dev"], merged["dev"])
        predictor = Calibration(temperatures=temperatures).apply_to(predictor)
        for split in merged:
            apply_calibration(predictor.tasks, merged[split])
    maps = fit_confidence_maps(config.tasks, predictor.tasks, splits["dev"], merged["dev"])
    for task in predictor.tasks:
        ece[task.name].update({f"{split}_tempered": calibration_error(task, splits[split], merged[split])
                               for split in splits})
    predictor = with_maps(predictor, maps, *merged.values())
    for task in predictor.tasks:
        ece[task.name].update(temperature=task.temperature, temperature_fitted=fitted_temperatures,
                              confidence_map_knots=task.map_knots)
    for task in predictor.tasks:
        ece[task.name].update(calibrated(task, splits, merged, samples))
        if kind_of(task).exclusive(task):  # a multi-label task has no argmax: its labels are cut one by one
            after = task_outcomes(task, splits["test"], merged["test"])[0].argmax(axis=-1)
            ece[task.name]["argmax_changed"] = int(np.sum(after != tops[task.name]))
            ece[task.name]["test_rows"] = len(after)
    return predictor, ece


def measure(run: Path, precision: float, recall: float, samples: int, fit: bool = False,
            labels: Optional[Mapping[str, Sequence[str]]] = None) -> dict:
    """Per task (or task and label): the dev choice and what the test split meets at it (and the calibration,
    when fitted here)."""
    config, splits = run_splits(run)
    predictor = Predictor.from_pretrained(run / "model")
    if fit:  # a map the model has was fitted by the code of its day: fitted again here, as training now would
        predictor.tasks = [replace(task, confidence_map=(), label_maps=()) for task in predictor.tasks]
    labels = labels or {}
    check_labels(predictor.tasks, labels)  # before minutes of predicting
    # The held-out side: the test split and, when the run had negatives, their held-out benign share.
    benign = splits.get(BENIGN, [])
    splits = {"dev": splits["dev"], "test": splits["test"] + benign}
    merged = {name: predictor.merged_outputs([e.text for e in split], [e.context for e in split])
              for name, split in splits.items()}
    out = {"run": str(run), "dev": len(splits["dev"]), "test": len(splits["test"]), "benign": len(benign),
           "samples": samples}
    if fit:
        predictor, out["calibration"] = fit_calibration(config, predictor, splits, merged, samples)
    else:  # the model's own temperatures and maps, as it ships
        out["calibration"] = {task.name: {"temperature": task.temperature,
                                          "confidence_map_knots": task.map_knots,
                                          **calibrated(task, splits, merged, samples)} for task in predictor.tasks}
    out["tasks"] = decisions(predictor, splits, merged, precision, recall, samples, labels)
    return out


def parse_labels(values: Sequence[str]) -> dict[str, list[str]]:
    """`--label TASK:LABEL` values as task → its labels, in the order given."""
    out: dict[str, list[str]] = {}
    for value in values:
        task, _, label = value.partition(":")
        if not task or not label:
            raise SystemExit(f"--label {value!r}: give TASK:LABEL, e.g. hate:hate")
        out.setdefault(task, []).append(label)
    return out


def check_labels(tasks, labels: Mapping[str, Sequence[str]]) -> None:
    """Refuse a `--label` whose task the model lacks, or whose label the task cannot be cut on."""
    by_name = {task.name: task for task in tasks}
    for name, named in labels.items():
        if name not in by_name:
            raise SystemExit(f"--label {name}:…: the model has no task {name!r}; its tasks: {', '.join(by_name)}")
        for label in named:
            try:
                decision_label(by_name[name], label)
            except ArgumentError as err:
                raise SystemExit(f"--label {name}:{label}: {err}") from None


def decisions(predictor, splits: dict, merged: dict, precision: float, recall: float, samples: int,
              labels: Mapping[str, Sequence[str]]) -> dict:
    """Each decision measured: a span or true/false task by its own name, a task named in `labels` once per label
    (as TASK:LABEL); a sequence task that is neither and not named is left out. `labels` as `check_labels` passed
    them."""
    out = {}
    for task in predictor.tasks:
        if not task.kind.takes_decision(task.problem):
            continue
        if task.name in labels:
            for label in labels[task.name]:
                out[f"{task.name}:{label}"] = operating_point(task, label, predictor.decoding, splits, merged,
                                                              precision, recall, samples)
        elif kind_of(task).token_level or task.is_boolean:
            out[task.name] = operating_point(task, decision_label(task, None), predictor.decoding, splits, merged,
                                             precision, recall, samples)
    return out


def operating_point(task, label, decoding, splits: dict, merged: dict, precision: float, recall: float,
                    samples: int) -> dict:
    """`remove` and `review` of one task (cut on `label`'s probability for a sequence task) chosen on dev, and what
    the test split meets at each."""
    dev, test = splits["dev"], splits["test"]
    counts = task_counts(task, label, decoding, dev, merged["dev"])
    dev_benign = round(float(counts.benign.mean()), 6) if len(counts.benign) else None
    entry = {}
    for band, target, value in (("remove", "precision", precision), ("review", "recall", recall)):
        try:
            chosen = decision_band(counts, target, value, "dev", examples_digest(dev), samples)
        except UnreachableTargetError as err:
            entry[band] = {"unmet": str(err)}
            continue
        held_out = counts_at(task, label, decoding, test, merged["test"], chosen["threshold"])
        met = {**threshold_table(held_out)[0],
               "precision_at_dev_benign_share": precision_at_benign_share(held_out, dev_benign)}
        low, high = chosen["precision_interval"]
        entry[band] = {"threshold": chosen["threshold"], "dev": {k: chosen[k] for k in (
            "precision", "recall", "flagged", "benign_flagged", "precision_interval", "recall_interval")},
            "dev_benign_share": dev_benign, "test": met,
            "test_precision_in_interval": met["precision"] is not None and low <= met["precision"] <= high}
    return entry


def _inside(inside: bool, met, high: float) -> str:
    """"yes", or whether the held-out precision fell below the promised interval or rose above it."""
    return "yes" if inside else "above" if met is not None and met > high else "no (below)"


def _at_share(precision, share) -> str:
    """The reweighted precision with the benign share it assumes; a dash where it was not measured."""
    return "–" if precision is None else f"{_pct(precision)} (at {_pct(share)} benign)"


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def section(result: dict, command: str) -> str:
    """The Markdown section: one row per task and band."""
    lines = [f"### {result['name']}", "", f"`{command}`", "",
             f"Machine: {machine_line()}; CPU flags: {isa_flags()}. Dev {result['dev']} texts, "
             f"test {result['test']} texts"
             + (f" ({result['benign']} of them the negatives' held-out benign share)" if result.get("benign") else "")
             + f"; bootstrap {result['samples']} samples, seed 0, 95% intervals."
             + (" A TASK:LABEL row cuts the task one-vs-rest on that label's probability; its benign texts are "
                "those whose gold lacks the label." if any(":" in name for name in result["tasks"]) else ""), "",
             "| task | band (target on dev) | threshold | dev precision [interval] | test precision | in interval | "
             "test precision at dev's benign share | test recall | test flagged | test benign flagged |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    if not result["tasks"]:  # a multi-label task, say, is cut one label at a time: only with --label
        lines[-2:] = ["No task of this model takes a decision without `--label TASK:LABEL`."]
    for name, entry in result["tasks"].items():
        for band, target in (("remove", f"precision {result['precision']:g}"),
                             ("review", f"recall {result['recall']:g}")):
            chosen = entry.get(band, {})
            if "unmet" in chosen:
                lines.append(f"| {name} | {band} ({target}) | – | unmet on dev: {chosen['unmet']} | | | | | | |")
                continue
            dev, test = chosen["dev"], chosen["test"]
            low, high = dev["precision_interval"]
            lines.append(f"| {name} | {band} ({target}) | {chosen['threshold']:g} | {_pct(dev['precision'])} "
                         f"[{_pct(low)}, {_pct(high)}] | {_pct(test['precision'])} | "
                         f"{_inside(chosen['test_precision_in_interval'], test['precision'], high)} | "
                         f"{_at_share(test.get('precision_at_dev_benign_share'), chosen.get('dev_benign_share'))} | "
                         f"{_pct(test['recall'])} | "
                         f"{_pct(test['flagged'])} | {_pct(test['benign_flagged'])} |")
    if result.get("calibration"):
        calibration = result["calibration"].values()
        fitted = any("test_tempered" in c for c in calibration)
        temperatures = ("fitted on dev by NLL here" if any(c.get("temperature_fitted") for c in calibration)
                        else "as the model ships them")
        maps = "confidence maps fitted on dev here (`--fit-calibration`)" if fitted else "maps as the model ships them"
        lines += ["", f"Temperatures {temperatures}, {maps}; expected calibration error with {ECE_BINS} "
                  "equal-mass bins, before calibration"
                  + (" (as the model came), after the temperature and after the map" if fitted else " and after it")
                  + ". The floor is the ECE a perfectly calibrated model with the same scores gets on the same rows "
                  f"(mean [95th percentile] of {result['samples']} draws, `metrics.calibration_error_floor`); "
                  "\"above floor\" says whether the test ECE exceeds that 95th percentile, i.e. whether "
                  "miscalibration is detectable on these rows:", "",
                  "| task | temperature | map knots | dev ECE | dev floor | test ECE | test floor "
                  "| above floor | test ECE at dev's label mix [floor] | test argmax rows changed |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for name, c in result["calibration"].items():
            steps = {split: " → ".join(f"{c[key]:.4f}" for key in (f"{split}_before", f"{split}_tempered") if key in c)
                     for split in ("dev", "test")}
            steps = {split: f"{chain} → " if chain else "" for split, chain in steps.items()}
            floor = {split: "–" if f"{split}_floor_mean" not in c else
                     f"{c[f'{split}_floor_mean']:.4f} [{c[f'{split}_floor_p95']:.4f}]" for split in ("dev", "test")}
            above = "–" if "test_floor_p95" not in c else "yes" if c["test_after"] > c["test_floor_p95"] else "no"
            changed = f"{c['argmax_changed']} of {c['test_rows']}" if "argmax_changed" in c else "–"
            knots = c.get("confidence_map_knots") or "–"
            mix = "–" if "test_at_dev_mix" not in c else (
                f"{c['test_at_dev_mix']:.4f} [{c['test_at_dev_mix_floor_mean']:.4f} "
                f"[{c['test_at_dev_mix_floor_p95']:.4f}]]")
            lines.append(f"| {name} | {c['temperature']:.3f} | {knots} | {steps['dev']}{c['dev_after']:.4f} "
                         f"| {floor['dev']} | {steps['test']}**{c['test_after']:.4f}** | {floor['test']} | {above} "
                         f"| {mix} | {changed} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, type=Path, help="a trained run folder (holds config.json and model/)")
    parser.add_argument("--name", required=True, help="the section's name, e.g. demo")
    parser.add_argument("--precision", type=float, default=0.9)
    parser.add_argument("--recall", type=float, default=0.9)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--fit-calibration", action="store_true",
                        help="fit on dev first what training now fits: each task's temperature (a model with none) "
                             "and each task's confidence maps (anew, if the model has them)")
    parser.add_argument("--label", action="append", default=[], metavar="TASK:LABEL",
                        help="also measure a sequence task cut one-vs-rest on this label (repeatable), e.g. hate:hate")
    args = parser.parse_args(argv)
    result = {"name": args.name, "precision": args.precision, "recall": args.recall,
              **measure(args.run, args.precision, args.recall, args.samples, args.fit_calibration,
                        parse_labels(args.label))}
    command = "python bench/operating_points.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    save_results(f"operating-points-{args.name}", result)
    write_section(f"operating-points-{args.name}", section(result, command), PAGE)
    print(section(result, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
