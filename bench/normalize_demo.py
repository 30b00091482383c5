"""Issue 43's example on a trained model, with and without normalization: one insult, disguised six ways.

A copy of the model directory gets `"normalize": {"steps": [...all...]}` in its config.json (no
retraining: the normalized text is what a model trained on clean text has seen). Writes the
section `normalize-demo` of docs/ROBUSTNESS.md.

    python bench/normalize_demo.py --model checkpoints/demo/demo/model [--write]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import write_section  # noqa: E402

from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.models.manifest import write_manifest  # noqa: E402
from kold_span.text.normalize import STEPS  # noqa: E402

TEXT = "바보 멍청이 꺼져라"
VARIANTS = {"as written": TEXT,
            "decomposed (NFD)": unicodedata.normalize("NFD", TEXT),
            "zero-width spaces inside words": "바\u200b보 멍\u200b청이 꺼\u200b져라",
            "joiners inside words": "바\u200d보 멍청이 꺼\u2060져라",
            "jamo for a syllable": "ㅂㅏ보 멍청이 꺼져라",
            "dots inside words": "바.보 멍.청이 꺼.져라"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--write", action="store_true", help="write the section into docs/ROBUSTNESS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        normalizing = Path(tmp) / "model"
        shutil.copytree(args.model, normalizing)
        config = json.loads((normalizing / "config.json").read_text(encoding="utf-8"))
        (normalizing / "config.json").write_text(json.dumps({**config, "normalize": {"steps": list(STEPS)}}),
                                                 encoding="utf-8")
        write_manifest(normalizing)  # config.json changed on purpose
        outputs = [Predictor.from_pretrained(d, precision="fp32").predict(list(VARIANTS.values()))
                   for d in (args.model, normalizing)]
    rows = []
    for (name, text), before, after in zip(VARIANTS.items(), *outputs):
        words = {(m.start(), m.end()) for m in re.finditer(r"\S+", text)}

        def cell(out):
            exact = sum((s["start"], s["end"]) in words for s in out["spans"] if s["type"] == "OFF")
            return f'{out["labels"]["OFF"]["probs"]["true"]:.4f}, {exact}/3 words exactly'
        rows.append(f"| {name} | {cell(before)} | {cell(after)} | `{json.dumps(after['signals'])}` |")
    body = "\n".join([
        f"Command: `python bench/normalize_demo.py --model {args.model} --write` (the `make demo` model; "
        f"P(offensive) in fp32, and how many OFF spans cover exactly one of the three words, on the text as "
        "written).", "",
        "| `바보 멍청이 꺼져라`, written | as trained | with `normalize` | signals |", "|---|---|---|---|", *rows])
    if args.write:
        write_section("normalize-demo", body, ROOT / "docs" / "ROBUSTNESS.md")
    print(body)


if __name__ == "__main__":
    main()
