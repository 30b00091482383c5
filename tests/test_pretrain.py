"""`kold-span pretrain`: a tiny masked-LM run on invented Korean texts, saved and reloaded."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch

from kold_span.cli import main
from kold_span.errors import ConfigError
from kold_span.training.pretrain import load_pretrain_config, pretrain

SUBJECTS = ["나는", "너는", "그 사람은", "우리 팀은", "동생은", "선생님은"]
OBJECTS = ["밥을", "책을", "영화를", "기사를", "노래를", "사진을"]
VERBS = ["먹었다", "읽었다", "봤다", "좋아한다", "싫어한다", "찾았다"]
TIMES = ["", "어제 ", "오늘 "]


def _write_texts(directory: Path) -> Path:
    """324 made-up sentences built from a few word lists, one per line."""
    texts = [f"{when}{who} {what} {did}" for when, who, what, did in
             itertools.product(TIMES, SUBJECTS, OBJECTS, VERBS)][::2]
    path = directory / "texts.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


def _write_config(directory: Path, extra: str = "") -> Path:
    text_file = _write_texts(directory)
    config = directory / "tiny.yaml"
    config.write_text(f"""
texts:
  - {{file: {text_file}}}
encoder: {{vocab_size: 300, hidden_size: 32, layers: 1, heads: 2, intermediate_size: 64, max_position: 32,
           morpheme_pretokenize: true}}
max_length: 24
mlm_probability: 0.25
batch_size: 16
lr: 0.003
max_steps: 60
warmup_ratio: 0.1
log_every_n_steps: 10
threads: 1
heldout_fraction: 0.05
output: {directory / "encoder"}
{extra}""", encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pretrain")
    threads = torch.get_num_threads()
    try:
        yield pretrain(load_pretrain_config(_write_config(directory)), quiet=True)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_loss_decreases(trained):
    log = trained.metrics["train_loss_log"]
    assert trained.metrics["steps"] == 60 and len(log) == 6
    assert log[-1][1] < log[0][1] - 0.5, log
    assert trained.metrics["heldout_texts"] == 16
    # The word lists make the masked words guessable from context: better than token frequencies.
    assert trained.metrics["heldout_loss"] < trained.metrics["heldout_unigram_loss"]


@pytest.mark.slow
def test_directory_loads_with_the_same_hidden_states(trained):
    from kold_span.models.backbones import load_pretrained

    tokenizer, encoder = load_pretrained(str(trained.directory))
    assert getattr(tokenizer, "kold_morphemes", False), "the Kiwi pre-tokenizer was not re-attached"
    # The first text has no spaces: only Kiwi splits it, so ids match only with Kiwi re-attached.
    texts = ["어제나는책을읽었다", "그 사람은 사진을 찾았다"]
    assert tokenizer(texts)["input_ids"] == trained.tokenizer(texts)["input_ids"]
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    trained.model.bert.eval()
    encoder.eval()
    with torch.no_grad():
        expected = trained.model.bert(**batch).last_hidden_state
        loaded = encoder(**batch).last_hidden_state
    torch.testing.assert_close(loaded, expected)
    metrics = json.loads((trained.directory / "pretrain_metrics.json").read_text())
    assert metrics["steps"] == 60 and metrics["texts"] == 324


def test_mistyped_key_names_key_and_file(tmp_path):
    config = _write_config(tmp_path, extra="mlm_probabilty: 0.2\n")
    with pytest.raises(ConfigError, match=r"tiny\.yaml.*'mlm_probabilty'"):
        load_pretrain_config(config)
    with pytest.raises(ConfigError, match=r"--set encoder\.layer=2.*'encoder\.layer'"):
        load_pretrain_config(_write_config(tmp_path), ["encoder.layer=2"])
    with pytest.raises(ConfigError, match=r"texts\[0\].*exactly one"):
        load_pretrain_config(_write_config(tmp_path), ["texts=[{file: a.txt, beep_unlabeled: b}]"])
    # A value check names the file and the override it was merged from, as an experiment config's does.
    with pytest.raises(ConfigError, match=r"tiny\.yaml \+ --set mlm_probability=1\.5: mlm_probability must be"):
        load_pretrain_config(_write_config(tmp_path), ["mlm_probability=1.5"])
    with pytest.raises(ConfigError, match=r"tiny\.yaml: unknown key 'defaults'"):  # one file, no parts
        load_pretrain_config(_write_config(tmp_path, extra="defaults: {model: scratch_tiny}\n"))


@pytest.mark.slow
def test_cli_arguments_and_overrides(tmp_path, capsys):
    assert main(["pretrain", str(_write_config(tmp_path)), "--set", "max_steps=3",
                 "encoder.morpheme_pretokenize=false", "log_every_n_steps=1"]) == 0
    out = tmp_path / "encoder"
    assert json.loads((out / "pretrain_metrics.json").read_text())["steps"] == 3
    assert not (out / "kold_span_tokenizer.json").exists()
    captured = capsys.readouterr()  # progress is logged to stderr; nothing goes to stdout
    assert "step 3/3  loss " in captured.err and f"encoder saved to {out}" in captured.err
    assert captured.out == ""


def test_read_texts_names_the_source_drops_a_bom_and_refuses_other_encodings(tmp_path):
    from kold_span.errors import DataError
    from kold_span.training.pretrain import TextSource, read_texts

    bom = tmp_path / "bom.txt"
    bom.write_bytes("\ufeff첫 줄\r\n둘째 줄\n".encode("utf-8"))
    assert read_texts([TextSource(file=str(bom))], False) == ["첫 줄", "둘째 줄"]
    latin = tmp_path / "latin.txt"
    latin.write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"texts\[1\]: .*latin.txt:2: not UTF-8 text"):
        read_texts([TextSource(file=str(bom)), TextSource(file=str(latin))], False)
    with pytest.raises(FileNotFoundError, match=r"texts\[0\]: nowhere.json does not exist"):
        read_texts([TextSource(reader="kold", path="nowhere.json")], False)
