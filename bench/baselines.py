"""Baseline scores on the real corpora: majority label, TF-IDF n-grams (± context), span baselines.

Each corpus's shared training side is split 80/20 (seeded, stratified on its label) and
`kold_span.evaluation.baselines.run_baselines` scores every applicable baseline on the 20%.
Toxic Spans is also scored train → trial (the released trial file). KOLD (`kold_gs`) is scored
as bench/quality.py splits it: its three training files → its valid side, the offensive span
(whole comment, every non-space character, lexicon, TF-IDF word tagger) and the target type.

    .venv/bin/python bench/baselines.py                      # all corpora
    .venv/bin/python bench/baselines.py --corpora irosva kocosa --data /path/to/data

The data directory defaults to $KOLD_SPAN_DATA, else ../shared/data beside the project.
Results are printed as a table and written as JSON (default bench/results/baselines.json).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import DATA, machine_line, write_section  # noqa: E402

from kold_span import corpora  # noqa: E402
from kold_span.data.selection import carve  # noqa: E402
from kold_span.evaluation.baselines import run_baselines  # noqa: E402

LABEL_BASELINES = ("majority", "ngram", "ngram_context")
IROSVA_VARIANTS = ("es", "mx", "cu")


def split(examples: list, label: str, args: argparse.Namespace) -> tuple[list, list]:
    """The seeded, stratified train/test split of one corpus."""
    return carve(examples, args.test_fraction, args.seed, stratify=label)


def bench_toxic_spans(data: Path, args: argparse.Namespace, ngram: dict) -> dict[str, Any]:
    """Lexicon span tagger: 80/20 of tsd_train, and tsd_train → tsd_trial."""
    train_all = corpora.read("toxic_spans", data / "toxic_spans" / "tsd_train.csv")
    trial = corpora.read("toxic_spans", data / "toxic_spans" / "tsd_trial.csv")
    train, test = split(train_all, "toxic", args)
    return {"split": run_baselines(train, test, label=None, span_type="OFF"),
            "trial": run_baselines(train_all, trial, label=None, span_type="OFF")}


# The span baselines of KOLD's rationale spans (the whole comment is the one to beat).
KOLD_SPAN_BASELINES = ("whole_text", "non_space", "lexicon", "token_ngram")


def bench_kold_gs(data: Path, args: argparse.Namespace, ngram: dict) -> dict[str, Any]:
    """KOLD's offensive span and target type (TGT): the three training files → the valid side."""
    train = corpora.read("kold_gs", data / "kold_gs")
    valid = corpora.read("kold_gs", data / "kold_gs" / "gs_kold_valid.json")
    return {"valid": run_baselines(train, valid, "TGT", span_type="OFF", ngram_options=ngram,
                                   span_baselines=KOLD_SPAN_BASELINES)}


def bench_irosva(data: Path, args: argparse.Namespace, ngram: dict) -> dict[str, Any]:
    """Irony per variant (es, mx, cu), text only and with the topic as context, and their mean."""
    results: dict[str, Any] = {}
    for variant in IROSVA_VARIANTS:
        examples = corpora.read("irosva", data / "irosva", variant=variant)
        train, test = split(examples, "irony", args)
        results[variant] = run_baselines(train, test, "irony", ngram_options=ngram)
    results["average"] = {name: {"macro_f1": statistics.mean(results[v][name]["macro_f1"] for v in IROSVA_VARIANTS)}
                          for name in LABEL_BASELINES}
    return results


# Corpora with one label, scored alike: reader, file under --data, label, problem. "ngram_context" reads
# KoCoSa's dialogue, BEEP!'s news title and MultiPICo's post; UnSmile's target groups have no context.
LABELLED = {"kocosa": ("kocosa", "kocosa/KoCoSa_dev.json", "sarcasm", "single"),
            "beep": ("beep", "beep", "hate", "single"),
            "unsmile": ("unsmile", "unsmile/unsmile_train_v1.0.tsv", "groups", "multi"),
            "multipico": ("multipico", "multipico", "irony", "single")}


def bench_labelled(corpus: str, data: Path, args: argparse.Namespace, ngram: dict) -> dict[str, Any]:
    """A corpus of LABELLED, alone and with its context; examples without the label (MultiPICo's ties) left out."""
    reader, path, label, problem = LABELLED[corpus]
    examples = [e for e in corpora.read(reader, data / path) if e.labels.get(label) is not None]
    train, test = split(examples, label, args)
    return run_baselines(train, test, label, problem=problem, ngram_options=ngram)


BENCHES: dict[str, Callable[[Path, argparse.Namespace, dict], dict[str, Any]]] = {
    "toxic_spans": bench_toxic_spans,
    "kold_gs": bench_kold_gs,
    "irosva": bench_irosva,
    **{corpus: partial(bench_labelled, corpus) for corpus in LABELLED},
}


def table_rows(corpus: str, result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(corpus/part, baseline, scores) rows of the printed table."""
    if corpus == "toxic_spans":
        return [(f"{corpus}/{part}", "lexicon", f"char_f1={result[part]['lexicon']['char_f1']:.4f} "
                 f"(lexicon {result[part]['lexicon']['lexicon_size']} words, n_test={result[part]['n_test']})")
                for part in ("split", "trial")]
    if corpus == "kold_gs":
        valid = result["valid"]
        return ([(f"{corpus}/valid OFF span", name, f"char_f1={valid[name]['char_f1']:.4f}")
                 for name in KOLD_SPAN_BASELINES]
                + [(f"{corpus}/valid TGT", name, " ".join(f"{k}={valid[name][k]:.4f}" for k in
                                                          ("accuracy", "balanced_accuracy", "macro_f1")))
                   for name in ("majority", "ngram")])
    parts = ({f"{corpus}/{v}": result[v] for v in (*IROSVA_VARIANTS, "average")} if corpus == "irosva"
             else {corpus: result})
    keys = ("accuracy", "balanced_accuracy", "macro_f1", "micro_f1", "f1")
    rows = []
    for part, scores in parts.items():
        for name in LABEL_BASELINES:
            if name in scores:
                shown = " ".join(f"{k}={scores[name][k]:.4f}" for k in keys if k in scores[name])
                rows.append((part, name, shown))
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the selected corpora, print a table, write the JSON; returns the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="directory of the corpora")
    parser.add_argument("--corpora", nargs="+", choices=list(BENCHES), default=list(BENCHES))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--max-features", type=int, default=100_000, help="vocabulary cap of each TF-IDF vectorizer")
    parser.add_argument("--min-df", type=int, default=2)
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "baselines.json")
    parser.add_argument("--docs", action="store_true", help="also write the table into docs/benchmarks/baselines.md")
    parser.add_argument("--docs-only", action="store_true",
                        help="rewrite the docs/benchmarks/baselines.md table from --output without running anything")
    args = parser.parse_args(argv)
    if args.docs_only:
        results = json.loads(args.output.read_text(encoding="utf-8"))
        write_docs(results)
        return results
    if not args.data.is_dir():
        parser.error(f"--data {args.data} is not a directory (set KOLD_SPAN_DATA or pass --data)")
    ngram = {"max_features": args.max_features, "min_df": args.min_df}
    results: dict[str, Any] = {"settings": {"seed": args.seed, "test_fraction": args.test_fraction,
                                            "ngram_options": ngram, "python": platform.python_version()},
                               "seconds": {}, "corpora": {}, "machines": {}}
    results = merged_with_earlier(results, args.output)
    for corpus in args.corpora:
        start = time.perf_counter()
        results["corpora"][corpus] = BENCHES[corpus](args.data, args, ngram)
        results["seconds"][corpus] = round(time.perf_counter() - start, 1)
        results["machines"][corpus] = machine_line()
        for part, name, shown in table_rows(corpus, results["corpora"][corpus]):
            print(f"{part:<22} {name:<14} {shown}", flush=True)
        print(f"{'':<22} ({results['seconds'][corpus]} s)", flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    if args.docs:
        write_docs(results)
    return results


def merged_with_earlier(results: dict[str, Any], output: Path) -> dict[str, Any]:
    """`results` holding the corpora an earlier run wrote to `output` with the same split and n-gram settings.

    So one corpus can be run (and rerun) alone without dropping the others from the file and the docs table.
    """
    if not output.exists():
        return results
    earlier = json.loads(output.read_text(encoding="utf-8"))

    def same(settings: dict[str, Any]) -> bool:
        return {k: v for k, v in settings.items() if k != "python"} == {
            k: v for k, v in results["settings"].items() if k != "python"}

    if not same(earlier.get("settings", {})):
        return results
    for key in ("corpora", "seconds", "machines"):
        results[key] = {**earlier.get(key, {}), **results[key]}
    return results


def write_docs(results: dict[str, Any]) -> None:
    """The baseline table as the `baselines` section of docs/benchmarks/baselines.md."""
    settings = results["settings"]
    by_machine: dict[str, list[str]] = {}
    for corpus in results["corpora"]:
        by_machine.setdefault(results.get("machines", {}).get(corpus) or machine_line(), []).append(corpus)
    ran_on = "; ".join(f"{', '.join(corpora_)} on {machine}" for machine, corpora_ in by_machine.items())
    lines = ["## Baselines on the public corpora", "",
             f"Command: `python bench/baselines.py` (or `--corpora NAME ...`, merged into the results file) — "
             f"{ran_on}. Split: seed {settings['seed']}, "
             f"{settings['test_fraction']:.0%} of each shared training side held out (stratified on the label); "
             f"KOLD: its training files → its valid side, as bench/quality.py; "
             f"TF-IDF options {settings['ngram_options']}. Seconds per corpus: {results['seconds']}.", "",
             "| corpus / part | baseline | scores |", "|---|---|---|"]
    for corpus, result in results["corpora"].items():
        lines += [f"| {part} | {name} | {shown} |" for part, name, shown in table_rows(corpus, result)]
    write_section("baselines", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
