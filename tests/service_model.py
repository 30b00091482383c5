"""What the service tests share: the tiny model, trained once per test session, and a server process.

A module, not fixtures: every service test module calls `tiny_model()`, and the cache makes the
first call train (about a minute on 2 CPU cores) and the others reuse its directory.
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests/fixtures/configs/tiny.yaml"
FIXTURE = ROOT / "tests/fixtures/kold_small.json"


@functools.cache
def tiny_model() -> Path:
    """The tiny joint model (OFF + OFF_span) overfit on 16 fixture comments; deleted at exit."""
    from kold_span.config.loading import load_config
    from kold_span.training.run import train

    out = Path(tempfile.mkdtemp(prefix="kold-span-serve-tests-"))
    atexit.register(shutil.rmtree, out, True)
    config = load_config(TINY, [f"output_dir={out}", f"data.train={FIXTURE}", "run=serve", "data.limit=16"])
    return train(config, quiet=True).model_dir


def with_thresholds(model: Path, out: Path, thresholds: dict[str, list[float]]) -> Path:
    """A copy of a model directory at `out` whose config.json records these task thresholds, as dev tuning would."""
    from kold_span.models.manifest import write_manifest

    shutil.copytree(model, out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    for task in config["tasks"]:
        task["thresholds"] = thresholds.get(task["name"], task["thresholds"])
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_manifest(out)  # as whoever changes a saved model does
    return out


def child_env() -> dict[str, str]:
    """This checkout first on the child's import path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def get(url: str, timeout: float = 10) -> tuple[int, bytes]:
    """Status and body of a GET (an HTTP error status is returned, not raised)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def post(url: str, body: dict, timeout: float = 120) -> tuple[int, dict]:
    """Status and parsed JSON answer of a POST."""
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@dataclass
class Server:
    """A `kold-span serve` process and where it listens."""

    url: str
    process: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8")


@contextmanager
def running_server(models: list[Path], *options: str, log_dir: Path, ready: bool = True,
                   timeout: float = 300) -> Iterator[Server]:
    """`kold-span serve --port 0` in a child process; waits for its URL (and for /health 200 when `ready`)."""
    log = log_dir / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "kold_span.cli", "serve", "--model", *map(str, models),
                                    "--port", "0", *options], stdout=sink, stderr=subprocess.STDOUT,
                                   env=child_env(), cwd=ROOT)
    try:
        url = _wait_for_url(log, process, timeout)
        server = Server(url, process, log)
        if ready:
            deadline = time.monotonic() + timeout
            while _health(url) != 200:
                assert process.poll() is None, f"the server exited:\n{server.output()}"
                assert time.monotonic() < deadline, f"/health never said 200:\n{server.output()}"
                time.sleep(0.3)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(120)


def _health(url: str) -> Optional[int]:
    """/health's status, or None when the probe timed out (a starved machine: ask again until the deadline)."""
    try:
        return get(url + "health")[0]
    except TimeoutError:  # while reading the answer
        return None
    except urllib.error.URLError as err:  # while connecting
        if isinstance(err.reason, TimeoutError):
            return None
        raise


def _wait_for_url(log: Path, process: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(encoding="utf-8").splitlines():
            if line.startswith("kold-span serve: http://"):
                return line.split()[2]
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}:\n{log.read_text()}")
        time.sleep(0.1)
    raise AssertionError(f"no URL printed within {timeout} s:\n{log.read_text()}")


def chromium() -> Optional[tuple[str, str]]:
    """Paths of Debian's chromium and chromedriver, or None when either is missing."""
    browser = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists()
                                              else None)
    return (browser, driver) if browser and driver else None
