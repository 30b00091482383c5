"""Prediction inputs and the HTML rendering."""
import re
from html.parser import HTMLParser

import pytest

from kold_span.data.example import Example
from kold_span.errors import DataError
from kold_span.inference.html import (PALETTE, HtmlWriter, html_page, render_prediction_html, span_colours,
                                     span_lanes)
from kold_span.inference.inputs import bad_rows, iter_inputs


class TextBlocks(HTMLParser):
    """The character data of every `ks-text` block of a page, as a parser (not a browser) reads it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.depth = 0  # open elements inside the current block (0: outside any)

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += 1
        elif ("class", "ks-text") in attrs:
            self.depth = 1
            self.blocks.append("")

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.blocks[-1] += data


def text_blocks(markup: str) -> list[str]:
    parser = TextBlocks()
    parser.feed(markup)
    return parser.blocks


def span(kind, start, end, score=0.9):
    return {"type": kind, "start": start, "end": end, "score": score}


TRICKY = [
    ("먹다가 의원은 진짜 바보냐", [span("OFF", 8, 13), span("TGT", 4, 7)]),  # spans cut inside eojeol
    ("treasonous traitor, racist , bigot,", [span("OFF", 7, 18), span("OFF", 20, 26), span("TGT", 20, 35)]),
    ("  two  spaces\tand a tab\nnew line\r\nCRLF  ", [span("OFF", 2, 13), span("OFF", 5, 9)]),
    ("<b>bold</b> & &amp; \"quoted\" 'single'", [span("OFF", 0, 11)]),
    ("emoji 👍🏽 and cafe\u0301", [span("OFF", 6, 8), span("TGT", 13, 18)]),
]


@pytest.mark.parametrize("text, spans", TRICKY)
def test_rendered_text_block_holds_exactly_the_text(text, spans):
    fragment = render_prediction_html(text, {"labels": {}, "spans": spans})
    assert text_blocks(fragment) == [text]


def test_badges_and_bars_are_not_text_and_each_span_gets_one_badge():
    text = "treasonous traitor, racist , bigot,"
    spans = [span("OFF", 7, 18, 0.81), span("OFF", 20, 26, 0.66), span("TGT", 20, 35, 0.5)]
    fragment = render_prediction_html(text, {"labels": {}, "spans": spans}, span_colours(["OFF", "TGT"]))
    assert re.findall(r'data-tag="([^"]*)"', fragment) == ["OFF 0.81", "OFF 0.66", "TGT 0.50"]
    assert span_colours(["OFF", "TGT"]) == {"OFF": PALETTE[0], "TGT": PALETTE[1]}  # distinct colours
    # "racist" is under both: the longer TGT span took lane 0 (bar 1-4 px under the text), OFF lane 1 (5-8 px).
    assert (f'0 1px 0 0 var(--ks-bg),0 4px 0 0 {PALETTE[1]},0 5px 0 0 var(--ks-bg),0 8px 0 0 {PALETTE[0]}" '
            f'title="TGT 0.50 · OFF 0.66">racist</span>') in fragment


def test_a_bar_keeps_its_depth_where_the_lanes_above_it_are_empty():
    fragment = render_prediction_html("abcdefghijklmnop", {"labels": {}, "spans": [span("A", 0, 10), span("B", 5, 15)]},
                                      {"A": "red", "B": "blue"})
    # 10-15 is B alone, on lane 1: lane 0 is painted in the page colour.
    assert ('0 1px 0 0 var(--ks-bg),0 4px 0 0 var(--ks-bg),0 5px 0 0 var(--ks-bg),0 8px 0 0 blue" '
            'title="B 0.90">klmno</span>') in fragment


def test_span_lanes_keep_overlapping_spans_apart():
    spans = [span("A", 0, 10), span("B", 2, 4), span("C", 4, 6), span("D", 3, 12), span("E", 10, 11)]
    # A lane 0; B overlaps A → 1; D (3-12) overlaps A and B → 2; C (4-6) overlaps A, D, and B ended at 4 → 1;
    # E (10-11) starts where A ends → 0.
    assert span_lanes(spans) == [0, 1, 1, 2, 0]


def test_a_long_text_is_cut_only_at_span_edges():
    text = "가나다 " * 25_000  # 100,000 characters
    spans = [span("OFF", 4, 7), span("TGT", 50_000, 50_010), span("OFF", 50_005, 60_000)]
    fragment = render_prediction_html(text, {"labels": {}, "spans": spans})
    assert fragment.count("<span") == 4 + 3  # pieces under a span (4-7, and three between 50,000 and 60,000), badges
    assert text_blocks(fragment) == [text]


def test_labels_show_their_probabilities():
    labels = {"OFF": {"label": True, "probs": {"false": 0.07, "true": 0.93}},
              "GRP": {"label": "gender", "probs": {"gender": 0.61, "race": 0.39}},
              "TGT_kind": {"label": ["group", "individual"], "probs": {"group": 0.8, "individual": 0.55, "none": 0.1}},
              "empty": {"label": [], "probs": {"a": 0.2}}}
    fragment = render_prediction_html("x", {"labels": labels, "spans": []})
    values = re.findall(r'<span class="ks-value">([^<]*)</span>(?: <span class="ks-prob">([^<]*)</span>)?', fragment)
    assert values == [("true", "0.93"), ("gender", "0.61"), ("group", "0.80"), ("individual", "0.55"), ("none", "")]
    assert 'title="true 0.930 · false 0.070"' in fragment


def test_a_span_outside_the_text_is_an_error():
    with pytest.raises(DataError, match=r"span 'OFF' \[3, 9\) is not inside the text \(length 5\)"):
        render_prediction_html("hello", {"labels": {}, "spans": [span("OFF", 3, 9)]})


def test_html_writer_streams_rows_with_id_context_and_legend(tmp_path):
    path = tmp_path / "p.html"
    with path.open("w", encoding="utf-8") as f:
        writer = HtmlWriter(f, span_types=["OFF", "TGT"])
        writer.add(Example(id="7", text="좋은 기사 감사합니다"), {"labels": {}, "spans": []})
        writer.add(Example(id="8", text="너 진짜 바보냐", context="제목"),
                   {"labels": {"OFF": {"label": True, "probs": {"true": 0.9, "false": 0.1}}},
                    "spans": [span("OFF", 5, 7), span("GRP", 2, 4)]})
        f.flush()
        partial = path.read_text(encoding="utf-8")
        assert partial.count('class="ks-row"') == 2 and "</html>" not in partial  # written as they come
        writer.add(Example(id="9", text="네 그렇군요", context=["A: 첫 <말>", "B: 둘째 말"]), {"labels": {}, "spans": []})
        writer.finish()
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert text_blocks(page) == ["좋은 기사 감사합니다", "너 진짜 바보냐", "네 그렇군요"]
    assert '#9 <span class="ks-context">A: 첫 &lt;말&gt;<br>B: 둘째 말</span>' in page  # one line a turn, escaped
    legend = page.split('<div class="ks-legend">', 1)[1].split("</div>", 1)[0]
    assert re.findall(r'--ks-c:(#\w+)">(\w+)<', legend) == [(PALETTE[0], "OFF"), (PALETTE[1], "TGT")]
    assert f'Span types the model did not declare: <span class="ks-key" style="--ks-c:{PALETTE[2]}">GRP</span>' in page
    assert "<script" not in page and "http" not in page.split("</head>")[0].replace("http-equiv", "")
    assert page.rstrip().endswith("</html>")


def test_an_html_page_is_created_with_its_directory_and_kept_whole_on_error(tmp_path):
    path = tmp_path / "new" / "dir" / "p.html"
    with html_page(path) as writer:
        writer.add(Example(id="1", text="좋은 기사"), {"labels": {}, "spans": []})
    before = path.read_text(encoding="utf-8")
    with pytest.raises(DataError):
        with html_page(path) as writer:
            writer.add(Example(id="2", text="새 기사"), {"labels": {}, "spans": []})
            raise DataError("in.jsonl:2: invalid JSON")
    assert path.read_text(encoding="utf-8") == before and "#1 " in before
    assert sorted(p.name for p in path.parent.iterdir()) == ["p.html"]


def test_csv_with_custom_columns(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("key,body,headline\nk1,바보,제목\n", encoding="utf-8")
    [ex] = iter_inputs(path, text_column="body", context_column="headline", id_column="key")
    assert (ex.id, ex.text, ex.context) == ("k1", "바보", "제목")
    with pytest.raises(DataError, match=r"x.csv:1: column 'comment' not found"):
        list(iter_inputs(path, text_column="comment"))


def test_missing_text_column_is_named_at_the_header_even_when_skipping(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("\nid\tbody\n1\t바보\n2\t좋은 기사\n", encoding="utf-8")  # the header on line 2
    for skip in (False, True):
        bad = bad_rows(path, skip=skip)
        with pytest.raises(DataError, match=r"x.tsv:2: no text column; expected one of \['comment', 'text'\]"):
            list(iter_inputs(path, bad=bad))
        assert bad.report.count == 0  # no row was skipped: the file was refused
    with pytest.raises(DataError, match=r"x.tsv:2: column 'guid' not found; columns are \['body', 'id'\]"):
        list(iter_inputs(path, text_column="body", id_column="guid"))


def test_a_jsonl_file_whose_every_row_is_bad_is_an_error_even_when_skipping(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"body": "바보"}\n{"body": "좋은 기사"}\n', encoding="utf-8")
    bad = bad_rows(path, skip=True)
    with pytest.raises(DataError) as caught:
        list(iter_inputs(path, bad=bad))
    assert str(caught.value).startswith(f"{path}: every row was bad (2 skipped), nothing to predict; "
                                        f"the first: {path}:1: no text column")
    path.write_text("", encoding="utf-8")
    assert list(iter_inputs(path, bad=bad_rows(path, skip=True))) == []  # no rows at all: nothing to say


def test_an_empty_text_is_a_text_as_in_the_python_api(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text('id,comment\n1,""\n2,\n3, \n', encoding="utf-8")
    assert [(ex.id, ex.text) for ex in iter_inputs(path)] == [("1", ""), ("2", ""), ("3", " ")]


def test_invalid_json_names_the_column_where_the_line_ends(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b"\n{"text": x}\n', encoding="utf-8")
    bad = bad_rows(path, skip=True)
    assert [ex.text for ex in iter_inputs(path, bad=bad)] == ["a"]
    assert bad.report.reasons == [f"{path}:2: invalid JSON (Expecting ',' delimiter at column 13, the end of the line)",
                                  f"{path}:3: invalid JSON (Expecting value at column 10)"]


@pytest.mark.parametrize("row, fragment", [
    ('{"text": "a\\ud800"}', r"invalid JSON \(a string holds a lone surrogate \(U\+D800\) at character 1"),
    ('{"text": null}', r"field 'text': expected a string, got None"),
    ('{"text": 3}', r"field 'text': expected a string, got int"),
    ('{"text": "a", "context": ["t", 5]}', r"field 'context' .*turn 1: expected a string, got int"),
    ('{"text": "a", "id": "\\udfff"}', r"invalid JSON \(a string holds a lone surrogate \(U\+DFFF\)"),
])
def test_a_value_that_is_no_unicode_text_is_a_bad_row(tmp_path, row, fragment):
    path = tmp_path / "s.jsonl"
    path.write_text('{"text": "ok"}\n' + row + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"s.jsonl:2: {fragment}"):
        list(iter_inputs(path))


def test_unsupported_suffix(tmp_path):
    with pytest.raises(DataError, match="unsupported input type"):
        list(iter_inputs(tmp_path / "x.xml"))


def test_a_quote_inside_a_field_is_an_error_unless_quoting_is_off(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text('id\tcomment\n1\t"진짜" 쓰레기네\n2\t"따옴표 ""안"" 글"\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"q.tsv:2: "):
        list(iter_inputs(path))
    raw = list(iter_inputs(path, quoting="none"))
    assert [ex.text for ex in raw] == ['"진짜" 쓰레기네', '"따옴표 ""안"" 글"']
    path.write_text('id\tcomment\n2\t"따옴표 ""안"" 글"\n', encoding="utf-8")
    assert [ex.text for ex in iter_inputs(path)] == ['따옴표 "안" 글']  # CSV quoting, as pandas writes it


def test_a_row_with_more_or_fewer_fields_than_the_header_is_an_error(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("id,comment\n1,이런 기사 쓰는 기자, 정말 쓰레기다\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"c.csv:2: 3 fields, the header has 2"):
        list(iter_inputs(path))
    path.write_text("id,comment,title\n1,짧은 댓글\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"c.csv:2: 2 fields, the header has 3"):
        list(iter_inputs(path))


def test_a_byte_order_mark_is_not_part_of_the_first_column_or_comment(tmp_path):
    csv_path, txt_path = tmp_path / "bom.csv", tmp_path / "bom.txt"
    csv_path.write_bytes("\ufeffcomment,title\n첫 댓글,제목\n".encode("utf-8"))
    txt_path.write_bytes("\ufeff첫 댓글\n".encode("utf-8"))
    assert [ex.text for ex in iter_inputs(csv_path)] == ["첫 댓글"]
    assert [ex.text for ex in iter_inputs(txt_path)] == ["첫 댓글"]


@pytest.mark.parametrize("name, content, fragment", [
    # An unbalanced quote once swallowed every later line into one comment, silently.
    ("q.tsv", 'id\tcomment\n1\t"바보 같은 소리\n2\t좋은 기사\n3\t멋진 말\n'.encode("utf-8"),
     r"q.tsv:2: .*quot.*--quoting none"),
    ("latin.csv", "comment\nok\ncaf\xe9\n".encode("latin-1"), r"latin.csv:3: not UTF-8 text \(byte 4 of the line\)"),
    ("c.jsonl", b'{"id": "e", "text": "ok", "context": [1, 2]}\n',
     r"c.jsonl:1: field 'context' must be a string or a list of strings: turn 0: expected a string, got int"),
])
def test_bad_input_names_the_file_line_and_problem(tmp_path, name, content, fragment):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=fragment):
        list(iter_inputs(path))


def test_two_bad_rows_skipped_are_reported_once_each_with_file_and_line(tmp_path, capsys):
    path = tmp_path / "two_bad.jsonl"
    path.write_text('{"comment": "좋은 기사"}\n{"title": "no comment"}\n{"comment": "바보"}\nnot json\n',
                    encoding="utf-8")
    bad = bad_rows(path, skip=True)
    assert [ex.text for ex in iter_inputs(path, bad=bad)] == ["좋은 기사", "바보"]
    assert bad.report.count == 2
    assert bad.report.reasons[0].startswith(f"{path}:2: no text column")
    assert bad.report.reasons[1].startswith(f"{path}:4: invalid JSON")
    assert capsys.readouterr().err == ""  # the report is the one place they are listed: nothing printed
    summary = bad.report.summary(limit=None)
    assert summary.splitlines()[0] == f"predict: skipped 2 bad record(s) in {path}:"
    assert summary.count(f"{path}:2:") == 1 and summary.count(f"{path}:4:") == 1


def test_without_skipping_the_first_bad_row_is_an_error_naming_file_line_and_how_to_skip(tmp_path):
    path = tmp_path / "two_bad.csv"
    path.write_text("id,comment\n1,좋은 기사\n2\n3,a,b\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"two_bad.csv:3: 1 fields, the header has 2 \(id, comment\) \(--skip-bad"):
        list(iter_inputs(path))
    bad = bad_rows(path)
    with pytest.raises(DataError, match=r"two_bad.csv:3: "):
        list(iter_inputs(path, bad=bad))
    assert bad.report.count == 0


def write_parquet(path, columns):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


def test_parquet_input_has_the_same_columns_as_the_other_types(tmp_path):
    path = write_parquet(tmp_path / "in.parquet", {
        "guid": ["g1", None], "title": ["국회 소식", None], "comment": ["좋은 기사", "바보"],
        "turns": [["A: 안녕", "B: 네"], []]})
    assert [(ex.id, ex.context, ex.text) for ex in iter_inputs(path)] == [("g1", "국회 소식", "좋은 기사"),
                                                                         ("2", None, "바보")]
    [first, _] = iter_inputs(path, context_column="turns")
    assert first.context == ["A: 안녕", "B: 네"]
    numbered = write_parquet(tmp_path / "n.parquet", {"id": [7, 8], "text": ["하나", "둘"]})
    assert [ex.id for ex in iter_inputs(numbered)] == ["7", "8"]


def test_a_bad_parquet_row_is_named_by_its_row_and_can_be_skipped(tmp_path):
    path = write_parquet(tmp_path / "bad.parquet", {"comment": ["좋은 기사", None, "바보", ""]})
    with pytest.raises(DataError, match=r"bad.parquet:2: field 'comment': expected a string, got None \(--skip-bad"):
        list(iter_inputs(path))
    bad = bad_rows(path, skip=True)
    assert [ex.text for ex in iter_inputs(path, bad=bad)] == ["좋은 기사", "바보", ""]
    assert [r.split(": ")[0] for r in bad.report.reasons] == [f"{path}:2"]
    with pytest.raises(DataError, match=r"bad.parquet: no text column"):
        iter_inputs(write_parquet(path, {"body": ["x"]}), bad=bad_rows(path, skip=True)).__next__()


def test_a_file_that_is_not_parquet_is_named(tmp_path):
    path = tmp_path / "fake.parquet"
    path.write_text("comment\n좋은 기사\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"fake.parquet: not a readable Parquet file"):
        list(iter_inputs(path))
