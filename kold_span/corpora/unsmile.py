"""Korean UnSmile (smilegate-ai): sentences with multi-label target-group hate columns.

The TSV has a `문장` (sentence) column and 0/1 columns 여성/가족, 남성, 성소수자, 인종/국적,
연령, 지역, 종교, 기타 혐오, 악플/욕설, clean, 개인지칭. Double quotes inside sentences are
text, not CSV quoting, so the file is read with quoting off (`csv.QUOTE_NONE`).
"""
from __future__ import annotations

import csv
from pathlib import Path

from kold_span.corpora import register
from kold_span.corpora._common import CsvRecords, bad_field, find_file, reports_skipped
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Example

TEXT_COLUMN = "문장"
GROUP_COLUMNS = ("여성/가족", "남성", "성소수자", "인종/국적", "연령", "지역", "종교", "기타 혐오", "악플/욕설",
                 "clean", "개인지칭")
FILE_NAMES = ("unsmile_train_v1.0.tsv", "unsmile_valid_v1.0.tsv")


@register("unsmile")
@reports_skipped("unsmile")
def read_unsmile(path: Path, *, bad: BadRecords) -> list[Example]:
    """Read an UnSmile TSV file (a directory means its `unsmile_train_v1.0.tsv`).

    Examples have id `<file stem>-<row index>`, no context, and `labels["groups"]`: the names of the columns marked 1,
    in file column order (clean, 악플/욕설 and 개인지칭 included, as they are columns; a row with no 1 gets an empty list).

    Example:
        >>> import tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> row = ["남자들은 다 그래", "0", "1", "0", "0", "0", "0", "0", "0", "1", "0", "0"]
        >>> _ = (Path(folder.name) / "unsmile_train_v1.0.tsv").write_text(
        ...     "\\t".join((TEXT_COLUMN, *GROUP_COLUMNS)) + "\\n" + "\\t".join(row) + "\\n", encoding="utf-8")
        >>> [(ex.id, ex.text, ex.labels) for ex in read_unsmile(folder.name)]
        [('unsmile_train_v1.0-0', '남자들은 다 그래', {'groups': ['남성', '악플/욕설']})]
        >>> folder.cleanup()
    """
    file = find_file(path, FILE_NAMES, "unsmile")
    records = CsvRecords(file, (TEXT_COLUMN, *GROUP_COLUMNS), bad, delimiter="\t", quoting=csv.QUOTE_NONE)
    examples = []
    for index, line, row in records:
        where = f"{file}:{line}"
        with bad.guard():
            examples.append(Example(id=f"{file.stem}-{index}", text=row[TEXT_COLUMN],
                                    labels={"groups": _groups(row, where)}))
    return examples


def _groups(row: dict[str, str], where: str) -> list[str]:
    """The label columns holding 1; each must hold 0 or 1."""
    groups = []
    for column, value in row.items():
        if column == TEXT_COLUMN:
            continue
        if value not in ("0", "1"):
            raise bad_field(where, column, f"expected 0 or 1, got {value!r}")
        if value == "1":
            groups.append(column)
    return groups
