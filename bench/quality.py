"""Quality on the real corpora: toolkit configurations, baselines and published anchors side by side.

For each corpus the shared training side is split (seeded, stratified) into train and a held-out
test part, or `--test PATH` names a test file in the corpus's own format (the official test
sides are run that way, independently). The toolkit trains on train (its dev split carved from
train, seeded), and is scored on test next to the majority, TF-IDF n-gram and span-lexicon
baselines fitted on the same train. The hybrid row fuses the n-gram model's probabilities with
the encoder's, the weight chosen on dev. `--ensemble` adds a row for the seeds' models averaged
(kold_span.inference.ensemble), scored on the same test part; `--ensemble-with TAG ...` averages in other
tags' runs of the same seeds as well (other configurations on the same split). `--extra-train`
adds more training files (the Toxic Spans trial posts) to the training side only, leaving the
test part as it is.
`--extra-ngram-train` offers more files to the hybrid's n-gram alone (`fuse_ngram_train`: dev
decides whether it takes them); the n-gram cells then also show the n-gram fitted with them.
`--runs-from TAG` scores another tag's finished models (trained there if missing) under this
tag, for settings that only change what happens after training (hybrid, ensemble).
`--experiment FILE` (with `--tag`) trains another experiment file of the same corpus (KOLD's
span-only, type-only, dialect and negatives files); the reader options of its `data` section
read the training side (`side: both` adds the dialect twins), the test side is read as the
corpus table says.

    python bench/quality.py --corpora kocosa irosva_es --seeds 13 14 15
    python bench/quality.py --corpora irosva_es --seeds 13 14 15 --ensemble   # reuses the finished runs
    python bench/quality.py --corpora unsmile --tag mix --runs-from e5 --ensemble --ensemble-with e5-lr1e-4
    python bench/quality.py --corpora toxic_spans --test ../shared/data/toxic_spans/tsd_trial.csv
    python bench/quality.py --corpora toxic_spans --tag trial --extra-train ../shared/data/toxic_spans/tsd_trial.csv
    python bench/quality.py --corpora irosva_mx --tag pooled-ngram --runs-from minilm \
        --extra-ngram-train ../shared/data/irosva/irosva.es.training.csv ../shared/data/irosva/irosva.cu.training.csv
    python bench/quality.py --corpora kold_gs --test ../shared/data/kold_gs/gs_kold_valid.json --seeds 13 14 15 \
        --tag dialect --experiment kold_gs_e5_dialect.yaml

The corpora (reader, shared file, experiment file, metrics, published anchors, aims) are the
table in bench/quality_corpora.yaml. Each seed's run is planned, checked against a finished
run's settings and trained by the experiment grid behind `kold-span ablate`
(kold_span.experiments.plan: one cell per corpus and tag, run folders
`--out/runs/<experiment>/<corpus>[-<tag>]-seed<N>`).

A corpus with a `joint` label (KOLD: the target type learnt beside the offensive span) is kept out
of the tables every other corpus shares and gets a section of its own, `quality-kold`, with both
metrics, every baseline and the published figures (`render_joint`).

Results: bench/results/quality.json and sections of docs/benchmarks/quality.md.
"""
from __future__ import annotations

import argparse
import copy
import json
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from quality_corpora import EXPERIMENTS, IROSVA_AVERAGE, Corpus, load_corpora  # noqa: E402
from report import DATA, machine_line, write_section  # noqa: E402

from kold_span import corpora  # noqa: E402
from kold_span.cli.options import add_key_values  # noqa: E402
from kold_span.config import (REUSE_IGNORED_KEYS, Config, Problem, TaskConfig, load_config,  # noqa: E402
                               saved_config_changes)
from kold_span.corpora.experiment import load_splits  # noqa: E402
from kold_span.data import Example, label_str, write_jsonl  # noqa: E402
from kold_span.data.selection import carve  # noqa: E402
from kold_span.evaluation.baselines import label_scores, run_baselines  # noqa: E402
from kold_span.experiments.grid import finished_metrics, train_planned  # noqa: E402
from kold_span.experiments.plan import PlannedRun, check_saved_config, plan_cell  # noqa: E402
from kold_span.inference.ensemble import load_predictor  # noqa: E402
from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.models.ngram import Companion, Probs, decode_probs, fuse_companions, gold_label  # noqa: E402
from kold_span.training import calibrate, evaluate_predictor  # noqa: E402

# Which corpus, reader, file, experiment file, metrics, anchors and aims: bench/quality_corpora.yaml.
TABLE = load_corpora()
CORPORA = TABLE.corpora


def with_label(label: str, examples: Sequence[Example]) -> list[Example]:
    """The examples that carry `label` (gold for it)."""
    return [e for e in examples if e.labels.get(label) is not None]


def fused_probs(predictor, companions: dict[str, Companion], task_name: str,
                examples: Sequence[Example]) -> tuple[list[Probs], list[Probs]]:
    """A task's label probabilities per example from the encoder, and the same fused with `companions`."""
    texts, contexts = [e.text for e in examples], [e.context for e in examples]
    merged = predictor.merged_outputs(texts, contexts, 64)
    labels = next(t.labels for t in predictor.tasks if t.name == task_name)
    encoder = [dict(zip(labels, map(float, m.sequence_probs[task_name]))) for m in merged]
    fuse_companions(companions, predictor.tasks, texts, contexts, merged)
    return encoder, [dict(zip(labels, map(float, m.sequence_probs[task_name]))) for m in merged]


def hybrid_row(spec: Corpus, predictor, splits: dict[str, list[Example]], test: list[Example],
               task_name: str, extra: Sequence[Example] = (), thresholds: bool = False) -> dict[str, Any]:
    """Fuse encoder and n-gram probabilities as `fuse_ngram: true` does, through `kold_span.training.calibrate`.

    The n-gram variant (text only, or text + context, even for an encoder trained without it) and
    the weight are chosen on dev; the n-gram refitted on train + dev (the n-gram baseline row's
    data) scores test, decoded at 0.5. `extra` examples (none in dev or test) are offered to the
    n-gram. With `thresholds` (a multi-label task with `threshold: dev`), "tuned" holds the test
    scores at the dev-tuned thresholds. A model saved with its own n-gram is calibrated without it.
    """
    encoder_only = copy.copy(predictor)
    encoder_only.companions = {}
    dev_texts = {e.text for e in splits["dev"]}
    offered = [e for e in extra if e.text not in dev_texts]
    # temperature=1: the hybrid rows in docs/benchmarks were measured before temperature scaling; kept comparable
    # (a temperature changes no label at argmax, but would move the dev-tuned thresholds)
    task = TaskConfig(task_name, source=spec.label, problem=spec.problem, threshold="dev" if thresholds else 0.5,
                      fuse_ngram=True, fuse_metric=spec.baseline_metric, temperature=1)
    calibration = calibrate([task], encoder_only, splits, {task_name: (offered, 0)})
    test = with_label(spec.label, test)
    gold = [gold_label(e, spec.label, spec.problem) for e in test]
    test_probs, fused = fused_probs(encoder_only, calibration.companions, task_name, test)
    predicted = [decode_probs(p, spec.problem) for p in fused]
    fusion = calibration.fusion[task_name]
    row = {key: fusion[key] for key in ("weight", "ngram_context", "dev_score", "dev_scores")}
    row.update(label_scores(gold, predicted, spec.problem))
    if spec.problem is Problem.SINGLE and any(a.labels.get(spec.label) is not None
                                              for e in test for a in e.annotations):
        row["all_annotations"] = {
            "encoder": annotation_scores(spec.label, test, [decode_probs(p, Problem.SINGLE) for p in test_probs]),
            "fused": annotation_scores(spec.label, test, predicted)}
    tuned = calibration.thresholds.get(task_name)
    if tuned is not None:
        at_tuned = [sorted(name for name, p in probs.items() if p >= tuned[name]) for probs in fused]
        row["tuned"] = {"thresholds": tuned, **label_scores(gold, at_tuned, spec.problem)}
    if extra:
        row["extra_examples"] = fusion["extra_examples"]
    return row


def annotation_scores(label: str, examples: Sequence[Example], predicted: Sequence[str]) -> dict[str, Any]:
    """Scores over every (example, annotator) pair: each annotator's own label against the example's prediction.

    The perspectivist reading of a corpus that keeps each annotator's label (MultiPICo): a model
    that predicts the majority is scored against the minority annotators too.
    """
    gold, pairs = [], []
    for example, guess in zip(examples, predicted):
        for annotation in example.annotations:
            if annotation.labels.get(label) is not None:
                gold.append(label_str(annotation.labels[label]))
                pairs.append(guess)
    return {"pairs": len(gold), **label_scores(gold, pairs, Problem.SINGLE)}


def labelled(name: str, tag: Optional[str]) -> str:
    """A corpus's name with a tag, as its data folder and runs are named (`unsmile-e5`; untagged `unsmile`)."""
    return f"{name}-{tag}" if tag else name


def setup_of(overrides: list[str], test: Optional[str], test_fraction: float, split_seed: int,
             limit: Optional[int], extra_train: Optional[list[Path]] = None,
             extra_ngram_train: Optional[list[Path]] = None, runs_from: Optional[str] = None,
             experiment: Optional[str] = None) -> dict[str, Any]:
    """What decides a run's result besides its seed: a recorded run is reused only under the same setup."""
    last = {o.split("=", 1)[0].strip(): o for o in overrides}  # a key given twice: the later one applies
    setup = {"set": sorted(o for key, o in last.items() if key not in REUSE_IGNORED_KEYS),
             "test": test, "test_fraction": test_fraction, "split_seed": split_seed, "limit": limit}
    optional = {"extra_train": [str(p) for p in extra_train or []],
                "extra_ngram_train": [str(p) for p in extra_ngram_train or []],
                "runs_from": runs_from, "experiment": experiment}
    # absent when not given, so the setups recorded before these options still match
    return {**setup, **{key: value for key, value in optional.items() if value}}


def recorded_runs(previous: dict[str, Any], setup: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The runs a results-file entry holds by seed, if it was made with `setup` (else none)."""
    return {run["seed"]: run for run in previous.get("runs", [])} if previous.get("setup") == setup else {}


def planned_runs(name: str, spec: Corpus, args: argparse.Namespace, work: Path) -> list[PlannedRun]:
    """The seeds' runs of one row (`plan_cell`): `spec`'s experiment file on `work`'s train.jsonl and test.jsonl.

    Every seed is checked before any trains (a stale run must not surface after an hour of training):
    a finished run trained with other settings (the experiment file was edited since, say) is an
    error rather than a silent reuse of stale scores, unless --retrain.
    """
    experiment = experiment_file(spec, args)
    overrides = ["data.reader=jsonl", f"data.train={work / 'train.jsonl'}", f"data.test={work / 'test.jsonl'}",
                 "trainer.progress_bar=false", *args.set]
    # --runs-from names the tag whose data files and runs are used (same config, else they retrain).
    planned = plan_cell(EXPERIMENTS / experiment, {}, args.seeds, args.out / "runs",
                        labelled(name, args.runs_from or args.tag), overrides)
    if training_reader_options(spec, experiment):
        for run in planned:  # spent on writing train.jsonl: the jsonl reader takes none (an override only merges)
            run.config.data.reader_options = {}
    if not args.retrain:
        for run in planned:
            try:
                check_saved_config(run)
            except ValueError as err:
                raise SystemExit(f"{err}, or pass --retrain") from None
    return planned


def experiment_file(spec: Corpus, args: argparse.Namespace) -> str:
    """The experiment file (under EXPERIMENTS) a row trains: `--experiment`, else the corpus table's."""
    return getattr(args, "experiment", None) or spec.experiment


def training_reader_options(spec: Corpus, experiment: str) -> dict[str, Any]:
    """The reader options an experiment file gives its training corpus (`data.reader_options`), if it reads `spec`'s.

    KOLD's dialect file reads the training side with `side: both`; the test side stays as the corpus
    table reads it (`spec.options`).
    """
    data = load_config(EXPERIMENTS / experiment).data
    return dict(data.reader_options) if data.reader == spec.reader else {}


def run_corpus(name: str, spec: Corpus, args: argparse.Namespace,
               recorded: Optional[dict[int, dict[str, Any]]] = None) -> dict[str, Any]:
    """Train and score one corpus; a seed in `recorded` (from the results file) is reused, not retrained."""
    started = time.time()
    train_options = training_reader_options(spec, experiment_file(spec, args))
    if train_options and not args.test:
        raise SystemExit(f"{experiment_file(spec, args)} reads the training side with its own reader options "
                         f"({train_options}): name the test file with --test, which is read without them")
    examples = corpora.read(spec.reader, args.data / spec.path, **{**spec.options, **train_options})
    if args.test:
        train_side, test = examples, corpora.read(spec.reader, Path(args.test), **spec.options)
    else:  # the seeded held-out part, stratified on the label where there is one (single-label)
        stratify = spec.label if spec.label and spec.problem is Problem.SINGLE else None
        train_side, test = carve(examples, args.test_fraction, args.split_seed, stratify=stratify)
    if args.limit:
        train_side = train_side[:args.limit]
    if args.extra_train:
        extra, dropped = extra_training(spec, args.extra_train, test)
        train_side = train_side + extra
        print(f"{name}: {len(extra)} extra training examples from {', '.join(map(str, args.extra_train))}"
              f" ({dropped} left out: their text is in the test part)", flush=True)
    ngram_extra: list[Example] = []
    if args.extra_ngram_train:
        ngram_extra, dropped = extra_training(spec, args.extra_ngram_train, test)
        print(f"{name}: {len(ngram_extra)} extra n-gram training examples ({dropped} left out: their text is in "
              "the test part)", flush=True)
    # A tag's runs get their own data files: two configurations of one corpus may run at once.
    work = args.out / labelled(name, args.runs_from or args.tag)
    write_jsonl(train_side, work / "train.jsonl")
    write_jsonl(test, work / "test.jsonl")
    result: dict[str, Any] = {"n_train": len(train_side), "n_test": len(test), "anchor": spec.anchor,
                              "metric": spec.metric, "test_file": args.test or "held-out part of the shared side"}
    # A joint label (KOLD's target type) gets the label baselines a labelled corpus gets.
    label = spec.label or (spec.joint.label if spec.joint else None)
    result["baselines"] = run_baselines(train_side, test, label, spec.problem, spec.span_type,
                                        span_baselines=spec.span_baselines)
    if ngram_extra:
        result["baselines_extra_ngram"] = run_baselines(train_side + ngram_extra, test, label, spec.problem,
                                                        spec.span_type, span_baselines=spec.span_baselines)
    planned = planned_runs(name, spec, args, work)
    runs = []
    for planned_run in planned:
        seed, config = planned_run.seed, planned_run.config
        metrics = None if args.retrain else finished_metrics(planned_run)
        if metrics is None and seed in (recorded or {}) and not args.retrain:
            # The run directory is gone (another machine, a cleaned checkpoints/) but its scores were kept.
            runs.append(recorded[seed])
            print(f"{name} seed {seed}: reused from {args.results}", flush=True)
            continue
        if metrics is None:
            metrics = train_planned(planned_run, retrain=args.retrain)
        run = {"seed": seed, "test": metrics.get("test", {}), "seconds": metrics.get("seconds"),
               "machine": machine_line()}
        if spec.joint or spec.label is None:
            # what dev chose on and scored (a gating head's balanced accuracy: `gate_lines`), how many held-out
            # benign texts were flagged
            run.update({key: metrics[key] for key in ("dev", "benign", "thresholds") if key in metrics})
        if spec.label:
            predictor = Predictor.from_pretrained(planned_run.run_dir / "model")
            run["hybrid"] = hybrid_row(spec, predictor, load_splits(config), test, config.tasks[0].name, ngram_extra,
                                       thresholds=config.tasks[0].threshold == "dev")
        runs.append(run)
        print(f"{name} seed {seed}: {spec.metric} = {run['test'].get(spec.metric)}", flush=True)
    result["runs"] = runs
    if args.ensemble:
        companions = companion_models(name, args.ensemble_with or [], args, work, planned[0].config)
        result["ensemble"] = ensemble_row(spec, planned, test, ngram_extra, companions)
        print(f"{name} ensemble of {ensemble_size(result['ensemble'])} models (seeds {args.seeds}"
              f"{', with ' + ', '.join(args.ensemble_with) if args.ensemble_with else ''}): "
              f"{spec.metric} = {result['ensemble']['test'].get(spec.metric)}", flush=True)
    result["seconds"] = round(time.time() - started, 1)
    return result


def extra_training(spec: Corpus, paths: list[Path], test: list[Example]) -> tuple[list[Example], int]:
    """Examples of more training files in the corpus's format, minus any whose text is in the test part.

    The files are read without the corpus's reader options, so IroSvA es can take the mx and cu
    files (each file names its own variant).
    """
    seen = {e.text for e in test}
    examples = [e for path in paths for e in corpora.read(spec.reader, path)]
    kept = [e for e in examples if e.text not in seen]
    return kept, len(examples) - len(kept)


def companion_models(name: str, tags: Sequence[str], args: argparse.Namespace, work: Path,
                     reference: Config) -> list[Path]:
    """The model folders of other tags' runs of the same seeds, to join this row's ensemble (--ensemble-with).

    A companion must have learnt from the same examples: its tag's train and test files must equal
    this row's (`work`), and each of its runs must have carved the same dev split (its saved data
    settings, file paths aside, equal to `reference`'s), else the hybrid's dev would hold
    examples a member trained on.
    """
    dirs = []
    for tag in tags:
        other = args.out / labelled(name, tag)
        for file in ("train.jsonl", "test.jsonl"):
            if not (other / file).exists() or (other / file).read_bytes() != (work / file).read_bytes():
                raise SystemExit(f"--ensemble-with {tag}: {other / file} is missing or differs from {work / file}; "
                                 "a companion tag must have been run on the same split of the corpus")
        for seed in args.seeds:
            run_dir = args.out / "runs" / reference.experiment / f"{labelled(name, tag)}-seed{seed}"
            saved_path = run_dir / "config.json"
            if not saved_path.exists():
                raise SystemExit(f"--ensemble-with {tag}: {saved_path} is missing "
                                 f"(run that tag with seed {seed} first)")
            changed = [key for key in saved_config_changes(saved_path, reference)
                       if key.startswith("data.") and key not in ("data.train", "data.dev", "data.test")]
            if changed:
                raise SystemExit(f"--ensemble-with {tag}: {saved_path} split its data otherwise "
                                 f"({', '.join(changed)} differ)")
            dirs.append(run_dir / "model")
    return dirs


def ensemble_row(spec: Corpus, planned: list[PlannedRun], test: list[Example],
                 ngram_extra: Sequence[Example] = (), companions: Sequence[Path] = ()) -> dict[str, Any]:
    """The test scores of the seeds' models averaged (kold_span.inference.ensemble), and of that ensemble's hybrid.

    `companions` are more model folders averaged in (other configurations' runs, see
    `companion_models`). The seeds share their train/dev split (data.split_seed), so the
    hybrid's weight is chosen on the same dev examples as each seed's.
    """
    dirs = [run.run_dir / "model" for run in planned] + list(companions)
    missing = [str(d) for d in dirs if not d.exists()]
    if missing:
        raise SystemExit(f"--ensemble needs every member's model directory; missing: {', '.join(missing)} "
                         "(its scores were reused from the results file: pass --retrain to train it again)")
    ensemble = load_predictor(dirs)
    row: dict[str, Any] = {"seeds": [run.seed for run in planned], "test": evaluate_predictor(ensemble, test)}
    if companions:
        row["members"] = [d.parent.name for d in dirs]
    if spec.label:
        first = planned[0].config
        row["hybrid"] = hybrid_row(spec, ensemble, load_splits(first), test, first.tasks[0].name,
                                   ngram_extra, thresholds=first.tasks[0].threshold == "dev")
    return row


def mean_std(values: list[float], digits: int = 4) -> str:
    """Mean ± sample std of the values that are not None; the value alone when one, "—" when none."""
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def row_label(key: str, ensemble: bool = False) -> str:
    name, _, tag = key.partition(":")
    tags = ", ".join(t for t in (tag, "ensemble" if ensemble else "") if t)
    return f"{name} [{tags}]" if tags else name


def ensemble_size(row: dict[str, Any]) -> int:
    """How many models an ensemble row averaged: its seeds', and other tags' with --ensemble-with."""
    return len(row.get("members") or row["seeds"])


def irosva_average(results: dict[str, Any], tag: str = "", ensemble: bool = False) -> Optional[dict[str, Any]]:
    """The IroSvA average row (the mean of the three variants), per seed, when all three ran.

    With `ensemble`, the mean of the three variants' ensemble rows (one value), when all three have one.
    """
    keys = [f"irosva_{v}" + (f":{tag}" if tag else "") for v in ("es", "mx", "cu")]
    if not all(k in results for k in keys):
        return None
    rows = [results[k] for k in keys]

    def base(kind, field="baselines"):
        return statistics.mean(r[field][kind]["macro_f1"] for r in rows)

    if ensemble:
        if not all("ensemble" in r for r in rows):
            return None
        toolkit = [statistics.mean(r["ensemble"]["test"]["irony/macro_f1"] for r in rows)]
        hybrid = [statistics.mean(r["ensemble"]["hybrid"]["macro_f1"] for r in rows)]
        seeds: Any = f"{ensemble_size(rows[0]['ensemble'])} averaged"
    else:
        common = sorted(set.intersection(*({run["seed"] for run in r["runs"]} for r in rows)))

        def per_seed(get):
            return [statistics.mean(get(next(run for run in r["runs"] if run["seed"] == seed)) for r in rows)
                    for seed in common]

        toolkit = per_seed(lambda run: run["test"]["irony/macro_f1"])
        hybrid = per_seed(lambda run: run["hybrid"]["macro_f1"])
        seeds = len(common)
    extra = all("baselines_extra_ngram" in r for r in rows)
    return {"toolkit": toolkit, "hybrid": hybrid,
            "ngram": base("ngram"), "ngram_context": base("ngram_context"), "majority": base("majority"),
            # the n-grams fitted with the extra n-gram data, when every variant's row was offered some
            "extra": {kind: base(kind, "baselines_extra_ngram") for kind in ("ngram", "ngram_context")}
            if extra else None,
            "n_train": sum(r["n_train"] for r in rows), "n_test": sum(r["n_test"] for r in rows),
            "seeds": seeds, "minutes": sum(run.get("seconds") or 0 for r in rows for run in r["runs"]) / 60}


def ngram_cell(score: Optional[float], with_extra: Optional[float] = None) -> str:
    """An n-gram baseline's score, and beside it the score with the extra n-gram data when a row offered some."""
    if score is None:
        return "—"
    return f"{score:.4f}" + (f" ({with_extra:.4f} with extra)" if with_extra is not None else "")


# The headline table's rows: every corpus, in the corpus table's order, but those with a section of their own.
HEADLINE = tuple(name for name, spec in CORPORA.items() if spec.joint is None)
JOINT = tuple(name for name, spec in CORPORA.items() if spec.joint is not None)
SPLIT_KEYS = ("test", "test_fraction", "split_seed", "limit", "extra_train")


def dev_candidates(results: dict[str, Any], name: str, min_seeds: int = 3) -> dict[str, float]:
    """`name`'s configurations that dev can choose between, each with its fused model's mean dev score.

    Candidates are the corpus's rows with at least `min_seeds` seeds, trained on the same split and
    training files as its untagged row, and not re-scorings of another tag's runs (`--runs-from`).
    The fused model (`fuse_ngram`) is compared: dev chose its weight, and weight 1 is the encoder
    alone, so it is never behind the encoder on dev.
    """
    base = results.get(name, {}).get("setup", {})
    scores = {}
    for key, row in results.items():
        if key.startswith("_") or key.split(":")[0] != name:
            continue
        setup = row.get("setup", {})
        if len(row.get("runs", [])) < min_seeds or "runs_from" in setup:
            continue
        if any(setup.get(k) != base.get(k) for k in SPLIT_KEYS):
            continue
        devs = [run.get("hybrid", {}).get("dev_score") for run in row["runs"]]
        if all(d is not None for d in devs):
            scores[key] = statistics.mean(devs)
    return scores


def dev_choice(results: dict[str, Any], name: str, min_seeds: int = 3) -> Optional[str]:
    """The key of `name`'s configuration a user would ship: the best mean dev score of its fused model.

    A corpus without a sequence label (Toxic Spans) records no dev score; its untagged row, the
    experiment file's configuration, is the choice. A tie keeps the first recorded row.
    """
    scores = dev_candidates(results, name, min_seeds)
    if scores:
        return max(scores, key=lambda key: scores[key])
    if name in results and CORPORA[name].label is None and len(results[name].get("runs", [])) >= min_seeds:
        return name
    return None


def shipped_scores(spec: Corpus, row: dict[str, Any]) -> dict[int, float]:
    """Each seed's test score of the model the rule ships: the fused model where there is one, else the encoder.

    The fused model is decoded at 0.5, as dev scored it when the rule chose it (the shipped
    experiment files decode it so: none tunes thresholds on the fused probabilities).
    """
    metric = spec.baseline_metric if spec.label else spec.metric
    return {run["seed"]: (run["hybrid"] if spec.label else run["test"])[metric] for run in row["runs"]}


def best_baseline(spec: Corpus, rows: Sequence[dict[str, Any]]) -> float:
    """The stronger n-gram row (text, or text + context) averaged over `rows`, or the lexicon for span corpora.

    One row is one corpus; the three IroSvA variants' rows give the n-gram rows of the average.
    """
    if "lexicon" in rows[0]["baselines"]:
        return statistics.mean(row["baselines"]["lexicon"]["char_f1"] for row in rows)
    kinds = [kind for kind in ("ngram", "ngram_context") if all(kind in row["baselines"] for row in rows)]
    return max(statistics.mean(row["baselines"][kind][spec.baseline_metric] for row in rows) for kind in kinds)


def target_cell(name: str, values: list[float]) -> str:
    """The aim of `name` and whether the mean of `values` reaches it ("—" where the issue sets none)."""
    return aim_cell(TABLE.aim(name), values)


def aim_cell(aim: Optional[float], values: list[float]) -> str:
    """An aim and whether the mean of `values` reaches it ("—" where none is set)."""
    return "—" if aim is None else f"{aim:.2f}: {'met' if statistics.mean(values) >= aim else 'missed'}"


def render_headline(results: dict[str, Any]) -> list[str]:
    """Table lines: per corpus the dev-chosen configuration, its shipped model's test score, the n-gram and the aim."""
    lines = [
        "### The configuration dev would ship, per corpus",
        "",
        "Chosen without looking at test: of each corpus's rows with three seeds on the same split, the one",
        "whose fused model (encoder ⊕ n-gram, `fuse_ngram: true`) has the best dev score averaged over the",
        "seeds; that fused model is what is scored, decoded at 0.5 as dev scored it and as in the hybrid",
        "column (Toxic Spans, a span task without a fused model or a recorded dev score: the experiment",
        "file's configuration, encoder alone). \"above\" counts the seeds whose score beats the stronger",
        "n-gram row (the lexicon for Toxic Spans). The chosen configurations are experiment files, which",
        "decode the fusion the same way:",
        "`configs/experiment/quality/{kocosa,beep,unsmile,irosva}_e5.yaml` (`make encoder-e5` first).",
        "",
        "| corpus | metric | chosen on dev (candidates) | dev | encoder | shipped | per seed | "
        "best n-gram | above | aim | minutes a run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    irosva: dict[str, dict[int, float]] = {}
    for name in HEADLINE:
        key = dev_choice(results, name)
        if key is None:
            continue
        spec, row = CORPORA[name], results[key]
        shipped = shipped_scores(spec, row)
        if name.startswith("irosva_"):
            irosva[name] = shipped
        dev_scores = dev_candidates(results, name)
        dev = f"{dev_scores[key]:.4f}" if key in dev_scores else "—"
        values = [shipped[s] for s in sorted(shipped)]
        minutes = max(run.get("seconds") or 0 for run in row["runs"]) / 60
        lines.append(f"| {name} | {spec.metric.split('/')[-1]} | {row_label(key)} ({len(dev_scores) or 1}) | {dev} | "
                     f"{mean_std([run['test'].get(spec.metric) for run in row['runs']])} | "
                     f"{shipped_cells(values, best_baseline(spec, [row]))} | "
                     f"{target_cell(name, values)} | {minutes:.1f} |")
    if len(irosva) == 3:
        seeds = sorted(set.intersection(*(set(s) for s in irosva.values())))
        average = [statistics.mean(scores[s] for scores in irosva.values()) for s in seeds]
        baseline = best_baseline(CORPORA["irosva_es"], [results[n] for n in irosva])
        lines.append(f"| irosva average | macro_f1 | the three above | — | — | {shipped_cells(average, baseline)} | "
                     f"{target_cell(IROSVA_AVERAGE, average)} | — |")
    return lines + [""]


def shipped_cells(values: list[float], baseline: float) -> str:
    """The shipped model's cells: mean ± std, each seed's score, the baseline and how many seeds beat it."""
    return (f"{mean_std(values)} | {' / '.join(f'{v:.3f}' for v in values)} | {baseline:.4f} | "
            f"{sum(v > baseline for v in values)} / {len(values)}")


def gate_lines(results: dict[str, Any], names: Sequence[str]) -> list[str]:
    """Lines on the dev balanced accuracy of each head that gates spans, for rows of `names` whose runs recorded one.

    A span corpus's runs record their dev scores; a gating head is a sequence task scored there other than the
    corpus's joint label (Toxic Spans' `toxic`, KOLD's `OFF` in the negatives file). Its dev split holds benign
    texts where the experiment gives them (`data.negatives[].dev_fraction`).

    Example:
        >>> runs = [{"dev": {"toxic/balanced_accuracy": 0.8, "OFF_span/char_f1": 0.6}},
        ...         {"dev": {"toxic/balanced_accuracy": 0.9}}]
        >>> gate_lines({"toxic_spans": {"runs": runs}}, ["toxic_spans"])[-1]
        '- toxic_spans: `toxic` 0.8500 ± 0.0707 (2 seeds)'
    """
    lines = []
    for key, row in results.items():
        if key.startswith("_") or key.split(":")[0] not in names or not row.get("runs"):
            continue
        joint = CORPORA[key.split(":")[0]].joint
        tasks = {k.split("/")[0] for run in row["runs"] for k in run.get("dev", {}) if k.endswith("/balanced_accuracy")}
        for task in sorted(tasks - {joint.label if joint else None}):
            values = [run["dev"].get(f"{task}/balanced_accuracy") for run in row["runs"] if run.get("dev")]
            values = [v for v in values if v is not None]
            lines.append(f"- {row_label(key)}: `{task}` {mean_std(values)} ({len(values)} seeds)")
    if not lines:
        return []
    return ["", "Dev balanced accuracy of the head that gates the spans (dev holds benign texts too where the "
            "experiment gives it a share of its negatives):", "", *lines]


def render_annotation_rows(results: dict[str, Any]) -> list[str]:
    """Rows scored against every annotator's own label (MultiPICo), where the hybrid recorded it."""
    scored = {key: row for key, row in results.items() if not key.startswith("_") and row.get("runs")
              and all("all_annotations" in run.get("hybrid", {}) for run in row["runs"])}
    if not scored:
        return []
    lines = ["", "Against every annotator's own label (one pair per post and annotator; the table above scores "
             "the majority label):", "",
             "| corpus | pairs | macro-F1, encoder | macro-F1, fused | F1 of \"true\", encoder | "
             "F1 of \"true\", fused | seeds |", "|---|---|---|---|---|---|---|"]
    for key, row in scored.items():
        cells = [mean_std([run["hybrid"]["all_annotations"][model][metric] for run in row["runs"]])
                 for metric in ("macro_f1", "f1") for model in ("encoder", "fused")]
        pairs = row["runs"][0]["hybrid"]["all_annotations"]["fused"]["pairs"]
        lines.append(f"| {row_label(key)} | {pairs} | {' | '.join(cells)} | {len(row['runs'])} |")
    return lines


def machines_line(results: dict[str, Any]) -> str:
    """The machines the runs record (runs record it since 2026-12-02) and the one rendering the table."""
    recorded = sorted({run["machine"] for key, row in results.items() if not key.startswith("_")
                       for run in row.get("runs", []) if run.get("machine")})
    known = "; ".join(recorded) if recorded else "none yet"
    return (f"2-core CPU machines over several sessions (recorded per run since 2026-12-02: {known}); "
            f"rendered on {machine_line()}")


def render(results: dict[str, Any], command: str = "") -> str:
    lines = [
        "## Quality on the public corpora",
        "",
        f"Machines: {machines_line(results)}; the command of each row is listed under the table.",
        "Test: a seeded, stratified held-out part (20%) of each shared training side unless a test file is named.",
        "Toolkit rows are mean ± std over the seeds listed; baselines are deterministic.",
        "",
        *render_headline(results),
        "### Every configuration measured",
        "",
        "Every recorded row, kept as the record of what each lever did. The rule that a toolkit row",
        "must beat the n-gram is checked on what would ship (the table above); a row below that loses",
        "to the n-gram is a configuration tried and not shipped.",
        "",
        "| corpus | metric | toolkit (encoder) | hybrid (encoder ⊕ n-gram) | n-gram | n-gram + context | "
        "majority / lexicon | published anchor | seeds | training minutes (all seeds) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    commands: dict[str, str] = {}
    for key, r in results.items():
        if key.startswith("_") or key.split(":")[0] in JOINT:
            continue
        spec = CORPORA[key.split(":")[0]]
        base = r["baselines"]
        metric_key = spec.baseline_metric
        extra = r.get("baselines_extra_ngram") or {}
        ngram, ngram_ctx = (ngram_cell(base.get(kind, {}).get(metric_key), extra.get(kind, {}).get(metric_key))
                            for kind in ("ngram", "ngram_context"))
        simple = (f"{base['lexicon']['char_f1']:.4f} (lexicon)" if "lexicon" in base
                  else f"{base['majority'][metric_key]:.4f}")
        minutes = sum(run.get("seconds") or 0 for run in r["runs"]) / 60

        def row(label: str, scored: list[dict[str, Any]], seeds: Any) -> str:
            """One table line; `scored` are the runs (or the one ensemble) whose test and hybrid scores it shows."""
            toolkit = mean_std([run["test"].get(spec.metric) for run in scored])
            hybrid = mean_std([run.get("hybrid", {}).get(metric_key) for run in scored]) if spec.label else "—"
            if spec.label and all("tuned" in run.get("hybrid", {}) for run in scored):
                hybrid += f" (dev thresholds {mean_std([run['hybrid']['tuned'][metric_key] for run in scored])})"
            return (f"| {label} ({r['n_train']}/{r['n_test']}) | {spec.metric.split('/')[-1]} | {toolkit} | "
                    f"{hybrid} | {ngram} | {ngram_ctx} | {simple} | {spec.anchor} | {seeds} | {minutes:.1f} |")

        lines.append(row(row_label(key), r["runs"], len(r["runs"])))
        commands[row_label(key)] = r.get("command") or results.get("_command", command)
        if "ensemble" in r:
            averaged = f"{ensemble_size(r['ensemble'])} averaged"
            lines.append(row(row_label(key, ensemble=True), [r["ensemble"]], averaged))
            commands[row_label(key, ensemble=True)] = commands[row_label(key)]
    for tag in dict.fromkeys(key.partition(":")[2] for key in results if key.startswith("irosva_")):
        for ensemble in (False, True):
            average = irosva_average(results, tag, ensemble)
            if not average:
                continue
            extra = average["extra"] or {}
            cells = [ngram_cell(average[kind], extra.get(kind)) for kind in ("ngram", "ngram_context")]
            lines.append(f"| {row_label(f'irosva average:{tag}', ensemble)} ({average['n_train']}/{average['n_test']}) "
                         f"| macro_f1 | {mean_std(average['toolkit'])} | {mean_std(average['hybrid'])} | "
                         f"{cells[0]} | {cells[1]} | {average['majority']:.4f} | "
                         f"{TABLE.irosva_average.anchor} | {average['seeds']} | {average['minutes']:.1f} |")
    lines += render_annotation_rows(results)
    lines += gate_lines(results, HEADLINE)
    lines += ["", "Commands:", ""]
    by_command: dict[str, list[str]] = {}
    for label, cmd in commands.items():
        by_command.setdefault(cmd, []).append(label)
    lines += [f"- {', '.join(labels)}: `{cmd}`" for cmd, labels in by_command.items()]
    return "\n".join(lines) + "\n"


# What each span baseline is called in a joint corpus's section.
SPAN_BASELINE_ROWS = {"whole_text": "the whole comment", "non_space": "every non-space character",
                      "lexicon": "span lexicon (words seen inside spans)", "token_ngram": "TF-IDF word tagger"}
# A joint corpus's section: its title and the paragraphs under the table (the published figures and why they differ).
JOINT_SECTIONS = {"kold_gs": ("KOLD: offensive spans and target types on real comments", [
    "Data: `../shared/data/kold_gs` (read its entry in the data README), KOLD's offensive comments as a Korean "
    "dialect study kept them, each with KOLD's gold offensive span and level-B target type (`kold_gs` reader): "
    "trained on the three training files (dev a seeded tenth of them, twins kept together), tested on the "
    "valid side. Every comment here is offensive and has a span; there are no titles. Toolkit rows are mean ± "
    "std over the seeds listed; the baselines are fitted on the same training side (bench/baselines.py scores "
    "them too, its n-grams with a capped vocabulary). \"OFF span char-F1\" is the mean per-comment character F1 "
    "of the spans as the tokens "
    "give them (the run's `OFF_span/char_f1`, at the span threshold dev chose), \"as predicted\" the same "
    "spans snapped as the model outputs them (`align.snap`, `OFF_span/char_f1_<snap>`).",
    "**Published figures, not the same measure.** KOLD's paper (Jeong et al., EMNLP 2022) reports "
    "offensive-span F1 **45.4** and target-span F1 **62.5** for its largest pretrained Korean encoder, reading "
    "title + comment and scored over **all** its test comments, offensive or not, where a comment with no gold "
    "span scores 1 when nothing is predicted and 0 otherwise. Those figures mix the level-A decision "
    "(offensive or not) into the span score, and their target span marks the words naming the target, which "
    "this data does not hold. The rows here score spans on offensive comments alone (the only kind this data "
    "holds), without titles, on the dialect study's valid side: no row here is comparable with 45.4 or 62.5, "
    "upward or downward. Marking the whole comment already scores 0.68 here, because KOLD's spans are "
    "rationales (57% of a comment's characters on average).",
    "Tagged rows are the other experiment files beside `kold_gs_e5.yaml` (`--tag NAME --experiment FILE`): "
    "`span-only` and `type-only` (one head each: joint against separate training), `dialect` (trained on both "
    "sides of each comment, `side: both`) and `negatives` (an `OFF` head gating the spans, benign BEEP! and "
    "UnSmile comments as negatives: the held-out ones flagged in its column). Where gold span edges fall and "
    "each snap mode with its own dev threshold: the next section (`bench/kold_snapping.py`). The same comments "
    "in Gyeongsang dialect: `bench/robustness.py --twins-option side=dialect skip_bad=true --twins-name "
    "dialect` (docs/benchmarks/robustness.md).",
])}


def snapped_score(test: dict[str, Any], metric: str) -> Optional[float]:
    """A span metric after snapping (`OFF_span/char_f1_morpheme` beside `OFF_span/char_f1`); None unsnapped.

    Example:
        >>> snapped_score({"OFF_span/char_f1": 0.7, "OFF_span/char_f1_morpheme": 0.71}, "OFF_span/char_f1")
        0.71
    """
    return next((value for key, value in test.items() if key.startswith(metric + "_")), None)


def joint_row_cells(spec: Corpus, runs: list[dict[str, Any]]) -> list[str]:
    """A toolkit row of a joint corpus's table: both metrics (span as scored and as predicted), accuracy, benign."""
    assert spec.joint is not None
    task = spec.joint.metric.split("/")[0]
    tests = [run["test"] for run in runs]
    benign = [run["benign"]["flagged"] for run in runs if run.get("benign")]
    return [mean_std([t.get(spec.metric) for t in tests]), mean_std([snapped_score(t, spec.metric) for t in tests]),
            mean_std([t.get(spec.joint.metric) for t in tests]), mean_std([t.get(f"{task}/accuracy") for t in tests]),
            f"{100 * statistics.mean(benign):.1f}%" if benign else "—"]


def joint_aims(spec: Corpus, row: dict[str, Any]) -> list[str]:
    """Where the experiment file's row stands against the aims and the strongest baselines, in numbers."""
    assert spec.joint is not None
    base, runs = row["baselines"], row["runs"]
    lines = []
    span_scores = [run["test"][spec.metric] for run in runs if run["test"].get(spec.metric) is not None]
    floors = {name: base[name]["char_f1"] for name in spec.span_baselines if name in base}
    if span_scores and floors:
        strongest = max(floors, key=lambda name: floors[name])
        lines.append(f"- {spec.metric}: {mean_std(span_scores)}; aim {aim_cell(spec.aim, span_scores)}; the "
                     f"strongest baseline ({SPAN_BASELINE_ROWS[strongest]}) {floors[strongest]:.4f}, beaten by "
                     f"{sum(v > floors[strongest] for v in span_scores)} / {len(span_scores)} seeds.")
    joint_scores = [run["test"][spec.joint.metric] for run in runs if run["test"].get(spec.joint.metric) is not None]
    if joint_scores and "ngram" in base:
        ngram = base["ngram"][spec.joint.baseline_metric]
        lines.append(f"- {spec.joint.metric}: {mean_std(joint_scores)}; aim {aim_cell(spec.joint.aim, joint_scores)}"
                     f"; the TF-IDF n-gram {ngram:.4f}, beaten by {sum(v > ngram for v in joint_scores)} / "
                     f"{len(joint_scores)} seeds.")
    return lines


def render_joint(name: str, results: dict[str, Any]) -> str:
    """The section of a corpus with a joint label: every row of it and its baselines, both metrics, the aims."""
    spec = CORPORA[name]
    assert spec.joint is not None
    title, paragraphs = JOINT_SECTIONS.get(name, (name, []))
    rows = {key: row for key, row in results.items() if key.split(":")[0] == name and row.get("runs")}
    machines = sorted({run["machine"] for row in rows.values() for run in row["runs"] if run.get("machine")})
    joint_label = spec.joint.metric.split("/")[0]
    lines = [f"## {title}", "", paragraphs[0] if paragraphs else "", "",
             f"Machines: {'; '.join(machines) or 'no run recorded yet'}; rendered on {machine_line()}. "
             "The command of each row is listed under the table.", "",
             f"| row (train/test) | seeds | {spec.metric} | as predicted (snapped) | {spec.joint.metric} | "
             f"{joint_label} accuracy | held-out benign flagged | minutes a run |", "|---|---|---|---|---|---|---|---|"]
    commands: dict[str, str] = {}
    for key, row in rows.items():
        minutes = max(run.get("seconds") or 0 for run in row["runs"]) / 60
        lines.append(f"| {row_label(key)} ({row['n_train']}/{row['n_test']}) | {len(row['runs'])} | "
                     f"{' | '.join(joint_row_cells(spec, row['runs']))} | {minutes:.1f} |")
        commands[row_label(key)] = row.get("command", "")
    reference = rows.get(name) or next(iter(rows.values()), None)
    if reference is None:
        lines.append("| baselines: the `kold_gs/valid` rows of docs/benchmarks/baselines.md until a row is run "
                     "| — | — | — | — | — | — | — |")
    else:
        base = reference["baselines"]
        for kind in spec.span_baselines:
            if kind in base:
                lines.append(f"| baseline: {SPAN_BASELINE_ROWS[kind]} | — | {base[kind]['char_f1']:.4f} | — | — | — "
                             "| — | — |")
        for kind, label in (("majority", "the majority target type"), ("ngram", "TF-IDF n-gram target type")):
            if kind in base:
                lines.append(f"| baseline: {label} | — | — | — | {base[kind][spec.joint.baseline_metric]:.4f} | "
                             f"{base[kind]['accuracy']:.4f} | — | — |")
    lines.append(f"| published (not the same measure: below) | — | {spec.anchor} | — | {spec.joint.anchor} "
                 "| — | — | — |")
    if rows.get(name):
        lines += ["", f"Against the aims (the experiment file's row, `{spec.experiment}`):", "",
                  *joint_aims(spec, rows[name])]
    for paragraph in paragraphs[1:]:
        lines += ["", paragraph]
    lines += gate_lines(results, (name,))
    if commands:
        lines += ["", "Commands:", "", *(f"- {label}: `{cmd}`" for label, cmd in commands.items())]
    return "\n".join(lines) + "\n"


def write_docs(results: dict[str, Any], command: str) -> None:
    """The shared quality section and each joint corpus's own section of docs/benchmarks/quality.md."""
    write_section("quality", render(results, command))
    for name in JOINT:
        write_section(f"quality-{name.replace('_', '-')}", render_joint(name, results))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--seeds", nargs="+", type=int, default=[13, 14, 15])
    parser.add_argument("--test", help="a test file in the corpus's own format (one corpus at a time)")
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--split-seed", type=int, default=42)
    parser.add_argument("--limit", type=int, help="train on at most N examples (smoke runs)")
    parser.add_argument("--extra-train", type=Path, nargs="+", metavar="PATH",
                        help="more training files in the corpus's format (Toxic Spans: tsd_trial.csv), added to "
                        "the training side only; an example whose text is in the test part is left out")
    parser.add_argument("--extra-ngram-train", type=Path, nargs="+", metavar="PATH",
                        help="more training files in the corpus's format offered to the hybrid's n-gram only "
                        "(taken if dev prefers them); an example whose text is in dev or test is left out")
    parser.add_argument("--runs-from", metavar="TAG",
                        help="use the runs (and data files) of this tag, trained there if missing; "
                        "for settings applied after training")
    parser.add_argument("--experiment", metavar="FILE",
                        help="with --tag: train this experiment file of configs/experiment/quality/ instead of the "
                        "corpus table's (its data.reader_options read the training side)")
    add_key_values(parser, "--set", "config overrides for every run")
    parser.add_argument("--out", type=Path, default=ROOT / "checkpoints" / "quality")
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "quality.json",
                        help="JSON that accumulates every corpus's results (the docs table is built from it)")
    parser.add_argument("--tag", help="name this configuration's rows (e.g. mlm for a pretrained encoder): "
                        "results are kept under CORPUS:TAG beside the untagged rows")
    parser.add_argument("--retrain", action="store_true", help="retrain runs that already have metrics")
    parser.add_argument("--ensemble", action="store_true",
                        help="also score the seeds' models averaged (one more row; needs every seed's model folder)")
    parser.add_argument("--ensemble-with", nargs="+", metavar="TAG",
                        help="with --ensemble: also average in these tags' runs of the same seeds "
                        "(other configurations trained on the same split)")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the docs table from --results without training anything")
    parser.set_defaults(set=[])
    args = parser.parse_args()
    if args.test and len(args.corpora) != 1:
        parser.error("--test names one corpus's test file: pass exactly one --corpora")
    if args.ensemble_with and not args.ensemble:
        parser.error("--ensemble-with adds members to the --ensemble row: pass --ensemble too")
    if args.experiment and not args.tag:
        parser.error("--experiment trains another configuration: name its rows with --tag")
    if args.experiment and not (EXPERIMENTS / args.experiment).is_file():
        parser.error(f"--experiment: no file {args.experiment!r} in {EXPERIMENTS}")

    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    if args.render_only:
        write_docs(results, results.get("_command", "python bench/quality.py"))
        return 0
    # shlex.join quotes a --set value with spaces (tasks=[...]), so the command can be pasted into a shell.
    command = "python bench/quality.py " + shlex.join(sys.argv[1:])
    for name in args.corpora:
        key = f"{name}:{args.tag}" if args.tag else name
        setup = setup_of(args.set, args.test, args.test_fraction, args.split_seed, args.limit, args.extra_train,
                         args.extra_ngram_train, args.runs_from, args.experiment)
        result = run_corpus(name, CORPORA[name], args, recorded_runs(results.get(key, {}), setup))
        result.update(setup=setup, command=command)
        # Read the file again before writing: another benchmark process may have added a corpus.
        results = json.loads(args.results.read_text()) if args.results.exists() else {}
        results[key] = result
        results["_command"] = result["command"]
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    if not args.no_docs:
        write_docs(results, command)
    print(render(results, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
