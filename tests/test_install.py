"""The package as a user installs it: core dependencies, extras named when missing, configs shipped by name.

The slow test builds a wheel from this checkout, installs it into a new virtual environment outside it
and runs the command line from a folder with no source tree. Offline: the wheel is built without
build isolation, and the new environment sees, of this one's installed packages, only those its core
requirements need (a folder of links named by a .pth file): what `pip install kold-span` installs,
none of the extras, so a core command that imports an extra's package fails here.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path, PurePath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import CONFIGS, DEMO, ROOT, SAMPLE
from kold_span.cli import main
from kold_span.config.loading import load_config
from kold_span.config.shipped import config_root, experiment_names, experiment_path
from kold_span.errors import ConfigError, MissingExtraError, needs_extra

BUILD_INPUTS = ("kold_span", "configs", "setup.py", "setup.cfg", "pyproject.toml", "README.md")


def test_a_missing_optional_package_names_the_extra_that_installs_it():
    with pytest.raises(MissingExtraError) as caught:
        with needs_extra("onnx"):
            import kold_span_no_such_package  # noqa: F401
    assert str(caught.value) == "kold_span_no_such_package is not installed: pip install 'kold-span[onnx]'"


def test_a_missing_module_of_the_package_itself_stays_a_bug():
    with pytest.raises(ModuleNotFoundError) as caught:
        with needs_extra("serve"):
            import kold_span.no_such_module  # noqa: F401
    assert not isinstance(caught.value, MissingExtraError)


@pytest.mark.parametrize("command, blocked, extra", [
    (["serve", "--model", "m"], ["fastapi", "kold_span.service.app"], "serve"),
    (["export", "--model", "m", "--format", "onnx"], ["onnx"], "onnx"),
    (["agreement", "f.json", "--format", "kold", "--out", "out"], ["krippendorff"], "agreement"),
    (["robustness", "--model", "m", "--input", "g.jsonl", "--out", "out"], ["matplotlib"], "plots"),
    (["ablate", "c.yaml", "--vary", "seed=1", "--out", "out"], ["matplotlib"], "plots"),
])
def test_a_command_whose_extra_is_missing_says_which_in_one_line(monkeypatch, capsys, tmp_path, command, blocked,
                                                                 extra):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, blocked[0], None)  # `import x` of a None entry fails as a missing package
    for module in blocked[1:]:  # imported by an earlier test: imported again, so that it meets the missing package
        monkeypatch.delitem(sys.modules, module, raising=False)
    assert main(command) == 2
    assert capsys.readouterr().err == (f"kold-span {command[0]}: error: {blocked[0]} is not installed: "
                                       f"pip install 'kold-span[{extra}]'\n")


def test_shipped_experiments_are_the_checkouts_configs_by_name():
    assert config_root() == CONFIGS  # a checkout (or an editable install) reads configs/ where it is
    names = experiment_names()
    assert "demo" in names and "quality/toxic_spans_minilm" in names
    assert len(names) == len(list((CONFIGS / "experiment").rglob("*.yaml")))
    assert experiment_path("demo") == DEMO
    assert load_config(experiment_path("demo")) == load_config(DEMO)


def test_a_config_file_is_read_as_before_and_a_name_must_be_shipped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo").write_text("seed: 1\n", encoding="utf-8")  # a file wins over the shipped name
    assert experiment_path("demo") == Path("demo")
    assert experiment_path("nowhere.yaml") == Path("nowhere.yaml")  # load_config names the missing file
    for name in ("dmo", "../experiment/demo", "experiment/demo", "quality"):
        with pytest.raises(ConfigError, match=f"no config file {name}, nor a shipped config named {name}"):
            experiment_path(name)


def test_configs_lists_every_shipped_experiment_with_what_it_is_for(capsys):
    assert main(["configs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{len(experiment_names())} shipped experiment configs (kold-span train NAME), in " \
                       f"{CONFIGS / 'experiment'}:"
    assert [line.split()[0] for line in lines[1:]] == experiment_names()
    assert lines[1].split(None, 1)[1].startswith("`make demo`: KOLD level A")
    assert all(len(line) <= 120 for line in lines[1:])


def core_requirements(wheel: Path) -> list[Requirement]:
    """What a plain `pip install` of the wheel installs first: its requirements outside every extra."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = metadata.PathDistribution(zipfile.Path(archive, name).parent).requires or []
    return [r for r in map(Requirement, requires) if r.marker is None or r.marker.evaluate({"extra": ""})]


def installed_closure(requirements: list[Requirement]) -> list[metadata.Distribution]:
    """The installed distributions that `requirements` need, their own requirements (and extras) followed."""
    found: dict[str, metadata.Distribution] = {}
    wanted = [(canonicalize_name(r.name), frozenset(r.extras)) for r in requirements]
    seen = set()
    while wanted:
        name, extras = wanted.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        found[name] = dist = metadata.distribution(name)  # a core dependency this environment lacks fails here
        for requirement in map(Requirement, dist.requires or []):
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in {"", *extras}):
                wanted.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return list(found.values())


def linked_packages(distributions: list[metadata.Distribution], folder: Path) -> Path:
    """A folder of links to the files of `distributions` (the top-level entries their RECORD lists), nothing else."""
    folder.mkdir(parents=True)
    for dist in distributions:
        site = Path(dist.locate_file(""))
        for top in {PurePath(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            if not (folder / top).exists() and (site / top).exists():
                (folder / top).symlink_to(site / top)
    return folder


def run_installed(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """A command of the new environment, from `cwd`, without this checkout on its path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONUTF8"] = "1"
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True,
                          encoding="utf-8", timeout=900)


@pytest.mark.slow
def test_a_wheel_installed_outside_the_checkout_trains_a_shipped_config_and_predicts(tmp_path):
    source = tmp_path / "source"
    for name in BUILD_INPUTS:  # built from a copy: the build writes nothing into the checkout
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                             if (ROOT / name).is_dir() else {}))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp_path / "dist"), str(source)], capture_output=True, encoding="utf-8")
    assert built.returncode == 0, f"{built.stderr}\n(without build isolation the wheel needs the dev extra's " \
                                  "setuptools>=70.1: make install)"
    wheel = next((tmp_path / "dist").glob("kold_span-*.whl"))
    core = {d.metadata["Name"].lower() for d in installed_closure(core_requirements(wheel))}
    assert "torch" in core and not core & {"fastapi", "uvicorn", "onnxruntime", "ray", "krippendorff", "matplotlib",
                                           "spacy"}

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, encoding="utf-8", check=True).stdout.strip())
    # Named site-packages: dill (datasets' fingerprints) pickles by value what a module outside one defines.
    deps = linked_packages(installed_closure(core_requirements(wheel)), tmp_path / "deps" / "site-packages")
    (site / "zz_dependencies.pth").write_text(f"{deps}\n", encoding="utf-8")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                                "-q", "--no-deps", "--no-index", str(wheel)], capture_output=True, encoding="utf-8")
    assert installed.returncode == 0, installed.stderr

    work = tmp_path / "work"  # a user's folder: their data, no source tree
    work.mkdir()
    shutil.copy2(SAMPLE / "kold_sample.json", work / "comments.json")
    (work / "comments.txt").write_text("이런 쓰레기 같은 기사는 왜 쓰는 거냐\n좋은 기사 감사합니다\n", encoding="utf-8")
    where = run_installed(venv, work, "python", "-c", "import kold_span; print(kold_span.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(site), where.stdout + where.stderr

    listed = run_installed(venv, work, "kold-span", "configs")
    assert listed.returncode == 0, listed.stderr
    assert str(site / "kold_span" / "configs" / "experiment") in listed.stdout.splitlines()[0]
    assert "quality/toxic_spans_minilm" in listed.stdout

    trained = run_installed(venv, work, "kold-span", "train", "demo", "--set", "run=wheel",
                            "data.train=comments.json", "data.limit=80", "trainer.max_epochs=1")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    model = work / "checkpoints" / "demo" / "wheel" / "model"
    assert json.loads((model.parent / "metrics.json").read_text(encoding="utf-8"))["test"]
    predicted = run_installed(venv, work, "kold-span", "predict", "--model", str(model), "--input", "comments.txt",
                              "--output", "predictions.jsonl")
    assert predicted.returncode == 0, predicted.stdout + predicted.stderr
    rows = [json.loads(line) for line in (work / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["text"] for row in rows] == ["이런 쓰레기 같은 기사는 왜 쓰는 거냐", "좋은 기사 감사합니다"]

    served = run_installed(venv, work, "kold-span", "serve", "--model", str(model))
    assert (served.returncode, served.stderr) == (2, "kold-span serve: error: fastapi is not installed: "
                                                     "pip install 'kold-span[serve]'\n")
