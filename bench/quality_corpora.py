"""The quality benchmark's corpus table (bench/quality_corpora.yaml), read and checked.

Each entry says how a corpus is read, which experiment file trains it, how it is scored and
what it is compared with (see the comments in the YAML file). A bad entry is an error naming
the file and the key before anything is read or trained.

Example:
    >>> table = load_corpora(CORPORA_FILE)
    >>> table.corpora["irosva_mx"].options, table.corpora["unsmile"].problem, table.aim("irosva average")
    ({'variant': 'mx'}, <Problem.MULTI: 'multi'>, 0.7)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kold_span import corpora
from kold_span.config import ConfigError, Problem, build_dataclass, read_yaml
from kold_span.evaluation.baselines import SPAN_BASELINES
from kold_span.models.ngram import NGRAM_PROBLEMS

ROOT = Path(__file__).resolve().parents[1]
CORPORA_FILE = ROOT / "bench" / "quality_corpora.yaml"
EXPERIMENTS = ROOT / "configs" / "experiment" / "quality"
# The name of the IroSvA average's row, as the tables and the aims know it.
IROSVA_AVERAGE = "irosva average"
# The span baselines `run_baselines` knows (`span_baselines`), in the tables' order.
SPAN_BASELINE_NAMES = (*SPAN_BASELINES, "lexicon", "token_ngram")


@dataclass
class JointLabel:
    """A sequence label a span corpus's models learn beside its spans (KOLD's target type), scored and aimed at too."""

    label: str
    metric: str  # TASK/METRIC in the runs' test scores, e.g. TGT/macro_f1
    baseline_metric: str  # the majority and n-gram baselines' score of the same thing, e.g. macro_f1
    anchor: str = "—"
    aim: Optional[float] = None


@dataclass
class Corpus:
    """How to read one corpus and which label, metric, experiment file, published anchor and aim it has."""

    reader: str
    path: str
    metric: str  # the headline metric, as `task/metric` in the toolkit's test scores
    baseline_metric: str
    anchor: str
    experiment: str
    label: Optional[str] = None
    options: dict[str, Any] = field(default_factory=dict)
    problem: Problem = Problem.SINGLE
    span_type: Optional[str] = None
    aim: Optional[float] = None
    span_baselines: list[str] = field(default_factory=lambda: ["lexicon"])
    joint: Optional[JointLabel] = None


@dataclass
class Average:
    """The published anchor and the aim of a row that averages corpora (the three IroSvA variants)."""

    anchor: str
    aim: Optional[float] = None


@dataclass
class CorpusTable:
    """Every corpus by name, in the file's order, and the IroSvA average's anchor and aim."""

    corpora: dict[str, Corpus]
    irosva_average: Average

    def aim(self, name: str) -> Optional[float]:
        """The aim of a corpus or of the IroSvA average (`IROSVA_AVERAGE`); None where none was set."""
        return self.irosva_average.aim if name == IROSVA_AVERAGE else self.corpora[name].aim


def load_corpora(path: Path = CORPORA_FILE, experiments: Path = EXPERIMENTS) -> CorpusTable:
    """Read and check the corpus table (its experiment files in `experiments`); a `ConfigError` names file and key."""
    raw = read_yaml(path)
    unknown = sorted(set(raw) - {"corpora", "irosva_average"})
    if unknown:
        raise ConfigError(f"{path}: unknown key '{unknown[0]}'; allowed keys here: corpora, irosva_average")
    entries = raw.get("corpora")
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(f"{path}: 'corpora' must map each corpus name to its entry, got {entries!r}")
    table = {str(name): corpus_entry(path, str(name), entry, experiments) for name, entry in entries.items()}
    if "irosva_average" not in raw:
        raise ConfigError(f"{path}: missing key 'irosva_average' (its anchor, and its aim or null)")
    average = build_dataclass(Average, raw["irosva_average"], str(path), "irosva_average.")
    _check_aim(path, "irosva_average.aim", average.aim)
    return CorpusTable(table, average)


def corpus_entry(path: Path, name: str, entry: Any, experiments: Path) -> Corpus:
    """One checked entry of the table: keys and kinds, then the values that must name something real."""
    where = f"corpora.{name}."
    if ":" in name or name.startswith("_"):
        raise ConfigError(f"{path}: corpus name {name!r}: ':' separates a tag and '_' starts the results "
                          "file's own keys; choose another name")
    spec = build_dataclass(Corpus, entry, str(path), where)
    if spec.reader not in corpora.available():
        raise ConfigError(f"{path}: key '{where}reader': unknown reader {spec.reader!r}; known readers: "
                          f"{', '.join(corpora.available())}")
    if spec.problem not in NGRAM_PROBLEMS:  # the problems an n-gram row can score
        raise ConfigError(f"{path}: key '{where}problem' must be one of {', '.join(NGRAM_PROBLEMS)}, "
                          f"got {spec.problem!r}")
    spec.problem = Problem(spec.problem)
    if "/" not in spec.metric:
        raise ConfigError(f"{path}: key '{where}metric' must be TASK/METRIC as in a run's metrics.json, "
                          f"e.g. irony/macro_f1; got {spec.metric!r}")
    if spec.label is None and spec.span_type is None:
        raise ConfigError(f"{path}: corpus {name!r} needs a label (a sequence label) or a span_type (a span corpus)")
    if spec.joint is not None and (spec.span_type is None or spec.label is not None):
        raise ConfigError(f"{path}: key '{where}joint' is a label learnt beside a span corpus's spans: it needs "
                          "span_type and label: null")
    if spec.joint is not None and "/" not in spec.joint.metric:
        raise ConfigError(f"{path}: key '{where}joint.metric' must be TASK/METRIC as in a run's metrics.json, "
                          f"e.g. TGT/macro_f1; got {spec.joint.metric!r}")
    unknown = sorted(set(spec.span_baselines) - set(SPAN_BASELINE_NAMES))
    if unknown:
        raise ConfigError(f"{path}: key '{where}span_baselines': unknown baseline {unknown[0]!r}; known: "
                          f"{', '.join(SPAN_BASELINE_NAMES)}")
    if not (experiments / spec.experiment).is_file():
        raise ConfigError(f"{path}: key '{where}experiment': no file {spec.experiment!r} in {experiments}")
    _check_aim(path, f"{where}aim", spec.aim)
    if spec.joint is not None:
        _check_aim(path, f"{where}joint.aim", spec.joint.aim)
    return spec


def _check_aim(path: Path, key: str, aim: Optional[float]) -> None:
    if aim is not None and not 0 <= aim <= 1:
        raise ConfigError(f"{path}: key '{key}' must be a score between 0 and 1, or null; got {aim!r}")
