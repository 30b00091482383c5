"""The functional suite on a trained model, written into docs/benchmarks/functional.md.

    python bench/functional.py --model checkpoints/quality/runs/quality-toxic_spans/toxic_spans-seed13/model \\
        --lang en --name toxic-spans-minilm-13 --note "The shipped Toxic Spans config, seed 13."

Runs `kold-span functional` (held-out templates unless `--part`) into `--out/NAME`, and rewrites the section
`functional-NAME` of docs/benchmarks/functional.md with the table, both commands and the machine (its CPU
model and the vector extensions /proc/cpuinfo lists).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import DOCS, isa_flags, machine_line, write_section  # noqa: E402

from kold_span.cli.main import main as kold_span  # noqa: E402
from kold_span.evaluation.functional import render_markdown  # noqa: E402

PAGE = DOCS / "functional.md"


def local(path: Path) -> str:
    """A path relative to the checkout when it lies inside it (as the docs show it), else as it is.

    Example:
        >>> local(ROOT / "checkpoints" / "m"), local(Path("/elsewhere/m"))
        ('checkpoints/m', '/elsewhere/m')
    """
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def section(name: str, report: dict, bench_command: str, command: str, note: str = "") -> str:
    """The docs section: which model (`note`), both commands, the machine, then the report's tables."""
    body = render_markdown(report).split("\n", 2)[2].strip()
    return "\n".join([f"## {name}", "", *([note, ""] if note else []),
                      "```", bench_command, "# which ran:", command, "```", "",
                      f"Machine: {machine_line()}; CPU flags: {isa_flags()}.", "", body, ""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a trained model directory")
    parser.add_argument("--lang", required=True, help="en, ko or all")
    parser.add_argument("--part", default="held_out", choices=("held_out", "train", "all"))
    parser.add_argument("--name", help="the section's name (default: the model's run folder and the language)")
    parser.add_argument("--note", default="", help="a sentence under the section's title: which model this is")
    parser.add_argument("--out", default=str(ROOT / "checkpoints" / "functional"))
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    for key in ("model", "out"):
        setattr(args, key, local(Path(getattr(args, key)).resolve()))
    os.chdir(ROOT)

    name = args.name or f"{Path(args.model).parent.name}-{args.lang}"
    out = Path(args.out) / name
    argv = ["functional", "--model", args.model, "--lang", args.lang, "--part", args.part, "--out", str(out)]
    status = kold_span(argv)
    if status:
        return status
    report = json.loads((out / "functional.json").read_text(encoding="utf-8"))
    bench_command = "python bench/functional.py " + shlex.join(sys.argv[1:])
    if not args.no_docs:
        write_section(f"functional-{name}", section(name, report, bench_command, shlex.join(["kold-span", *argv]),
                                                    args.note), PAGE)
        print(f"wrote section functional-{name} of {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
