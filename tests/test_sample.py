"""The committed sample and fixtures are what their seeded generators write, byte for byte; the word files' format."""
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, SAMPLE

sys.path.insert(0, str(SAMPLE))
from make_sample import by_topic, word_list, word_table  # noqa: E402

GENERATORS = {"sample": (SAMPLE / "make_sample.py", ["comments.txt", "kold_sample.json"]),
              "fixtures": (FIXTURES / "make_fixtures.py", ["kold_bad.json", "kold_small.json"])}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_regenerating_into_another_folder_gives_the_committed_bytes(name, tmp_path):
    script, files = GENERATORS[name]
    out = tmp_path / "out"
    # Another working directory and no bytecode left beside the scripts; a fresh hash seed per run.
    proc = subprocess.run([sys.executable, str(script), str(out)], cwd=tmp_path, capture_output=True, encoding="utf-8",
                          timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == files
    for file in files:
        committed = script.parent / file
        assert (out / file).read_bytes() == committed.read_bytes(), (
            f"{committed} is not what {script.name} writes: run `python3 {script}` and commit the result")


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_word_files_skip_comments_and_blank_lines_and_keep_order_and_repeats(tmp_path):
    write(tmp_path / "frames.txt", "# a comment\n{n} 좋네요\n\n{n} 좋네요\n{n} 기사 잘 봤습니다\n")
    assert word_list("frames", tmp_path) == ["{n} 좋네요", "{n} 좋네요", "{n} 기사 잘 봤습니다"]
    write(tmp_path / "nouns.tsv", "# topic, noun\nsports\t개막전\nweather\t첫눈\nsports\t결승전\n")
    assert word_table("nouns", ("topic", "noun"), tmp_path) == [("sports", "개막전"), ("weather", "첫눈"),
                                                                ("sports", "결승전")]
    assert by_topic("nouns", tmp_path) == {"sports": ["개막전", "결승전"], "weather": ["첫눈"]}


@pytest.mark.parametrize("text, message", [
    ("좋네요\n진짜 멋있다 \n", r"words\.txt:2: the entry '진짜 멋있다 ' starts or ends with white space"),
    ("# a tab-separated line in a .txt\n\t좋네요\n", r"words\.txt:2: the entry '\\t좋네요' starts or ends with white space"),
])
def test_an_entry_with_white_space_around_it_names_file_and_line(tmp_path, text, message):
    write(tmp_path / "words.txt", text)
    with pytest.raises(ValueError, match=message):
        word_list("words", tmp_path)


@pytest.mark.parametrize("row, message", [
    ("politics\tnaver_news", r"titles\.tsv:3: expected 3 tab-separated fields \(topic, source, title\), got 2"),
    ("politics\t\t국회 소식", r"titles\.tsv:3: field source is '': empty, or white space around it"),
    ("politics\tyoutube\t 국회 소식", r"titles\.tsv:3: field title is ' 국회 소식': empty, or white space around it"),
])
def test_a_bad_table_row_names_file_line_and_field(tmp_path, row, message):
    write(tmp_path / "titles.tsv", f"# topic, source, title\nsports\tyoutube\t개막전 하이라이트\n{row}\n")
    with pytest.raises(ValueError, match=message):
        word_table("titles", ("topic", "source", "title"), tmp_path)
