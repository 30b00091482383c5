"""Prediction inputs and the HTML rendering."""
import pytest

from kold_span.data import DataError, Example
from kold_span.predict_io import HtmlWriter, doc_words, iter_inputs


def test_doc_words_cut_at_spaces_and_span_edges():
    words, spaces, starts = doc_words("너 진짜 바보냐", {5, 7})
    assert words == ["너", "진짜", "바보", "냐"]
    assert spaces == [True, True, False, False]
    assert starts == [0, 2, 5, 7]
    assert "".join(w + (" " if s else "") for w, s in zip(words, spaces)) == "너 진짜 바보냐"


def test_html_marks_spans_with_type_and_score(tmp_path):
    writer = HtmlWriter(tmp_path / "p.html")
    writer.add(Example(id="7", text="좋은 기사 감사합니다"), {"labels": {}, "spans": []})
    writer.add(Example(id="8", text="너 진짜 바보냐", context="제목"),
               {"labels": {"OFF": {"label": True}}, "spans": [{"type": "OFF", "start": 5, "end": 7, "score": 0.9}]})
    writer.close()
    html = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert "좋은 기사 감사합니다" in html
    assert "OFF 0.90" in html and "OFF: True" in html and "제목" in html
    assert html.rstrip().endswith("</html>")


def test_csv_with_custom_columns(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("key,body,headline\nk1,바보,제목\n", encoding="utf-8")
    [ex] = iter_inputs(path, text_column="body", context_column="headline", id_column="key")
    assert (ex.id, ex.text, ex.context) == ("k1", "바보", "제목")
    with pytest.raises(DataError, match=r"x.csv:2: column 'comment' not found"):
        list(iter_inputs(path, text_column="comment"))


def test_missing_text_column_is_named(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("id\tbody\n1\t바보\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"x.tsv:2: no text column; expected one of \['comment', 'text'\]"):
        list(iter_inputs(path))


def test_unsupported_suffix(tmp_path):
    with pytest.raises(DataError, match="unsupported input type"):
        list(iter_inputs(tmp_path / "x.xml"))
