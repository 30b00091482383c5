"""The one registry type (config.registry): names, lazy modules, and entry points a separate package installs."""
import base64
import hashlib
import json
import subprocess
import sys
import zipfile

import pytest

from kold_span import corpora
from kold_span.cli.main import COMMANDS, main
from kold_span.config.registry import Registry
from kold_span.errors import ArgumentError
from kold_span.models.kinds import KINDS
from kold_span.text.normalize import NORMALIZERS, STEPS

PLUGIN = '''"""A corpus reader and a command from outside kold-span."""
from kold_span.data.example import Example


def read_tab_lines(path, *, label_name: str = "OFF"):
    """Lines of `text<TAB>0|1` as examples."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Example(id=str(i), text=text, labels={label_name: flag == "1"})
            for i, (text, flag) in enumerate(line.split("\\t") for line in lines)]


def add_parser(subparsers):
    return subparsers.add_parser("tab-count", help="count the lines of a file")


def run(args):
    print("tab-count ran")
    return 0
'''
ENTRY_POINTS = "[kold_span.corpora]\ntab_lines = tab_plugin:read_tab_lines\n\n" \
               "[kold_span.commands]\ntab-count = tab_plugin\n"


def _record(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def plugin_wheel(folder):
    """A wheel of the package `tab-plugin`: one module and its entry points, as a build backend would write it."""
    info = "tab_plugin-0.1.dist-info"
    files = {"tab_plugin.py": PLUGIN.encode(),
             f"{info}/METADATA": b"Metadata-Version: 2.1\nName: tab-plugin\nVersion: 0.1\n",
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{info}/entry_points.txt": ENTRY_POINTS.encode()}
    path = folder / "tab_plugin-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", "".join(_record(n, d) for n, d in files.items()) + f"{info}/RECORD,,\n")
    return path


def test_a_registry_keeps_order_loads_modules_lazily_and_names_the_known():
    steps = Registry("step", "steps", modules={"json": "json"})
    steps.add("b", 2)
    steps.add("a", 1)
    assert list(steps) == ["b", "a", "json"] and "json" in steps and "c" not in steps
    with pytest.raises(ArgumentError, match=r"^unknown step 'c'; known steps: a, b, json$"):
        steps.get("c")
    with pytest.raises(ArgumentError, match="unknown step 'json'"):  # the module imported, but it registers nothing
        steps.get("json")


def test_kinds_and_steps_are_registries_in_their_order():
    assert list(KINDS) == ["sequence", "span"]
    assert STEPS == ("nfc", "width", "invisible", "confusables", "letters", "elongation", "leet", "keyboard", "jamo",
                     "separators", "masks", "spaced")
    assert sorted(NORMALIZERS) == sorted(STEPS)


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """`pip install --target` of the plug-in's wheel into a temporary folder, put on sys.path for this test."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(target), str(plugin_wheel(tmp_path))], check=True)
    monkeypatch.syspath_prepend(str(target))
    monkeypatch.setattr(corpora.READERS, "_entries", dict(corpora.READERS._entries))
    monkeypatch.setattr(COMMANDS, "_entries", dict(COMMANDS._entries))
    yield target
    sys.modules.pop("tab_plugin", None)


def test_without_the_plugin_its_reader_is_unknown():
    assert "tab_lines" not in corpora.available()
    with pytest.raises(ArgumentError, match="unknown corpus reader 'tab_lines'; known readers: beep, "):
        corpora.read("tab_lines", "x.tsv")


def test_an_installed_package_adds_a_reader_and_a_command(installed_plugin, tmp_path, capsys):
    source = tmp_path / "comments.tsv"
    source.write_text("좋은 기사\t0\n꺼져라\t1\n", encoding="utf-8")
    assert "tab_lines" in corpora.available()
    examples = corpora.read("tab_lines", source, label_name="TOX")  # its options checked like a built-in's
    assert [(e.text, e.labels) for e in examples] == [("좋은 기사", {"TOX": False}), ("꺼져라", {"TOX": True})]
    out = tmp_path / "out.jsonl"
    assert main(["convert", "tab_lines", str(source), str(out)]) == 0
    assert [json.loads(line)["labels"] for line in out.read_text(encoding="utf-8").splitlines()] == [
        {"OFF": False}, {"OFF": True}]
    assert main(["tab-count"]) == 0
    assert "tab-count ran" in capsys.readouterr().out
    with pytest.raises(ArgumentError, match="reader 'tab_lines' has no option 'labels'"):
        corpora.read("tab_lines", source, labels="x")
