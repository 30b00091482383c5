"""`kold-span pretrain`: a tiny masked-LM run on invented Korean texts, saved and reloaded."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch

from kold_span.cli import main
from kold_span.config.loading import load_pretrain_config
from kold_span.errors import ConfigError
from kold_span.training.pretrain import pretrain

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
    # A range names the override it came from; a check of values together names the file and the override.
    with pytest.raises(ConfigError, match=r"^--set mlm_probability=1\.5: key 'mlm_probability' must be in \(0, 1\)"):
        load_pretrain_config(_write_config(tmp_path), ["mlm_probability=1.5"])
    with pytest.raises(ConfigError, match=r"tiny\.yaml \+ --set max_length=64: max_length must be between 8 and "
                                          r"encoder.max_position \(32\)"):
        load_pretrain_config(_write_config(tmp_path), ["max_length=64"])
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
    from kold_span.config.schema import TextSource
    from kold_span.errors import DataError
    from kold_span.training.pretrain import read_texts

    bom = tmp_path / "bom.txt"
    bom.write_bytes("\ufeff첫 줄\r\n둘째 줄\n".encode("utf-8"))
    assert read_texts([TextSource(file=str(bom))], False) == ["첫 줄", "둘째 줄"]
    latin = tmp_path / "latin.txt"
    latin.write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"texts\[1\]: .*latin.txt:2: not UTF-8 text"):
        read_texts([TextSource(file=str(bom)), TextSource(file=str(latin))], False)
    with pytest.raises(FileNotFoundError, match=r"texts\[0\]: nowhere.json does not exist"):
        read_texts([TextSource(reader="kold", path="nowhere.json")], False)


@pytest.fixture
def keep_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _pretrained(directory: Path, *overrides: str, resume: bool = False):
    """A run of the tiny config without Kiwi (faster) into `directory`/encoder, with `overrides`."""
    directory.mkdir(exist_ok=True)
    config = load_pretrain_config(_write_config(directory), ["encoder.morpheme_pretokenize=false", *overrides])
    return pretrain(config, quiet=True, resume=resume)


@pytest.mark.slow
def test_the_learning_rate_follows_the_shared_warmup_schedule(tmp_path, keep_threads):
    import csv

    _pretrained(tmp_path, "max_steps=4", "warmup_ratio=0.5", "lr=0.01", "log_every_n_steps=1")
    rows = csv.DictReader((tmp_path / "encoder-run" / "logs" / "version_0" / "metrics.csv").open())
    rates = [float(row["lr-AdamW/pg1"]) for row in rows if row["lr-AdamW/pg1"]]
    # 4 steps, 2 of them warm-up: 1/3 and 2/3 of the peak, the peak, then half of it (training.optim.lr_factor).
    assert rates == pytest.approx([0.01 / 3, 0.02 / 3, 0.01, 0.005])


@pytest.mark.slow
def test_gradient_clip_val_bounds_the_updates(tmp_path, keep_threads):
    settings = ["max_steps=2", "warmup_ratio=0", "lr=0.01", "weight_decay=0"]
    # the initial weights, moved by at most 2e-12 (a learning rate must be above 0)
    start = _pretrained(tmp_path / "start", *settings, "lr=1e-12").model.state_dict()
    moved = {}
    for clip in ("null", "1e-12"):
        weights = _pretrained(tmp_path / clip, *settings, f"gradient_clip_val={clip}").model.state_dict()
        moved[clip] = max(float((weights[k] - start[k]).abs().max()) for k in start)
    # AdamW moves a weight by lr * m / (sqrt(v) + 1e-8) a step: about lr when nothing is clipped; with the
    # gradient clipped to a norm of 1e-12, |m| <= 1e-12 and each step moves it at most lr * 1e-4.
    assert moved["null"] > 0.5 * 0.01
    assert 0 < moved["1e-12"] <= 2 * 0.01 * 1e-4


@pytest.mark.slow
def test_a_resumed_run_equals_the_uninterrupted_run(tmp_path, keep_threads, monkeypatch):
    from kold_span.training.pretrain import MaskedLMModule

    # 31 training texts in batches of 16: 2 steps an epoch, last.ckpt after each.
    settings = ["max_steps=null", "epochs=2", "limit_texts=33", "heldout_fraction=0.05", "log_every_n_steps=1"]
    whole = _pretrained(tmp_path / "whole", *settings)

    def stop_in_second_epoch(self):
        if self.current_epoch == 1:
            raise RuntimeError("killed")

    with monkeypatch.context() as patch:
        patch.setattr(MaskedLMModule, "on_train_epoch_start", stop_in_second_epoch, raising=False)
        with pytest.raises(RuntimeError, match="killed"):
            _pretrained(tmp_path / "broken", *settings)
    assert not (tmp_path / "broken" / "encoder").exists()
    resumed = _pretrained(tmp_path / "broken", *settings, resume=True)
    assert resumed.metrics["steps"] == whole.metrics["steps"] == 4
    assert resumed.metrics["train_loss_log"] == whole.metrics["train_loss_log"]
    weights = [result.model.state_dict() for result in (whole, resumed)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    with pytest.raises(FileNotFoundError, match="last.ckpt does not exist"):
        _pretrained(tmp_path / "never", *settings, resume=True)


@pytest.mark.slow
def test_ddp_with_two_cpu_processes(tmp_path):
    """Two gloo processes share the steps; the first saves the encoder."""
    import subprocess
    import sys

    from conftest import ROOT, child_env

    cmd = [sys.executable, "-m", "kold_span.cli", "pretrain", str(_write_config(tmp_path)), "--set", "max_steps=4",
           "accelerator=cpu", "devices=2", "strategy=ddp", "encoder.morpheme_pretokenize=false"]
    proc = subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "encoder" / "pretrain_metrics.json").read_text())["steps"] == 4
    assert proc.stderr.count("step 4/4  loss ") == 1  # said by the first process only
