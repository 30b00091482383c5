"""End to end: train a tiny joint model, export it, load it, predict, evaluate (CLI too)."""
import csv
import json
import subprocess
import sys

import pytest

from kold_span import corpora
from kold_span.cli import main
from kold_span.config.loading import load_config
from kold_span.inference.predictor import Predictor
from kold_span.training.evaluators import evaluate_predictor
from kold_span.training.run import train

from conftest import FIXTURE, ROOT, TINY, child_env


def tiny_config(tmp_path, *overrides):
    return load_config(TINY, [f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r", *overrides])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The overfit run: 16 fixture examples, both heads (shared by the tests below)."""
    out = tmp_path_factory.mktemp("tiny")
    config = tiny_config(out, "data.limit=16")
    result = train(config, quiet=True)
    return config, result


@pytest.mark.slow
def test_overfit_both_heads_learn(trained):
    config, result = trained
    predictor = Predictor.from_pretrained(result.model_dir)
    examples = corpora.read("kold", FIXTURE)[:16]
    scores = evaluate_predictor(predictor, examples)
    assert scores["OFF/accuracy"] == 1.0
    assert scores["OFF_span/char_f1"] >= 0.9, scores


@pytest.mark.slow
def test_run_directory_holds_model_metrics_and_logs(trained):
    _, result = trained
    run = result.run_dir
    assert (run / "model" / "model.safetensors").exists()
    assert (run / "model" / "config.json").exists()
    assert (run / "checkpoints" / "last.ckpt").exists()
    assert (run / "logs" / "version_0" / "metrics.csv").exists()
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["sizes"]["train"] == 16


@pytest.mark.slow
def test_save_load_predict_is_identical(trained, tmp_path):
    _, result = trained
    first = Predictor.from_pretrained(result.model_dir)
    texts = [ex.text for ex in corpora.read("kold", FIXTURE)]
    before = first.predict(texts, batch_size=4)
    first.save_pretrained(tmp_path / "again")
    again = Predictor.from_pretrained(tmp_path / "again")
    assert again.predict(texts, batch_size=4) == before


@pytest.mark.slow
def test_batch_size_changes_only_float_noise(trained):
    # Padding to another length changes the last digit of a probability now and
    # then (CI saw 0.992844 vs 0.992843), so the check is: same labels and spans,
    # probabilities within 1e-4.
    _, result = trained
    predictor = Predictor.from_pretrained(result.model_dir)
    texts = [ex.text for ex in corpora.read("kold", FIXTURE)]
    by4 = predictor.predict(texts, batch_size=4)
    by7 = predictor.predict(texts, batch_size=7)
    for a, b in zip(by4, by7, strict=True):
        assert [(s["start"], s["end"], s["type"]) for s in a["spans"]] == \
            [(s["start"], s["end"], s["type"]) for s in b["spans"]]
        for task, out in a["labels"].items():
            assert out["label"] == b["labels"][task]["label"]
            for label, p in out["probs"].items():
                assert abs(p - b["labels"][task]["probs"][label]) < 1e-4


@pytest.mark.slow
def test_spans_point_into_the_input_text(trained):
    _, result = trained
    predictor = Predictor.from_pretrained(result.model_dir)
    text = "이 쓰레기 같은 정치인들 진짜 한심하다"
    [out] = predictor.predict([text], contexts=["국회 소식"])
    for span in out["spans"]:
        assert text[span["start"]:span["end"]] == span["text"]
        assert 0 <= span["score"] <= 1
    assert set(out["labels"]["OFF"]["probs"]) == {"false", "true"}
    assert isinstance(out["labels"]["OFF"]["label"], bool)


@pytest.mark.slow
def test_long_comment_is_scored_to_the_last_character(trained):
    _, result = trained
    predictor = Predictor.from_pretrained(result.model_dir)
    insult = "진짜 한심하다"
    text = " ".join(["오늘 경기 정말 재밌었어요"] * 40 + [insult])
    merged = predictor.merged_outputs([text], [None])[0]
    covered = {i for s, e in merged.token_offsets for i in range(s, e)}
    assert covered == {i for i, ch in enumerate(text) if not ch.isspace()}
    assert len(text) > 3 * predictor.encoder.max_length


def write_inputs(tmp_path):
    comments = ["이 쓰레기 같은 정치인들", "좋은 기사 감사합니다", "너 진짜 한심하다"]
    (tmp_path / "in.txt").write_text("\n".join(comments) + "\n", encoding="utf-8")
    (tmp_path / "in.jsonl").write_text("\n".join(json.dumps({"id": f"c{i}", "comment": c, "title": "제목"},
                                                            ensure_ascii=False) for i, c in enumerate(comments)),
                                       encoding="utf-8")
    for name, delimiter in (("in.csv", ","), ("in.tsv", "\t")):
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f, delimiter=delimiter)
            writer.writerow(["guid", "title", "comment"])
            writer.writerows([[f"g{i}", "제목", c] for i, c in enumerate(comments)])
    return comments


@pytest.mark.slow
@pytest.mark.parametrize("name, ids", [("in.txt", ["1", "2", "3"]), ("in.jsonl", ["c0", "c1", "c2"]),
                                       ("in.csv", ["g0", "g1", "g2"]), ("in.tsv", ["g0", "g1", "g2"])])
def test_predict_cli_each_input_format(trained, tmp_path, name, ids):
    _, result = trained
    comments = write_inputs(tmp_path)
    out = tmp_path / "out.jsonl"
    code = main(["predict", "--model", str(result.model_dir), "--input", str(tmp_path / name),
                 "--output", str(out), "--html", str(tmp_path / "out.html"), "--quiet", "--batch-size", "2"])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ids
    assert [r["text"] for r in rows] == comments
    assert all("OFF" in r["labels"] for r in rows)
    html = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert html.count('class="ks-text"') == 3
    assert all(f"#{i} " in html for i in ids)


@pytest.mark.slow
def test_predict_cli_bad_row_is_an_error_naming_the_line(trained, tmp_path, capsys):
    _, result = trained
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"comment": "좋은 기사"}\n{"title": "no comment"}\n{"comment": "바보"}\n[1]\n',
                   encoding="utf-8")
    args = ["predict", "--model", str(result.model_dir), "--input", str(bad), "--output", str(tmp_path / "o.jsonl"),
            "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:2: no text column" in err and "--skip-bad" in err and "bad.jsonl:4" not in err
    assert main(args + ["--skip-bad"]) == 0
    err = capsys.readouterr().err
    # one summary: each skipped row once, with its file and line
    assert err.count("skipped 2 bad record(s)") == 1
    assert err.count(f"{bad}:2: no text column") == 1 and err.count(f"{bad}:4: expected a JSON object") == 1
    rows = (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r)["id"] for r in rows] == ["1", "3"]


@pytest.mark.slow
def test_predict_cli_quoting_none_reads_bare_quotes_and_batch_size_must_be_positive(trained, tmp_path, capsys):
    _, result = trained
    source = tmp_path / "q.tsv"
    source.write_text('id\tcomment\n1\t"진짜" 한심하다\n', encoding="utf-8")
    args = ["predict", "--model", str(result.model_dir), "--input", str(source), "--output",
            str(tmp_path / "o.jsonl"), "--quiet"]
    assert main(args) == 2 and "q.tsv:2" in capsys.readouterr().err
    assert main(args + ["--quoting", "none"]) == 0
    assert json.loads((tmp_path / "o.jsonl").read_text(encoding="utf-8"))["text"] == '"진짜" 한심하다'
    with pytest.raises(SystemExit):
        main(args + ["--batch-size", "0"])
    assert "--batch-size: must be at least 1, got 0" in capsys.readouterr().err
    assert main(args[:-3] + ["--output", str(tmp_path), "--quiet"]) == 2  # a directory: an error, no traceback
    assert f"kold-span predict: error: is a directory: {tmp_path}" in capsys.readouterr().err


@pytest.mark.slow
def test_evaluate_cli_scores_predictions(trained, tmp_path):
    _, result = trained
    gold = tmp_path / "gold.jsonl"
    assert main(["convert", "kold", str(FIXTURE), str(gold)]) == 0
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", "--model", str(result.model_dir), "--input", str(gold), "--output", str(pred),
                 "--quiet"]) == 0
    out = tmp_path / "scores.json"
    assert main(["evaluate", "--gold", str(gold), "--pred", str(pred), "--out", str(out)]) == 0
    scores = json.loads(out.read_text())
    assert 0 <= scores["span/OFF/char_f1"] <= 1
    assert "label/OFF/f1" in scores
    # Gold against itself is perfect.
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold), "--out", str(out)]) == 0
    perfect = json.loads(out.read_text())
    assert perfect["span/OFF/char_f1"] == 1.0 and perfect["label/OFF/f1"] == 1.0


def test_train_cli_rejects_a_mistyped_key(capsys):
    assert main(["train", str(TINY), "--set", "trainer.max_epoch=1"]) == 2
    assert "unknown key 'trainer.max_epoch'" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_continues_from_the_last_checkpoint(tmp_path):
    first = train(tiny_config(tmp_path, "trainer.max_epochs=2", "data.limit=8"), quiet=True)
    second = train(tiny_config(tmp_path, "trainer.max_epochs=4", "data.limit=8"), resume=True, quiet=True)
    assert second.run_dir == first.run_dir
    import torch

    ckpt = torch.load(second.run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["epoch"] == 3  # epochs 0-1 in the first session, 2-3 after resuming
    assert (second.run_dir / "logs" / "version_0" / "metrics.csv").exists()
    assert (second.run_dir / "logs" / "version_1" / "metrics.csv").exists()


def test_resume_of_a_named_run_without_a_checkpoint_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"--resume: .*tiny/nothing/checkpoints/last.ckpt does not exist"):
        train(tiny_config(tmp_path, "run=nothing", "data.limit=8"), resume=True, quiet=True)
    assert not (tmp_path / "tiny" / "nothing").exists()


@pytest.mark.slow
def test_last_checkpoint_is_the_last_epoch_even_when_dev_stops_improving(tmp_path):
    # lr 1e-9: the dev score never beats the first epoch's, so the best checkpoint stays at epoch 0;
    # --resume must still continue after epoch 2 (Lightning 2.6 writes save_last only with a new best).
    config = tiny_config(tmp_path, "trainer.max_epochs=3", "data.limit=16", "data.dev_fraction=0.25",
                         "trainer.lr=1e-9", "trainer.monitor=dev/OFF/macro_f1", "trainer.monitor_mode=max")
    run = train(config, quiet=True).run_dir
    import torch

    assert torch.load(run / "checkpoints" / "best.ckpt", weights_only=True)["epoch"] == 0
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["epoch"] == 2


@pytest.mark.slow
def test_keep_checkpoints_false_leaves_the_model_and_drops_the_checkpoints(tmp_path):
    small = ("trainer.max_epochs=1", "data.limit=8", "data.test_fraction=0.25")
    kept = train(tiny_config(tmp_path, *small, "run=kept"), quiet=True)
    dropped = train(tiny_config(tmp_path, *small, "run=dropped", "trainer.keep_checkpoints=false"), quiet=True)
    assert (kept.run_dir / "checkpoints" / "last.ckpt").exists()
    assert json.loads((kept.run_dir / "metrics.json").read_text())["best_checkpoint"]
    assert not (dropped.run_dir / "checkpoints").exists()
    saved = json.loads((dropped.run_dir / "metrics.json").read_text())
    assert saved["best_checkpoint"] is None and "OFF_span/char_f1" in saved["test"]
    assert Predictor.from_pretrained(dropped.model_dir).predict(["짧은 댓글"])


@pytest.mark.slow
def test_max_steps_ending_an_epoch_early_still_exports_a_model(tmp_path):
    """A short smoke run (`trainer.max_steps` under one epoch) with a dev split and early stopping."""
    config = tiny_config(tmp_path, "data.limit=24", "data.dev_fraction=0.25", "trainer.batch_size=4",
                         "trainer.max_steps=2", "trainer.early_stopping_patience=2", "trainer.monitor=dev/OFF/macro_f1")
    result = train(config, quiet=True)  # 18 training examples: 5 steps an epoch, stopped after 2
    saved = json.loads((result.run_dir / "metrics.json").read_text())
    assert saved["best_dev_score"] is None and "OFF/macro_f1" in saved["dev"]  # no validation before the stop
    assert Predictor.from_pretrained(result.model_dir).predict(["짧은 댓글"])


@pytest.mark.slow
def test_loader_workers_change_nothing_but_speed(tmp_path):
    """The GPU presets' `num_workers`: the same batches, so the same weights as without workers.

    The second run starts from the first run's tokenizer (as a re-run in a run directory does),
    so the loader is the only difference between them.
    """
    import shutil

    texts = [ex.text for ex in corpora.read("kold", FIXTURE)]
    outputs, tokenizer = {}, None
    for workers in (0, 2):
        config = tiny_config(tmp_path / str(workers), "data.limit=24", "data.dev_fraction=0.25",
                             "trainer.max_epochs=3", "trainer.batch_size=4", f"trainer.num_workers={workers}")
        if tokenizer is not None:
            shutil.copytree(tokenizer, tmp_path / str(workers) / "tiny" / "r" / "tokenizer")
        result = train(config, quiet=True)
        tokenizer = result.run_dir / "tokenizer"
        outputs[workers] = Predictor.from_pretrained(result.model_dir).predict(texts)
    assert outputs[2] == outputs[0]


@pytest.mark.slow
def test_early_stopping_ends_the_run_once_dev_stops_improving(tmp_path):
    config = tiny_config(tmp_path, "data.limit=24", "data.dev_fraction=0.25", "trainer.max_epochs=10",
                         "trainer.lr=1e-12", "trainer.early_stopping_patience=2", "trainer.monitor=dev/OFF/macro_f1")
    result = train(config, quiet=True)  # lr 1e-12 (0 is no learning rate): the dev score never moves
    with open(result.run_dir / "logs" / "version_0" / "metrics.csv", encoding="utf-8") as f:
        epochs = {int(row["epoch"]) for row in csv.DictReader(f) if row.get("dev/OFF/macro_f1")}
    assert epochs == {0, 1, 2}  # the first score, then two epochs without improvement


@pytest.mark.slow
@pytest.mark.parametrize("group_by_length", ["false", "true"])
def test_ddp_with_two_cpu_processes(tmp_path, group_by_length):
    """Two gloo processes train a few steps and export one model (also with length-grouped batches)."""
    cmd = [sys.executable, "-m", "kold_span.cli", "train", str(TINY), "--set", f"output_dir={tmp_path}",
           f"data.train={FIXTURE}", "run=ddp", "trainer.max_epochs=1", "trainer.devices=2",
           "trainer.strategy=ddp", "trainer.batch_size=4", "data.dev_fraction=0.25",
           f"trainer.group_by_length={group_by_length}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "tiny" / "ddp" / "model" / "model.safetensors").exists()
    metrics = json.loads((tmp_path / "tiny" / "ddp" / "metrics.json").read_text())
    assert "OFF_span/char_f1" in metrics["dev"]


@pytest.mark.slow
def test_predict_cli_keeps_rows_with_repeated_ids_apart(trained, tmp_path):
    _, result = trained
    path = tmp_path / "dup.jsonl"
    path.write_text('{"id": "x", "comment": "좋은 기사"}\n{"id": "x", "comment": "너 진짜 바보"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    assert main(["predict", "--model", str(result.model_dir), "--input", str(path), "--output", str(out),
                 "--quiet"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["text"] for r in rows] == ["좋은 기사", "너 진짜 바보"]


def test_pool_reads_the_first_token_or_the_unpadded_mean():
    import torch

    from kold_span.models.network import pool
    states = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [50.0, 60.0]]])
    mask = torch.tensor([[1, 1, 0]])  # the third token is padding
    assert pool(states, mask, "first").tolist() == [[1.0, 2.0]]
    assert pool(states, mask, "mean").tolist() == [[2.0, 3.0]]


@pytest.mark.slow
def test_mean_pooling_is_trained_saved_and_reloaded(tmp_path):
    result = train(tiny_config(tmp_path, "data.limit=8", "trainer.max_epochs=2", "model.pooling=mean"), quiet=True)
    predictor = Predictor.from_pretrained(result.model_dir)
    assert predictor.model.pooling == "mean"
    texts = [ex.text for ex in corpora.read("kold", FIXTURE)[:4]]
    before = predictor.predict(texts)
    # The same weights read through the first token give other probabilities.
    predictor.model.pooling = "first"
    assert predictor.predict(texts) != before


@pytest.mark.parametrize("precision, accelerator, cuda, native, warned", [
    ("bf16-mixed", "cpu", False, False, True),
    ("bf16-true", "auto", False, False, True),
    ("bf16-mixed", "auto", True, False, False),  # auto picks the GPU
    ("bf16-mixed", "gpu", True, False, False),
    ("bf16-mixed", "cpu", False, True, False),  # AVX512-BF16 or AMX: native bf16
    ("32-true", "cpu", False, False, False),
])
def test_bf16_on_a_cpu_without_bf16_instructions_is_warned(precision, accelerator, cuda, native, warned):
    from kold_span.config.schema import TrainerConfig
    from kold_span.training.run import emulated_bf16_warning

    message = emulated_bf16_warning(TrainerConfig(precision=precision, accelerator=accelerator), cuda, native)
    assert (message is not None) == warned
    if warned:
        assert message.startswith(f"trainer.precision={precision} on a CPU without bf16 instructions")


def test_windows_longer_than_the_encoders_positions_fail_before_training(tmp_path):
    from kold_span.config.schema import ScratchEncoderConfig
    from kold_span.errors import ConfigError
    from kold_span.models.backbones import scratch_encoder
    from kold_span.training.run import check_window_length

    with pytest.raises(ConfigError, match=r"model.max_length \(256\) is longer than .*max_position: 128"):
        tiny_config(tmp_path, "model.max_length=256")
    encoder = scratch_encoder(ScratchEncoderConfig(hidden_size=16, layers=1, heads=1, intermediate_size=16,
                                                   max_position=32), 50, 0)
    check_window_length(encoder, 32)
    with pytest.raises(ConfigError, match=r"model.max_length=33: .*max_position_embeddings is 32"):
        check_window_length(encoder, 33)


def test_a_missing_data_file_names_the_key_and_leaves_no_run_directory(tmp_path):
    config = tiny_config(tmp_path, "data.train=nowhere/kold.json")
    with pytest.raises(FileNotFoundError, match=r"data.train: nowhere/kold.json does not exist \(a relative path"):
        train(config, quiet=True)
    assert not (tmp_path / "tiny" / "r").exists()


def test_one_class_in_training_fails_before_training_when_the_ngram_is_fused(tmp_path):
    ones = tmp_path / "ones.jsonl"
    ones.write_text("".join(json.dumps({"id": str(i), "text": f"문장 {i}", "labels": {"OFF": True}}) + "\n"
                            for i in range(8)), encoding="utf-8")
    fused = ["data.reader=jsonl", f"data.train={ones}", "data.dev_fraction=0.25", "trainer.monitor=dev/loss",
             "tasks=[{name: OFF, kind: sequence, source: OFF, fuse_ngram: true}]"]
    with pytest.raises(ValueError, match=r"task 'OFF': every training example has the label 'true'"):
        train(tiny_config(tmp_path, *fused), quiet=True)
    assert not (tmp_path / "tiny" / "r" / "checkpoints").exists()


@pytest.mark.slow
def test_negatives_are_trained_on_and_the_held_out_ones_scored_as_benign(tmp_path):
    """data.negatives: benign texts of another file join train with the given labels; a held-out share is
    predicted after training and counted in metrics.json's `benign`."""
    from kold_span.data import Example, write_jsonl

    benign = [Example(id=str(i), text=f"오늘 날씨가 정말 좋네요 {i}", labels={"lang": "ko" if i < 10 else "en"})
              for i in range(12)]
    path = tmp_path / "benign.jsonl"
    write_jsonl(benign, path)
    config = tiny_config(tmp_path, "trainer.max_epochs=1", "data.limit=8",
                         f"data.negatives={{reader: jsonl, path: {path}, labels: {{OFF: false}}, "
                         "filter: {lang: ko}, holdout_fraction: 0.4}")
    result = train(config, quiet=True)
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert metrics["sizes"]["train"] == 8 + 6 and metrics["sizes"]["benign"] == 4  # 10 Korean texts: 6 + 4
    assert metrics["benign"]["examples"] == 4
    assert set(metrics["benign"]) == {"examples", "flagged", "with_span", "other_label"}
    assert 0.0 <= metrics["benign"]["with_span"] <= metrics["benign"]["flagged"] <= 1.0
