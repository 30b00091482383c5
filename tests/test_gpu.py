"""The GPU presets on a real GPU: bf16 training, data-loader workers, DDP, and CUDA prediction (the pipeline too).

Skipped where torch sees no CUDA device (CI has none); run on a GPU machine with
`python -m pytest tests/test_gpu.py`. The tiny model here splits words without Kiwi
(`morpheme_pretokenize: false`): Kiwi runs on the CPU either way, and the check then needs
no Kiwi model on the GPU machine.
"""
import json
import subprocess
import sys

import pytest
import torch
import yaml

from kold_span import corpora
from kold_span.config.loading import load_config
from kold_span.inference.predictor import Predictor
from kold_span.training.evaluators import evaluate_predictor
from kold_span.training.run import train

from conftest import CONFIGS, FIXTURE, ROOT, TINY, child_env

# Each test trains on the GPU or runs a CUDA child process.
pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"), pytest.mark.slow]


def preset(name):
    """A trainer preset from configs/trainer as `--set` overrides, batch sizes left to the test."""
    keys = yaml.safe_load((CONFIGS / "trainer" / f"{name}.yaml").read_text(encoding="utf-8"))
    return [f"trainer.{key}={value}" for key, value in keys.items() if "batch_size" not in key]


NO_KIWI = "model.encoder.scratch.morpheme_pretokenize=false"


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory):
    """The CPU overfit run of test_training, under the `gpu` preset (bf16-mixed, 4 loader workers)."""
    out = tmp_path_factory.mktemp("gpu")
    config = load_config(TINY, [f"output_dir={out}", f"data.train={FIXTURE}", "run=gpu", "data.limit=16",
                                NO_KIWI, *preset("gpu")])
    assert config.trainer.precision == "bf16-mixed" and config.trainer.num_workers == 4
    return train(config, quiet=True)


def test_bf16_training_learns_and_exports_float32_weights(gpu_run):
    from safetensors.torch import load_file

    predictor = Predictor.from_pretrained(gpu_run.model_dir)
    scores = evaluate_predictor(predictor, corpora.read("kold", FIXTURE)[:16])
    assert scores["OFF/accuracy"] == 1.0
    assert scores["OFF_span/char_f1"] >= 0.9, scores
    weights = load_file(str(gpu_run.model_dir / "model.safetensors"))
    assert {t.dtype for t in weights.values()} == {torch.float32}


def test_cuda_prediction_matches_cpu(gpu_run):
    texts = [ex.text for ex in corpora.read("kold", FIXTURE)]
    on_cpu = Predictor.from_pretrained(gpu_run.model_dir).predict(texts, batch_size=8)
    cuda = Predictor.from_pretrained(gpu_run.model_dir, device="cuda")
    assert next(cuda.model.parameters()).is_cuda
    on_gpu = cuda.predict(texts, batch_size=8)
    for a, b in zip(on_cpu, on_gpu, strict=True):
        assert [(s["start"], s["end"]) for s in a["spans"]] == [(s["start"], s["end"]) for s in b["spans"]]
        for task, out in a["labels"].items():
            assert out["label"] == b["labels"][task]["label"]
            for label, p in out["probs"].items():
                assert abs(p - b["labels"][task]["probs"][label]) < 1e-3


def test_cuda_pipeline_copies_once_per_batch_and_keeps_spans_under_bf16(gpu_run):
    """The overlapped pipeline on CUDA: pinned inputs, one non-blocking copy of all tasks per batch, bf16 autocast."""
    from kold_span.data.example import Example

    examples = [Example(id=str(i), text=ex.text, context=ex.context)
                for i, ex in enumerate(corpora.read("kold", FIXTURE))]
    full = Predictor.from_pretrained(gpu_run.model_dir, device="cuda", precision="fp32")
    prepared = full.prepare(full.encode([e.text for e in examples], [e.context for e in examples]), 8)
    assert all(t.is_pinned() for _rows, inputs in prepared.batches for t in inputs)
    [host, *_] = full.run_network(prepared)
    assert host.values.is_pinned() and host.ready is not None
    assert [name for name, *_ in host.layout] == [t.name for t in full.tasks]
    fp32 = list(full.predict_examples(examples, batch_size=8))
    assert fp32 == [{"id": e.id, **p} for e, p in zip(examples, full.predict(
        [e.text for e in examples], [e.context for e in examples], batch_size=8))]
    bf16 = Predictor.from_pretrained(gpu_run.model_dir, device="cuda", precision="auto")
    assert bf16.precision == "bf16"
    for a, b in zip(fp32, bf16.predict_examples(examples, batch_size=8), strict=True):
        assert [(s["start"], s["end"]) for s in a["spans"]] == [(s["start"], s["end"]) for s in b["spans"]]
        for task, out in a["labels"].items():
            for label, prob in out["probs"].items():
                assert abs(prob - b["labels"][task]["probs"][label]) < 1e-3


def test_predict_cli_on_cuda(gpu_run, tmp_path):
    env = child_env()
    source = tmp_path / "in.txt"
    source.write_text("진짜 한심하다\n오늘 경기 재밌었어요\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "kold_span.cli", "predict", "--model", str(gpu_run.model_dir),
           "--input", str(source), "--output", str(tmp_path / "out.jsonl"), "--device", "cuda"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2


def test_ddp_preset_on_every_gpu(tmp_path):
    """`ddp` (devices: -1, bf16-mixed, 4 workers) trains and exports one model from rank 0."""
    env = child_env()
    cmd = [sys.executable, "-m", "kold_span.cli", "train", str(TINY), "--set", f"output_dir={tmp_path}",
           f"data.train={FIXTURE}", "run=ddp", "trainer.max_epochs=2", "trainer.batch_size=4",
           "data.dev_fraction=0.25", NO_KIWI, *preset("ddp")]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, encoding="utf-8", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "tiny" / "ddp" / "model" / "model.safetensors").exists()
    metrics = json.loads((tmp_path / "tiny" / "ddp" / "metrics.json").read_text())
    assert "OFF_span/char_f1" in metrics["dev"]


def test_weight_average_on_cuda_resumes_and_exports_the_average(tmp_path):
    """`trainer.ema_decay` under the `gpu` preset: the average lives on the GPU, a resume moves it back there."""
    common = [f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=ema", "data.limit=16",
              "data.dev_fraction=0.25", "trainer.batch_size=4", "trainer.monitor=dev/loss",
              "trainer.ema_decay=0.9", NO_KIWI, *preset("gpu")]
    train(load_config(TINY, [*common, "trainer.max_epochs=2"]), quiet=True)
    result = train(load_config(TINY, [*common, "trainer.max_epochs=3"]), resume=True, quiet=True)
    last = torch.load(result.run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert last["epoch"] == 2 and last["callbacks"]["WeightEMA[0.9]"]["updates"] == 9
    best = torch.load(json.loads((result.run_dir / "metrics.json").read_text())["best_checkpoint"],
                      map_location="cpu", weights_only=True)["state_dict"]
    exported = Predictor.from_pretrained(result.model_dir).model.state_dict()
    for key, value in exported.items():
        assert torch.equal(value, best[f"model.{key}"].float()), key
