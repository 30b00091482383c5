"""The configs shipped with the package: `kold-span configs` lists them, `kold-span train NAME` takes one by name.

The repository's `configs/` is the one copy: a source checkout (or an editable install) reads it
where it is, and a built wheel carries it as the package data `kold_span/configs/` (setup.py maps
the folder in). An experiment's name is its path under `experiment/` without `.yaml` (`demo`,
`quality/toxic_spans_minilm`); its `defaults:` resolve in the same folder (`config.loading`). The
data paths a config names are read from where the command runs, as for any config file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from kold_span.config.limits import CONFIG_BYTES, read_bounded
from kold_span.errors import ConfigError

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def config_root() -> Path:
    """The shipped configs' folder: `kold_span/configs` in an installed package, else the checkout's `configs/`."""
    installed = PACKAGE_DIR / "configs"
    return installed if installed.is_dir() else PACKAGE_DIR.parent / "configs"


def experiment_names(root: Optional[Path] = None) -> list[str]:
    """The names of the shipped experiments, sorted (`demo`, `quality/beep`, ...).

    Example:
        >>> {"demo", "quality/toxic_spans_minilm"} <= set(experiment_names())
        True
    """
    folder = (root or config_root()) / "experiment"
    return sorted(path.relative_to(folder).with_suffix("").as_posix() for path in folder.rglob("*.yaml"))


def experiment_path(config: str, root: Optional[Path] = None) -> Path:
    """The file `train` reads: `config` itself when it is a file or names a `.yaml`, else the shipped experiment
    of that name.

    Example:
        >>> experiment_path("configs/experiment/demo.yaml")
        PosixPath('configs/experiment/demo.yaml')
        >>> experiment_path("quality/toxic_spans_minilm").parts[-3:]
        ('experiment', 'quality', 'toxic_spans_minilm.yaml')
        >>> experiment_path("dmo")
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: no config file dmo, nor a shipped config named dmo; `kold-span configs` lists them
    """
    path = Path(config)
    if path.is_file() or path.suffix in (".yaml", ".yml"):  # a missing file is reported by `load_config`, as before
        return path
    if config not in experiment_names(root):  # names only: never a path that climbs out of the folder
        raise ConfigError(f"no config file {config}, nor a shipped config named {config}; "
                          "`kold-span configs` lists them")
    return (root or config_root()) / "experiment" / f"{config}.yaml"


def description(path: Path) -> str:
    """What a config is for: the first sentence of its leading comment ('' when it has none).

    Example:
        >>> description(config_root() / "experiment" / "demo.yaml")[:40]
        '`make demo`: KOLD level A + target span '
    """
    text = read_bounded(path, CONFIG_BYTES, ConfigError).decode("utf-8", "replace")
    comment = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("#").strip())
    first, period, _ = " ".join(comment).partition(". ")
    return first + period.strip()
