"""`kold-span predict`'s output: one row per input row, in input order, written whole or resumed after a kill.

The output is Parquet for a name ending in .parquet, else JSONL (one object a line). Both hold, per input
row, its id, text, labels and spans (and, from a model with a decision policy, its actions and the
scores they cut). Parquet stores `spans` as a list of typed structs (type,
start, end, text, score) and `labels` as the JSON text of the labels object the JSONL line holds:
a label's value is a boolean, string or list depending on the model's tasks, and a Parquet column
holds one type. The JSON lines are rendered in the pipeline's decoding thread, beside the network.

The rows go, as JSON lines, to `<output>.partial` (`data.atomic.partial_path`), flushed after every
chunk the predictor computes, and the finished file is renamed over `<output>` (`atomic_write`;
a Parquet output is converted from the finished JSON lines, a row group at a time): the
previous output is never touched by a run that fails. A run that fails or is killed leaves its
`.partial` file behind, and `resume=True` continues from it (or from a finished or half-written
`<output>` when there is no `.partial`): its complete rows are checked against the input (the
same id and text, row by row), the run goes back to the last chunk boundary among them, and
predicts from there. Restarting at a chunk boundary pads every text with the same neighbours as
an uninterrupted run, so the final file is the same, byte for byte (padding to another length
changes the last digits of a probability). The HTML page, when asked for, is rebuilt: the
kept rows are rendered from the `.partial` file, the new ones as they are predicted.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Optional, Sequence, Union

from kold_span.config.choices import OutputFormat, TaskKind
from kold_span.config.limits import CONFIG_BYTES, read_bounded
from kold_span.data.atomic import (OPTIONS_SUFFIX, atomic_write, check_companion, output_lock, output_target,
                                   partial_path)
from kold_span.data.example import Example
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, UnfinishedOutputError
from kold_span.inference.html import html_page
from kold_span.inference.inputs import INPUT_SUFFIXES, ReadOptions
from kold_span.inference.pipeline import Pipeline, RunOptions
from kold_span.inference.predictor import Predicts
from kold_span.models.kinds import kind_of
from kold_span.models.tasks import Task

log = logging.getLogger(__name__)
PARQUET_GROUP_ROWS = 4096  # rows per Parquet row group: memory stays flat on any input size


@dataclass
class PredictionRun:
    """What one `write_predictions` call did: rows written in all, and how many of them a resumed run kept."""

    rows: int
    kept: int = 0


def output_kind(path: Union[str, Path]) -> OutputFormat:
    """Parquet for an output file whose name ends in .parquet, else JSONL (any other name, as before Parquet),
    except a name ending as the other inputs predict reads (.txt, .csv, .tsv): JSON lines in a .csv file would
    be read back as CSV, so such a name is an `ArgumentError`.

    Example:
        >>> [str(output_kind(name)) for name in ("out/preds.parquet", "preds.JSONL", "preds.out")]
        ['parquet', 'jsonl', 'jsonl']
        >>> output_kind("preds.csv")
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: --output preds.csv: predict writes JSON lines or Parquet, and a name ending in .csv would be read back as CSV; name it .jsonl or .parquet
    """
    suffix = Path(path).suffix.lower()
    if suffix in INPUT_SUFFIXES and suffix not in (".jsonl", ".parquet"):
        raise ArgumentError(f"--output {path}: predict writes JSON lines or Parquet, and a name ending in {suffix} "
                            f"would be read back as {suffix[1:].upper()}; name it .jsonl or .parquet")
    return OutputFormat.PARQUET if suffix == ".parquet" else OutputFormat.JSONL


def prediction_record(example: Example, prediction: dict[str, Any]) -> dict[str, Any]:
    """The object `kold-span predict` writes per comment: id, text, then the prediction's labels and spans.

    Example:
        >>> prediction_record(Example(id="7", text="바보"), {"id": "7", "labels": {}, "spans": []})
        {'id': '7', 'text': '바보', 'labels': {}, 'spans': []}
    """
    return {"id": example.id, "text": example.text, **{k: v for k, v in prediction.items() if k != "id"}}


def output_row(example: Example, prediction: dict[str, Any]) -> str:
    """One line of the output: id, text, then the prediction's labels and spans (no trailing newline).

    Example:
        >>> output_row(Example(id="7", text="좋은 기사"), {"id": "7", "labels": {}, "spans": []})
        '{"id": "7", "text": "좋은 기사", "labels": {}, "spans": []}'
    """
    return json_text(prediction_record(example, prediction), what=f"the prediction of row {example.id!r}")


def row_problem(row: dict[str, Any], tasks: Sequence[Task]) -> Optional[str]:
    """What makes `row` no output row of a model of `tasks`, or None: its keys, each sequence task's label (one of
    the task's labels, or a list of them) and probabilities (one per label, in [0, 1]), and each span (a type of the
    model, offsets inside the text, its text the text's slice, a score in [0, 1]).

    Example:
        >>> from kold_span.models.tasks import Task
        >>> tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true")), Task("OFF_span", "span", "OFF")]
        >>> row = {"id": "1", "text": "바보야", "labels": {"OFF": {"label": True, "probs": {"false": 0.1, "true": 0.9}}},
        ...        "spans": [{"type": "OFF", "start": 0, "end": 2, "text": "바보", "score": 0.8}]}
        >>> row_problem(row, tasks) is None
        True
        >>> row_problem({**row, "labels": {"OFF": {"label": "HACKED", "probs": {"false": 0.1, "true": 0.9}}}}, tasks)
        "labels.OFF.label 'HACKED' is none of the task's labels (false, true)"
        >>> row_problem({**row, "spans": [{"type": "OFF", "start": -5, "end": 99999, "text": "", "score": 0.8}]}, tasks)
        'spans[0] runs from -5 to 99999, outside the text (0 to 3)'
    """
    unknown = sorted(set(row) - ROW_KEYS)
    if unknown:
        return f"unknown key(s) {', '.join(map(repr, unknown))}"
    labels, spans = row.get("labels"), row.get("spans")
    if not isinstance(labels, dict) or not isinstance(spans, list):
        return "'labels' must be an object and 'spans' a list"
    sequence = {task.name: task for task in tasks if not kind_of(task).token_level}
    if set(labels) != set(sequence):
        return f"labels of {sorted(labels)} where the model predicts {sorted(sequence)}"
    for name, task in sequence.items():
        if problem := _label_problem(labels[name], task):
            return f"labels.{name}{problem}"
    types = {task.source for task in tasks if kind_of(task).token_level}
    for i, span in enumerate(spans):
        if problem := _span_problem(span, row["text"], types):
            return f"spans[{i}]{problem}"
    signals = row.get("signals", {})
    if not (isinstance(signals, dict) and all(map(_count, signals.values()))):
        return "'signals' must be an object of counts"
    return None


# `Predictor.labels_and_spans` and `prediction_record` (a model with a decision policy adds the last two)
ROW_KEYS = {"id", "text", "labels", "spans", "signals", "actions", "action_scores"}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _probability(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def _label_problem(value: Any, task: Task) -> Optional[str]:
    """What is wrong with one sequence task's {label, probs} in a row (after its key), or None."""
    if not isinstance(value, dict) or set(value) != {"label", "probs"}:
        return " must be an object of 'label' and 'probs'"
    probs = value["probs"]
    if not isinstance(probs, dict) or set(probs) != set(task.labels) or not all(map(_probability, probs.values())):
        return f".probs must give each of the task's labels ({', '.join(task.labels)}) a probability in [0, 1]"
    known = [task.decode_label(label) for label in task.labels]

    def one(label: Any) -> bool:  # by type too: the label true is no label 1
        return any(type(label) is type(k) and label == k for k in known)

    label = value["label"]
    if not (one(label) or (isinstance(label, list) and all(map(one, label)))):
        return f".label {label!r} is none of the task's labels ({', '.join(task.labels)})"
    return None


def _span_problem(span: Any, text: str, types: set[str]) -> Optional[str]:
    """What is wrong with one span of a row (after its place), or None."""
    if not isinstance(span, dict) or set(span) != {"type", "start", "end", "text", "score"}:
        return " must be an object of type, start, end, text and score"
    start, end = span["start"], span["end"]
    if span["type"] not in types:
        return f" has type {span['type']!r}, none of the model's ({', '.join(sorted(types))})"
    if not (_count(start) and _count(end) and 0 <= start < end <= len(text)):
        return f" runs from {start!r} to {end!r}, outside the text (0 to {len(text)})"
    if span["text"] != text[start:end] or not _probability(span["score"]):
        return " has a text other than the text's slice, or a score outside [0, 1]"
    return None


def complete_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(bytes up to the end of the row, row) for each complete row of an unfinished output, in order.

    A last line without its newline was cut short by a kill and is left out; any other line that is
    no output row means the file is not an output of `kold-span predict`: an `UnfinishedOutputError` naming it.

    Example:
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = Path(tmp.name) / "p.jsonl.partial"
        >>> _ = path.write_bytes(b'{"id": "1", "text": "a"}\\n{"id": "2", "te')
        >>> list(complete_rows(path))
        [(25, {'id': '1', 'text': 'a'})]
        >>> tmp.cleanup()
    """
    end = 0
    with path.open("rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                return
            try:
                row = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                row = None
            if not (isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("text"), str)):
                raise UnfinishedOutputError(f"{path}:{number}: not a row of kold-span predict output (an object "
                                            "with 'id' and 'text'); delete the file or predict without resuming")
            end += len(raw)
            yield end, row


def write_predictions(predictor: Predicts, examples: Iterable[Example], output: Path, *,
                      html: Optional[Path] = None, options: RunOptions = RunOptions(), resume: bool = False,
                      on_row: Callable[[], None] = lambda: None, read: Optional[ReadOptions] = None) -> PredictionRun:
    """Predict every example into `output` (JSONL or Parquet) and optionally an HTML page, resuming an unfinished run.

    `output` and `html` are replaced only when every row is written. `resume` continues the unfinished output of an
    earlier run with the same input and options (see the module docstring); without it an unfinished `.partial`
    file is started over. `on_row` is called after each row is written (a progress bar). `read` is how `examples`
    were read from their file (its columns, quoting, bad-row policy), kept with the options: a resume that reads
    the input otherwise is refused. Returns how many rows the output holds, and how many were kept.

    Raises:
        DataError: a bad input row; `output` and `html` are left as they were, the rows written so far
            stay in `.partial`.
        UnfinishedOutputError: `resume` with an unfinished output that is not of this input, that was
            predicted with other options (`run_options`: the model, batch size, precision and runtime,
            thresholds, normalization, perspective, how the input is read), or whose kept rows are not
            rows this model writes (`row_problem`).
        OutputTargetError: `output`, `html` or a file kept beside them must not be written (`output_target`).
        OutputInUseError: another run is writing `output` or `html` now; nothing of it is touched.
    """
    # A link is followed: its target gets the rows, and the partial and options files go beside the target.
    output, html = output_target(output), output_target(html) if html else None
    # Held from before the resume point is read to after the rename: a second run on this output is refused
    # before it reads, moves or deletes anything of the first's (its partial file, its options).
    with output_lock(output), (output_lock(html) if html else nullcontext()):
        return PredictionWriter(predictor, output, html, options, on_row, read).write(examples, resume)


@dataclass
class PredictionWriter:
    """One `write_predictions` run once it holds the locks on its outputs: where its rows go, and how."""

    predictor: Predicts
    output: Path
    html: Optional[Path]
    options: RunOptions
    on_row: Callable[[], None]
    read: Optional[ReadOptions]

    def __post_init__(self) -> None:
        self.kind, self.partial = output_kind(self.output), partial_path(self.output)
        # Kept beside the unfinished output, so that a resume with other options is refused, not quietly different.
        self.options_file = partial_options_path(self.output)
        self.recorded = run_options(self.predictor, self.options, self.read)

    def write(self, examples: Iterable[Example], resume: bool) -> PredictionRun:
        """Find the resume point (none without `resume`), then write the rows and the page."""
        partial, chunk = self.partial, self.options.chunk_size
        check_companion(partial, self.output)
        check_companion(self.options_file, self.output)
        if resume and partial.exists():
            _check_same_options(self.options_file, self.recorded, partial)
        kept, end = _resume_point(self.output, partial, chunk) if resume else (0, 0)
        if not resume and partial.exists():
            log.warning("%s: starting over; the unfinished output of an earlier run in it is discarded", partial)
        try:
            rows = self._rows(iter(examples), kept, end)
        except BaseException:
            if not partial.exists():
                self.options_file.unlink(missing_ok=True)  # nothing to resume: no file left behind
            raise
        self.options_file.unlink(missing_ok=True)
        return PredictionRun(rows, kept)

    def _rows(self, examples: Iterator[Example], kept: int, end: int) -> int:
        """The rows and page after the resume point (`kept` rows, `end` bytes); returns the rows in the output."""
        output, partial, kind, tasks = self.output, self.partial, self.kind, self.predictor.tasks
        with ExitStack() as stack:
            mode = "a" if kept else "w"
            # A Parquet output keeps its rows in the partial file, converted to Parquet once they are all there.
            out = stack.enter_context(atomic_write(output, mode, partial=partial, rename=kind is OutputFormat.JSONL))
            if not kept:
                self.options_file.write_text(json_text(self.recorded) + "\n", encoding="utf-8")
            # The model's span types fix the page's colours and legend, whichever types the rows hold.
            span_types = list(dict.fromkeys(task.source for task in tasks if task.kind is TaskKind.SPAN))
            page = stack.enter_context(html_page(self.html, span_types)) if self.html else None
            if kept:
                _check_kept_rows(partial, kept, examples, page, self.on_row, tasks)
                out.truncate(end)  # the rows after the last whole chunk are predicted again
            rows = kept
            pipeline = Pipeline(self.predictor, self.options)
            for example, (prediction, line) in pipeline.run(examples, lambda e, p: (p, output_row(e, p) + "\n")):
                out.write(line)
                if page:
                    page.add(example, prediction)
                rows += 1
                if rows % self.options.chunk_size == 0:
                    out.flush()  # a whole chunk is in the file: a run killed now resumes after it
                self.on_row()
            if kind is OutputFormat.PARQUET:
                out.flush()  # every row is in the partial file, which stays until the Parquet file is in place
                with atomic_write(output, "wb") as target:
                    write_parquet(target, (row for _, row in complete_rows(partial)),
                                  [task.name for task in tasks if task.decision])
        if kind is OutputFormat.PARQUET:
            partial.unlink()
        return rows


def partial_options_path(output: Path) -> Path:
    """Where an unfinished output keeps the options it was predicted with: `<output>.partial.json`.

    Example:
        >>> partial_options_path(Path("out/p.jsonl")).as_posix()
        'out/p.jsonl.partial.json'
    """
    partial = partial_path(output)
    return partial.with_name(partial.name + OPTIONS_SUFFIX)


def run_options(predictor: Predicts, options: RunOptions, read: Optional[ReadOptions] = None) -> dict[str, Any]:
    """Everything a resumed run must share with the run it continues to write the same rows.

    The model (`Predictor.identity`: the SHA-256 of its files, config.json's thresholds and
    normalization included), and what can differ for one model: batching, what runs each network
    and at which precision, the thresholds and normalization in use, snapping, trimming and windows,
    the annotator perspective, and how the input file is read (its text, context and id columns).
    """
    settings, members = predictor.settings, predictor.members  # an ensemble's networks run each in its own way
    return {"batch_size": options.batch_size, "precision": predictor.precision,
            "runtime": [f"{m.network.runtime} {m.precision}" for m in members],
            "perspective": options.perspective, "tasks": [task.name for task in predictor.tasks],
            "thresholds": {task.name: list(task.thresholds) for task in predictor.tasks},
            "normalize": list(settings.normalize) if settings.normalize is not None else None,
            "snap": str(settings.snap), "trim": settings.trim,
            "windows": [[m.settings.max_length, m.settings.stride, str(m.settings.context_mode), m.settings.max_turns]
                        for m in members],
            "input": dataclasses.asdict(read) if read is not None else None, "model": predictor.identity}


def _check_same_options(options_file: Path, options: dict[str, Any], partial: Path) -> None:
    """An `UnfinishedOutputError` naming each option that differs from those the unfinished output was written with.

    The model is one of them (`Predictor.identity`, the SHA-256 of its files): rows of another model are
    never kept. An options file that is missing or unreadable is refused too, since nothing then says
    which model and options wrote the rows; the message counts them.
    """
    def rows() -> str:  # a file that is no output at all is named as such first (`complete_rows`)
        return f"{sum(1 for _ in complete_rows(partial))} complete rows"

    try:
        before = json.loads(read_bounded(options_file, CONFIG_BYTES, UnfinishedOutputError).decode("utf-8"))
        if not isinstance(before, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        raise UnfinishedOutputError(f"{partial} holds {rows()} but not the options they were predicted with "
                                    f"({options_file.name} is missing): the model and options that wrote them are "
                                    "unknown; delete it or predict without --resume") from None
    except (OSError, ValueError) as err:
        raise UnfinishedOutputError(f"{partial} holds {rows()} but {options_file.name} is unreadable ({err}): the "
                                    "model and options that wrote them are unknown; delete both or predict "
                                    "without --resume") from None
    changed = [f"{key} {_short(then)} then, {_short(now)} now" for key, then, now in _differences(before, options)]
    if changed:
        raise UnfinishedOutputError(f"{partial.name} holds {rows()} predicted with other options ("
                                    f"{'; '.join(changed)}): resuming would not give the file an uninterrupted "
                                    "run writes; resume with the same model and options, or predict without --resume")


def _differences(before: dict[str, Any], now: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(key, then, now) for each option that differs; an object's keys compared one by one ("input.context_column").

    Example:
        >>> list(_differences({"input": {"context_column": None, "quoting": "csv"}, "batch_size": 8},
        ...                   {"input": {"context_column": "body", "quoting": "csv"}, "batch_size": 8}))
        [('input.context_column', None, 'body')]
    """
    for key, value in now.items():
        then = before.get(key)
        if then == value:
            continue
        if isinstance(then, dict) and isinstance(value, dict):
            for sub in dict.fromkeys([*value, *then]):
                if then.get(sub) != value.get(sub):
                    yield f"{key}.{sub}", then.get(sub), value.get(sub)
        else:
            yield key, then, value


def _short(value: Any) -> str:
    """An option's value for a message: a model's SHA-256 cut to 12 digits, anything else as repr (cut at 60)."""
    return value[:12] if isinstance(value, str) and len(value) == 64 else repr(value)[:60]


def write_parquet(target: Union[str, Path, IO[bytes]], rows: Iterable[dict[str, Any]],
                  deciding: Sequence[str] = ()) -> int:
    """Output rows (as the JSONL lines hold them) written as Parquet, a row group at a time; returns how many.

    `deciding` names the tasks with a decision policy: their `actions` and `action_scores` become two
    columns of a field per task (none without a policy, as the JSONL rows have none), fixed before the
    first row so that an empty output has them too.

    Example:
        >>> import io, pyarrow.parquet as pq
        >>> buffer = io.BytesIO()
        >>> write_parquet(buffer, [{"id": "1", "text": "바보", "labels": {"OFF": {"label": True}},
        ...                         "spans": [{"type": "OFF", "start": 0, "end": 2, "text": "바보", "score": 0.9}]}])
        1
        >>> row = pq.read_table(io.BytesIO(buffer.getvalue())).to_pylist()[0]
        >>> row["labels"], row["spans"][0]["end"]
        ('{"OFF": {"label": true}}', 2)
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    span = pa.struct([("type", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("text", pa.string()),
                      ("score", pa.float64())])
    columns = [("id", pa.string()), ("text", pa.string()), ("labels", pa.string()), ("spans", pa.list_(span))]
    if deciding:
        columns += [("actions", pa.struct([(name, pa.string()) for name in deciding])),
                    ("action_scores", pa.struct([(name, pa.float64()) for name in deciding]))]
    schema = pa.schema(columns)
    count, group = 0, []
    with pq.ParquetWriter(target, schema) as writer:
        for row in rows:
            group.append({**row, "labels": json_text(row.get("labels", {}))})
            count += 1
            if len(group) >= PARQUET_GROUP_ROWS:
                writer.write_table(pa.Table.from_pylist(group, schema=schema))
                group = []
        if group:
            writer.write_table(pa.Table.from_pylist(group, schema=schema))
    return count


def _resume_point(output: Path, partial: Path, chunk: int) -> tuple[int, int]:
    """How many complete rows of the unfinished output to keep (whole chunks), and the bytes they take."""
    if not partial.exists():
        if output.exists():
            # A finished output, or one a writer of an earlier version left half-written: no options and no
            # model identity to check it against, so its rows are never taken as this run's.
            raise UnfinishedOutputError(f"{output}: finished, or written without {partial.name} and its options: "
                                        "nothing here can be resumed and checked; predict without --resume "
                                        "to write it anew")
        log.warning("%s: no unfinished output to resume (no %s); predicting every row", output, partial.name)
        return 0, 0
    ends = [0, *(end for end, _ in complete_rows(partial))]
    complete = len(ends) - 1
    kept = complete - complete % chunk
    log.info("%s: resuming after row %d (%d complete rows in %s; a run restarts at a boundary of %d rows)",
             output, kept, complete, partial.name, chunk)
    return kept, ends[kept]


def _check_kept_rows(partial: Path, kept: int, examples: Iterator[Example], page: Any,
                     on_row: Callable[[], None], tasks: Sequence[Task]) -> None:
    """Read past the input rows the kept rows answer, checking each pair has the same id and text, and each kept
    row is a row of this model (`row_problem`)."""
    for number, (_, row) in enumerate(complete_rows(partial), 1):
        if number > kept:
            break
        example = next(examples, None)
        if example is None:
            raise UnfinishedOutputError(f"{partial}: holds {kept} rows but the input has only {number - 1}; it is "
                                        "the output of another input: delete it or predict without resuming")
        if (row["id"], row["text"]) != (example.id, example.text):
            raise UnfinishedOutputError(f"{partial}:{number}: row {row['id']!r} ({row['text'][:30]!r}) where the "
                                        f"input has {example.id!r} ({example.text[:30]!r}); it is the output of "
                                        "another input: delete it or predict without resuming")
        if problem := row_problem(row, tasks):
            raise UnfinishedOutputError(f"{partial}:{number}: row {row['id']!r}: {problem}; not a row this model "
                                        "writes (edited, or of another version): delete it or predict without "
                                        "resuming")
        if page:
            page.add(example, row)
        on_row()
