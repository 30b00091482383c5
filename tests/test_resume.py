"""A run killed (SIGKILL) after its first checkpoint and resumed ends as the same run uninterrupted."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import FIXTURE, ROOT, TINY, child_env
from safetensors.torch import load_file

# Dropout and random (not length-grouped) batches: both draw from the generators a resume must restore.
SETTINGS = ["trainer.max_epochs=4", "data.limit=48", "data.dev_fraction=0.25", "model.dropout=0.1",
            "trainer.batch_size=8", "trainer.threads=1"]


def train_command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kold_span.cli", "train", str(TINY), *extra, "--set", f"output_dir={out}",
            f"data.train={FIXTURE}", "run=r", *SETTINGS]


def first_checkpoint_epoch(path: Path) -> int:
    """The epoch stored in a complete checkpoint file, or -1 while there is none readable."""
    try:
        return int(torch.load(path, weights_only=False, map_location="cpu")["epoch"])
    except Exception:  # absent or still being written
        return -1


@pytest.mark.slow
def test_killed_and_resumed_run_equals_the_uninterrupted_run(tmp_path):
    env = child_env()
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    done = subprocess.run(train_command(whole), cwd=ROOT, env=env, capture_output=True, encoding="utf-8", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    process = subprocess.Popen(train_command(broken), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    last = broken / "tiny" / "r" / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 600
    while first_checkpoint_epoch(last) < 0 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.kill()
    process.wait()
    killed_at = first_checkpoint_epoch(last)
    if killed_at < 0 or killed_at >= 3:
        pytest.fail(f"the run was not killed between epochs (last checkpoint epoch {killed_at})")
    assert not (broken / "tiny" / "r" / "metrics.json").exists()

    resumed = subprocess.run(train_command(broken, "--resume"), cwd=ROOT, env=env, capture_output=True,
                             encoding="utf-8", timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    weights = [load_file(str(d / "tiny" / "r" / "model" / "model.safetensors")) for d in (whole, broken)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    metrics = [json.loads((d / "tiny" / "r" / "metrics.json").read_text()) for d in (whole, broken)]
    assert metrics[0]["dev"] == metrics[1]["dev"]
