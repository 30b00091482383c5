"""One policy for bad records in any input file (corpus readers, `kold-span predict` inputs) and one report.

A `BadRecords` policy either raises on the first bad record (a `DataError` naming the file,
line or record, and field, followed by how to skip such records), or skips it and notes its
reason in a `SkipReport`. The report is the one place a skipped record is listed: the caller
shows it once (a reader warns with its summary, the command line prints it).

Example:
    >>> bad = BadRecords(SkipReport("predict", Path("in.jsonl")), skip_bad=True, how_to_skip="--skip-bad")
    >>> bad.handle(DataError("in.jsonl:2: invalid JSON"))
    >>> bad.handle(DataError("in.jsonl:5: field 'text' is empty"))
    >>> print(bad.report.summary(limit=None))
    predict: skipped 2 bad record(s) in in.jsonl:
      in.jsonl:2: invalid JSON
      in.jsonl:5: field 'text' is empty
    >>> BadRecords(SkipReport("predict", Path("in.jsonl")), skip_bad=False,
    ...            how_to_skip="--skip-bad skips such rows").handle(DataError("in.jsonl:2: invalid JSON"))
    Traceback (most recent call last):
    ...
    kold_span.errors.DataError: in.jsonl:2: invalid JSON (--skip-bad skips such rows)
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from kold_span.errors import DataError


class BadRecordWarning(UserWarning):
    """Some records of an input file were bad and skipped (`skip_bad=True`)."""


@dataclass
class SkipReport:
    """What one read skipped (one reason per bad record, each naming where it was), and the records
    whose derived fields disagree with what the file itself states."""

    source: str
    path: Path
    reasons: list[str] = field(default_factory=list)
    disagreements: dict[str, list[str]] = field(default_factory=dict)
    # records kept, but read by a stated rule the user should know about (e.g. an ambiguous span)
    notes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """How many records were skipped."""
        return len(self.reasons)

    def disagree(self, field_name: str, example_id: str) -> None:
        """Note that an example's derived `field_name` differs from the file's own value."""
        self.disagreements.setdefault(field_name, []).append(example_id)

    def note(self, what: str, example_id: str) -> None:
        """Note that an example was kept but `what` applies to it (said once per kind in the summary)."""
        self.notes.setdefault(what, []).append(example_id)

    def summary(self, limit: Optional[int] = 3) -> str:
        """The count, then the first `limit` reasons one a line (every one when None), then one line per
        disagreeing field; "" when nothing was skipped or disagreed."""
        lines = []
        if self.count:
            shown = self.reasons if limit is None else self.reasons[:limit]
            lines.append(f"{self.source}: skipped {self.count} bad record(s) in {self.path}:")
            lines += [f"  {reason}" for reason in shown]
            if len(shown) < self.count:
                lines.append(f"  (and {self.count - len(shown)} more)")
        for name, ids in sorted(self.disagreements.items()):
            listed = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
            lines.append(f"{self.source}: {len(ids)} record(s) in {self.path} whose derived {name} differs "
                         f"from the file's own: {listed}")
        for what, ids in sorted(self.notes.items()):
            listed = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
            lines.append(f"{self.source}: {len(ids)} record(s) in {self.path} kept with {what}: {listed}")
        return "\n".join(lines)


class BadRecords:
    """The bad-record policy of one read: raise on a bad record, or (when skipping) note its reason and go on.

    `how_to_skip` ends the error raised when not skipping: how the user asks for bad records to
    be skipped where this input is read (a reader option, a command-line flag).
    """

    def __init__(self, report: SkipReport, skip_bad: bool, how_to_skip: str) -> None:
        self.report = report
        self.skip_bad = skip_bad
        self.how_to_skip = how_to_skip

    def handle(self, err: DataError) -> None:
        """Raise `err` (with how to skip such records) unless skipping bad records; then note it in the report."""
        if not self.skip_bad:
            raise DataError(f"{err} ({self.how_to_skip})" if self.how_to_skip else str(err)) from err
        self.report.reasons.append(str(err))

    @contextmanager
    def guard(self) -> Iterator[None]:
        """The block's `DataError` is a bad record (`handle`): raised with how to skip it, or noted and passed."""
        try:
            yield
        except DataError as err:
            self.handle(err)
