"""The overlapped prediction pipeline: its parts on hand-checked values, then against the sequential path."""
import threading
import time

import pytest
import torch

from kold_span.data.example import Example
from kold_span.errors import ArgumentError, DataError
from kold_span.inference.pipeline import Pipeline, RunOptions, ahead, chunks, to_host
from kold_span.inference.predictor import Predictor, PredictorSettings
from kold_span.inference.runtimes import autocast, cpu_has_bf16, resolve_precision
from kold_span.models.tasks import Task

from conftest import untrained_model

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
SPAN = Task("OFF_span", "span", "OFF")


def test_ahead_keeps_order_and_raises_an_error_after_the_items_before_it():
    def items():
        yield from (1, 2, 3)
        raise DataError("in.jsonl:4: invalid JSON")

    seen = []
    with pytest.raises(DataError, match="in.jsonl:4"):
        for item in ahead(items()):
            seen.append(item)
    assert seen == [1, 2, 3]


def test_ahead_works_one_item_ahead_in_another_thread_and_stops_when_closed():
    produced, threads = [], set()

    def items():
        for i in range(100):
            threads.add(threading.current_thread().name)
            produced.append(i)
            yield i

    stream = ahead(items(), depth=1)
    assert next(stream) == 0
    time.sleep(0.2)  # the producer fills its one slot, then waits
    assert len(produced) <= 3
    stream.close()
    assert threads == {"kold-span-prepare"}
    assert not any(t.name == "kold-span-prepare" for t in threading.enumerate())


def test_chunks_cut_a_stream_without_reading_it_whole():
    examples = (Example(id=str(i), text="x") for i in range(7))
    assert [len(c) for c in chunks(examples, 3)] == [3, 3, 1]


def test_one_host_array_holds_every_task_and_splits_back_into_each_task_shape():
    logits = {"OFF": torch.tensor([[0.0, 0.0], [0.0, 2.0]]),
              "OFF_span": torch.tensor([[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], [[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]])}
    host = to_host([OFF, SPAN], logits)
    assert host.values.shape == (2, 2 + 2 * 3)  # one copy: 2 labels and 2 tokens × 3 tags per window
    first, second = host.rows()
    assert first["OFF"].tolist() == [0.5, 0.5]
    assert second["OFF"].tolist() == pytest.approx([0.119, 0.881], abs=1e-3)
    assert first["OFF_span"].shape == (2, 3)
    assert first["OFF_span"][1].tolist() == pytest.approx([0.787, 0.107, 0.107], abs=1e-3)
    assert second["OFF_span"][0].tolist() == pytest.approx([0.107, 0.107, 0.787], abs=1e-3)


def test_precision_auto_is_fp32_on_every_cpu_and_bf16_is_asked_for(monkeypatch, caplog):
    """bf16 changes labels and spans (docs/PREDICTING.md), so a CPU's bf16 instructions never choose it."""
    assert cpu_has_bf16("fpu avx2 amx_bf16") and not cpu_has_bf16("fpu avx2 avx512f")
    for has_bf16 in (False, True):
        monkeypatch.setattr("kold_span.inference.runtimes.cpu_has_bf16", lambda: has_bf16)
        assert resolve_precision("auto", torch.device("cpu")) == "fp32"
        assert resolve_precision("bf16", torch.device("cpu")) == "bf16"
    monkeypatch.setattr("kold_span.inference.runtimes.cpu_has_bf16", lambda: False)
    with caplog.at_level("WARNING"):
        resolve_precision("bf16", torch.device("cpu"))
    assert "emulated" in caplog.text
    assert resolve_precision("fp16", torch.device("cpu")) == "fp16"
    with pytest.raises(ArgumentError, match="precision must be one of"):
        resolve_precision("float8", torch.device("cpu"))
    with autocast(torch.device("cpu"), "fp32"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


class Stages:
    """Stands in for a predictor: records when each stage starts and ends, per chunk.

    With `chunks` given, the network waits (a few seconds at most) until the next chunk is being prepared, so that
    the overlap is checked by what happened, not by how fast a loaded machine ran a thread.
    """

    def __init__(self, chunks=None):
        self.log = []
        self.chunks = chunks
        self.changed = threading.Condition()

    def contexts_for(self, contexts, perspective):
        return list(contexts)

    def encode(self, texts, contexts):
        return list(texts)

    def prepare(self, texts, batch_size):
        with self.changed:
            self.log.append(("prepare", texts[0]))
            self.changed.notify_all()
        return list(texts)

    def prepared(self):
        return sum(1 for stage, _ in self.log if stage == "prepare")

    def run_network(self, prepared):
        with self.changed:
            self.log.append(("network", prepared[0]))
            networks = sum(1 for stage, _ in self.log if stage == "network")
            if self.chunks:  # the next chunk's first batch, unless this is the last chunk
                self.changed.wait_for(lambda: self.prepared() >= min(networks + 1, self.chunks), timeout=10)
        return [len(t) for t in prepared]

    def merge(self, prepared, outputs):
        return outputs

    def labels_and_spans(self, text, merged):
        return {"length": merged}


def test_the_next_chunk_is_prepared_while_the_network_runs_and_outputs_keep_input_order():
    stages = Stages()
    examples = [Example(id=str(i), text="x" * (i + 1)) for i in range(8)]
    out = list(Pipeline(stages, RunOptions(1)).run(examples, lambda e, p: (e.id, p["length"])))
    assert [row for _e, row in out] == [(str(i), i + 1) for i in range(8)]
    # chunks of CHUNK_BATCHES (8) examples: one chunk here; with batch_size=1 and 2 examples a chunk, four
    stages = Stages(chunks=4)
    examples = [Example(id=str(i), text=f"t{i}") for i in range(4 * 8)]
    list(Pipeline(stages, RunOptions(1)).run(examples))
    network_at = [i for i, (stage, _) in enumerate(stages.log) if stage == "network"]
    prepared_before = [sum(1 for stage, _ in stages.log[:i] if stage == "prepare") for i in network_at]
    assert prepared_before[:3] == [2, 3, 4]  # by the second network call, the third chunk is being prepared


def test_a_bad_row_is_raised_after_the_chunks_before_it_are_yielded():
    def examples():
        for i in range(20):
            yield Example(id=str(i), text=f"t{i}")
        raise DataError("in.jsonl:21: invalid JSON")

    seen = []
    with pytest.raises(DataError, match="in.jsonl:21"):
        for example, _prediction in Pipeline(Stages(), RunOptions(1)).run(examples()):
            seen.append(example.id)
    assert seen == [str(i) for i in range(16)]  # two whole chunks of 8; the third never reached the network


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("m") / "model", max_length=16)


@pytest.fixture(scope="module")
def predictor(model_dir):
    return Predictor.from_pretrained(model_dir)


TEXTS = ["이 쓰레기 같은 정치인들", "좋은 기사 감사합니다", "너 진짜 한심하다 정말로 한심하다 오늘 경기 정말 재밌었어요 " * 3,
         "오늘 경기 정말 재밌었어요", "ㅋㅋㅋ 진짜", "정치인들 기사"] * 7


@pytest.mark.parametrize("batch_size", [1, 3, 32])
def test_the_pipeline_gives_what_predict_gives_byte_for_byte(predictor, batch_size):
    examples = [Example(id=str(i), text=t, context="국회 소식" if i % 2 else None) for i, t in enumerate(TEXTS)]
    expected = []
    for chunk in chunks(examples, batch_size * 8):  # what predict_examples did before the pipeline
        expected += [{"id": e.id, **p} for e, p in zip(chunk, predictor.predict(
            [e.text for e in chunk], [e.context for e in chunk], batch_size))]
    assert any(len(predictor.encoder.encode(t)) > 1 for t in TEXTS)  # long texts span several windows
    assert list(predictor.predict_examples(examples, batch_size)) == expected
    assert any(p["spans"] for p in expected)


def test_bf16_autocast_keeps_probabilities_close_and_spans(predictor):
    settings = PredictorSettings(max_length=16, stride=8, snap="morpheme")
    reduced = Predictor(predictor.model, predictor.tokenizer, predictor.tasks, settings, precision="bf16")
    assert reduced.precision == "bf16" and predictor.precision in ("fp32", "bf16")
    full = Predictor(predictor.model, predictor.tokenizer, predictor.tasks, settings, precision="fp32")
    for a, b in zip(full.predict(TEXTS[:6]), reduced.predict(TEXTS[:6])):
        for label, p in a["labels"]["OFF"]["probs"].items():
            assert abs(p - b["labels"]["OFF"]["probs"][label]) < 1e-2


def test_predict_writes_parquet_with_the_objects_of_its_jsonl(model_dir, tmp_path, capsys):
    import json

    import pyarrow.parquet as pq

    from kold_span.cli import main

    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS[:6]) + "\n", encoding="utf-8")
    for name in ("out.jsonl", "out.parquet"):
        assert main(["predict", "--model", str(model_dir), "--input", str(source), "--output", str(tmp_path / name),
                     "--quiet", "--precision", "fp32"]) == 0
    assert "wrote 6 predictions" in capsys.readouterr().out
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [{**row, "labels": json.loads(row["labels"])} for row in rows] == lines
