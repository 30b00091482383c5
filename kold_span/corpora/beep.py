"""BEEP! Korean hate speech (kocohub/korean-hate-speech): comments with their news titles.

Files: `train.tsv` (comments, contain_gender_bias, bias, hate) and `train.news_title.txt`,
whose line i is the title of the news article under comment i (the context). The unlabeled
part is `unlabeled_comments_5.txt` with `unlabeled_comments.news_title_5.txt`, line-aligned
the same way.

Titles are CSV-quoted one per line: a title holding a comma or a double quote is wrapped
in one pair of double quotes, with its inner quotes doubled; the reader undoes exactly
that (`"a ""b"", c"` → `a "b", c`) and leaves other lines as they are; an empty title line
(three in train) means no context (None). Comments in the unlabeled file are not quoted and
are taken verbatim.
"""
from __future__ import annotations

from pathlib import Path

from kold_span.corpora import register
from kold_span.corpora._common import CsvRecords, bad_field, find_file, parse_bool, reports_skipped
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Example
from kold_span.data.jsonl import utf8_lines
from kold_span.errors import DataError

HATE = ("hate", "offensive", "none")
BIAS = ("gender", "others", "none")
UNLABELED_COMMENTS = "unlabeled_comments_5.txt"
UNLABELED_TITLES = "unlabeled_comments.news_title_5.txt"


@register("beep")
@reports_skipped("beep")
def read_beep(path: Path, *, bad: BadRecords, unlabeled: bool = False) -> list[Example]:
    """Read BEEP! comments with their news titles as context.

    `path` is a `<split>.tsv` file (its titles are `<split>.news_title.txt` beside it) or the corpus directory
    (then `train.tsv`, or with `unlabeled` the examples without labels of `unlabeled_comments_5.txt`, ids
    `beep-unlabeled-<line index>`). Examples have id `beep-<split>-<row index>`, the title as `context` and labels
    `hate` ("hate"/"offensive"/"none"), `bias` ("gender"/"others"/"none") and `contain_gender_bias` (bool). A bad
    row (file, line and field named), or a titles file whose number of lines differs from the number of comments
    (always, even with skip_bad), is a `DataError`.
    """
    if unlabeled:
        return _read_unlabeled(path)
    file = find_file(path, ["train.tsv"], "beep")
    titles_file = file.with_name(f"{file.stem}.news_title.txt")
    titles = _read_lines(titles_file)
    records = CsvRecords(file, ("comments", "contain_gender_bias", "bias", "hate"), bad, delimiter="\t")
    examples = []
    for index, line, row in records:
        if index >= len(titles):
            break
        where = f"{file}:{line}"
        with bad.guard():
            examples.append(Example(
                id=f"beep-{file.stem}-{index}", text=row["comments"],
                context=unquote_title(titles[index]) or None,
                labels={"hate": _one_of(row["hate"], HATE, where, "hate"),
                        "bias": _one_of(row["bias"], BIAS, where, "bias"),
                        "contain_gender_bias": parse_bool(row["contain_gender_bias"],
                                                          "contain_gender_bias", where)}))
    if records.count != len(titles):
        more = "at least " if records.count > len(titles) else ""
        raise DataError(f"{titles_file}: {len(titles)} title lines but {file} has {more}{records.count} "
                        f"comments; the two files must be line-aligned")
    return examples


def read_unlabeled_texts(path: Path) -> list[str]:
    """The unlabeled BEEP! comments (for tokenizer training or MLM pretraining)."""
    return [ex.text for ex in read_beep(path, unlabeled=True)]


def _read_unlabeled(path: Path) -> list[Example]:
    """Unlabeled comments with their titles; the two files must have the same number of lines."""
    file = find_file(path, [UNLABELED_COMMENTS], "beep")
    titles_file = file.with_name(UNLABELED_TITLES)
    comments, titles = _read_lines(file), _read_lines(titles_file)
    if len(comments) != len(titles):
        raise DataError(f"{titles_file}: {len(titles)} title lines but {file} has {len(comments)} comment "
                        f"lines; the two files must be line-aligned")
    return [Example(id=f"beep-unlabeled-{i}", text=comment, context=unquote_title(title) or None)
            for i, (comment, title) in enumerate(zip(comments, titles))]


def _read_lines(file: Path) -> list[str]:
    """The lines of a UTF-8 text file without their line ends (a final newline adds no line)."""
    if not file.is_file():
        raise FileNotFoundError(f"beep: line-aligned file {file} not found")
    # Only "\n" ends a line (str.splitlines would also split at U+2028 and friends inside a comment); read a line
    # at a time, each bounded: the unlabeled comments are two million lines.
    with file.open("rb") as f:
        lines = [line[:-1] if line.endswith("\n") else line for line in utf8_lines(f, file)]
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def unquote_title(line: str) -> str:
    """Undo the CSV quoting of one title line: strip one pair of surrounding quotes, un-double inner ones.

    >>> unquote_title('"a ""b"", c"')
    'a "b", c'
    >>> unquote_title("no quotes")
    'no quotes'
    """
    return line[1:-1].replace('""', '"') if len(line) >= 2 and line[0] == line[-1] == '"' else line


def _one_of(value: str, allowed: tuple[str, ...], where: str, field_name: str) -> str:
    """`value` when it is one of `allowed`, else a `DataError` naming the field."""
    if value not in allowed:
        raise bad_field(where, field_name, f"expected one of {list(allowed)}, got {value!r}")
    return value
