"""The README's Quick start runs as written, command by command, on the shipped sample."""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, child_env


def quick_start_commands(readme: str) -> list[str]:
    """The `kold-span` commands of the README's Quick start block, continuation lines joined, comments cut."""
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", "", block)
    lines = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line.startswith("kold-span ")]


def test_quick_start_parsing_joins_continuations_and_drops_comments():
    readme = "## Quick start\n```bash\nmake install\nkold-span a --x 1 \\\n    --y 2   # note\n```\n"
    assert quick_start_commands(readme) == ["kold-span a --x 1 --y 2"]


@pytest.mark.slow
def test_quick_start_runs_as_written(tmp_path):
    for name in ("configs", "data"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = child_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    commands = quick_start_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [c.split()[1] for c in commands] == ["train", "convert", "predict", "evaluate", "agreement"]
    for command in commands:
        args = [sys.executable, "-m", "kold_span.cli", *shlex.split(command)[1:]]
        done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, encoding="utf-8", timeout=900)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    sample = [json.loads(line) for line in (tmp_path / "checkpoints/sample.jsonl").read_text().splitlines()]
    predictions = [json.loads(line) for line in (tmp_path / "checkpoints/predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in predictions] == [ex["id"] for ex in sample]
    assert (tmp_path / "checkpoints/predictions.html").stat().st_size > 0
    assert (tmp_path / "checkpoints/agreement/report.md").exists()
