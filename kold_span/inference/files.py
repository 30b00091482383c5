"""How `kold-span predict` opens its inputs and models: the same for the single-process command and each Ray worker.

`ReadOptions.open` reads an input file (`inputs.iter_inputs` with its bad-row policy) and
`ensemble.load_predictor` loads one model or an ensemble; `outputs.write_predictions` writes what they
give. The command line and every Ray worker go through these, so an output shard holds, byte for
byte, what `kold-span predict` writes for that shard alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Union

from kold_span.data.bad_records import SkipReport
from kold_span.data.example import Example
from kold_span.inference.inputs import bad_rows, iter_inputs, non_empty


@dataclass(frozen=True)
class ReadOptions:
    """How an input file is read: its columns, CSV quoting and bad-row policy (as `iter_inputs` takes them).

    Example:
        >>> ReadOptions(text_column="body").quoting
        'csv'
    """

    text_column: Optional[str] = None
    context_column: Optional[str] = None
    id_column: Optional[str] = None
    quoting: str = "csv"
    skip_bad: bool = False

    def open(self, source: Union[str, Path]) -> tuple[Iterator[Example], SkipReport]:
        """The examples of `source`, read as they are taken, and the report its skipped rows go to.

        The file's name and these options are checked at once (a missing file or an unknown suffix
        raises here, before any model loads or any output is opened); a file of no rows is a
        `DataError` when its end is reached (`non_empty`).

        Example:
            >>> ReadOptions().open("comments.xlsx")
            Traceback (most recent call last):
            ...
            kold_span.errors.DataError: comments.xlsx: unsupported input type '.xlsx'; use .txt, .jsonl, .csv, .tsv or .parquet
        """
        bad = bad_rows(Path(source), skip=self.skip_bad)
        examples = iter_inputs(Path(source), self.text_column, self.context_column, self.id_column, bad=bad,
                               quoting=self.quoting)
        return non_empty(examples, Path(source)), bad.report

