"""How many labels and span characters change when a trained model predicts on a faster CPU path than float32.

For each finished run (a folder with `config.json` and `model/`, as `kold-span train` writes it), the
run's own dev side is read again (same reader, filter and seeded carving) and predicted on the CPU by
torch in float32 and by the faster path: `--against bf16` (torch's bf16 autocast) or `--against int8`
(the network exported to a dynamic int8 ONNX graph, in a copy of the model directory, run on ONNX
Runtime). Counted: examples whose label changes, per sequence task; span characters predicted by one
and not the other (the symmetric difference), per span type, against the characters float32 marks;
the dev score of each; and the time each took.

    python bench/cpu_agreement.py checkpoints/prec/quality-toxic_spans/ts checkpoints/prec/quality-beep/beep
    python bench/cpu_agreement.py --against int8 checkpoints/prec/quality-toxic_spans/ts

Results: bench/results/<against>-vs-fp32.json and docs/benchmarks/<against>-vs-fp32.md (with the CPU's
vector extensions: on a CPU without bf16 instructions bf16 is emulated, slow, and its numbers still
show what such a CPU would compute).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import machine_line, run_splits, save_results, write_section  # noqa: E402

from kold_span.data import write_jsonl  # noqa: E402
from kold_span.evaluation.prediction_files import evaluate_examples, read_predictions  # noqa: E402
from kold_span.inference.export import export_onnx  # noqa: E402
from kold_span.inference.predictor import Predictor  # noqa: E402

AGAINST = ("bf16", "int8", "int8-static")


def span_chars(prediction: dict[str, Any]) -> dict[str, set[int]]:
    """The characters each span type marks in one prediction row.

    Example:
        >>> span_chars({"spans": [{"type": "OFF", "start": 1, "end": 3}, {"type": "OFF", "start": 5, "end": 6}]})
        {'OFF': {1, 2, 5}}
    """
    marked: dict[str, set[int]] = {}
    for span in prediction["spans"]:
        marked.setdefault(span["type"], set()).update(range(span["start"], span["end"]))
    return marked


def changes(fp32: list[dict[str, Any]], fast: list[dict[str, Any]]) -> dict[str, Any]:
    """Labels and span characters that differ between two precisions' rows of the same examples.

    Example:
        >>> a = [{"labels": {"OFF": {"label": True}}, "spans": [{"type": "OFF", "start": 0, "end": 4}]}]
        >>> b = [{"labels": {"OFF": {"label": False}}, "spans": [{"type": "OFF", "start": 2, "end": 5}]}]
        >>> changes(a, b)["labels"]["OFF"], changes(a, b)["spans"]["OFF"]
        ({'changed': 1, 'of': 1}, {'changed_chars': 3, 'fp32_chars': 4, 'rows_changed': 1, 'of': 1})
    """
    labels: dict[str, dict[str, int]] = {}
    spans: dict[str, dict[str, int]] = {}
    for a, b in zip(fp32, fast, strict=True):
        for task, value in a["labels"].items():
            row = labels.setdefault(task, {"changed": 0, "of": 0})
            row["of"] += 1
            row["changed"] += value["label"] != b["labels"][task]["label"]
        marked_a, marked_b = span_chars(a), span_chars(b)
        for span_type in sorted(set(marked_a) | set(marked_b) | set(spans)):
            row = spans.setdefault(span_type, {"changed_chars": 0, "fp32_chars": 0, "rows_changed": 0, "of": 0})
            chars_a, chars_b = marked_a.get(span_type, set()), marked_b.get(span_type, set())
            row["of"] += 1
            row["fp32_chars"] += len(chars_a)
            row["changed_chars"] += len(chars_a ^ chars_b)
            row["rows_changed"] += chars_a != chars_b
    return {"labels": labels, "spans": spans}


def dev_scores(dev: list, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The scores `kold-span evaluate` gives these prediction rows against the dev examples."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "predictions.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return evaluate_examples(dev, read_predictions(path))


def load(model: Path, path: str, folder: Path, calibration: list | None = None) -> Predictor:
    """The model as one path runs it: "fp32" and "bf16" on torch; exported into a copy and run on ONNX Runtime,
    "onnx" float32, "int8" dynamic int8 and "int8-static" static int8 calibrated on the first 256 examples of
    `calibration` (here the run's own train side)."""
    if path in ("fp32", "bf16"):
        return Predictor.from_pretrained(model, precision=path, runtime="torch")
    copy = shutil.copytree(model, folder / path)
    calibrate = None
    if path == "int8-static":
        calibrate = folder / "calibration.jsonl"
        write_jsonl(calibration[:256], calibrate)
    export_onnx(copy, quantize="none" if path == "onnx" else "int8", calibrate=calibrate)
    return Predictor.from_pretrained(copy, runtime="onnx")


def measure(run_dir: Path, against: str, batch_size: int) -> dict[str, Any]:
    """Predict a run's dev side in float32 and on the faster path; the changes, dev scores and seconds."""
    config, splits = run_splits(run_dir)
    dev = splits["dev"]
    rows: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    scores: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for path in ("fp32", against):
            predictor = load(run_dir / "model", path, Path(folder), splits["train"])
            start = time.perf_counter()
            rows[path] = list(predictor.predict_examples(dev, batch_size=batch_size))
            seconds[path] = time.perf_counter() - start
            scores[path] = dev_scores(dev, rows[path])
    return {"run": str(run_dir), "experiment": config.experiment, "against": against, "dev": len(dev),
            "seconds": seconds, "scores": scores, **changes(rows["fp32"], rows[against])}


def render(results: list[dict[str, Any]], command: str, against: str) -> str:
    """The Markdown section: one line per task or span type of each run."""
    lines = [f"Command: `{command}` — {machine_line()}, {os.environ.get('OMP_NUM_THREADS', 'all')} thread(s).", "",
             f"| run | dev | what | changed by {against} | fp32 dev score | {against} dev score | fp32 s | {against} s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        fp32, fast = r["scores"]["fp32"], r["scores"][against]
        timing = f"{r['seconds']['fp32']:.1f} | {r['seconds'][against]:.1f}"
        for task, c in r["labels"].items():
            key = next((k for k in (f"label/{task}/macro_f1", f"label/{task}/micro_f1") if k in fp32), None)
            score = f"{fp32[key]:.4f} | {fast[key]:.4f}" if key else "— | —"
            lines.append(f"| {r['experiment']} | {r['dev']} | label {task} | {c['changed']} of {c['of']} "
                         f"({100 * c['changed'] / max(c['of'], 1):.2f}%) | {score} | {timing} |")
        for span_type, c in r["spans"].items():
            key = f"span/{span_type}/char_f1"
            score = f"{fp32[key]:.4f} | {fast[key]:.4f}" if key in fp32 else "— | —"
            lines.append(f"| {r['experiment']} | {r['dev']} | span {span_type} | {c['changed_chars']} characters "
                         f"({100 * c['changed_chars'] / max(c['fp32_chars'], 1):.2f}% of fp32's {c['fp32_chars']}), "
                         f"{c['rows_changed']} of {c['of']} rows | {score} | {timing} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="finished run folders (config.json and model/)")
    parser.add_argument("--against", choices=AGAINST, default="bf16", help="the faster path compared with float32")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--section", help="default: <against>-vs-fp32")
    parser.add_argument("--no-docs", action="store_true", help="print the section instead of writing docs")
    args = parser.parse_args(argv)
    section = args.section or f"{args.against}-vs-fp32"
    results = [measure(run, args.against, args.batch_size) for run in args.runs]
    command = (f"python bench/cpu_agreement.py --against {args.against} "
               + " ".join(shlex.quote(str(r)) for r in args.runs))
    body = render(results, command, args.against)
    print(body)
    if not args.no_docs:
        save_results(section, results, ascii_only=True)
        write_section(section, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
