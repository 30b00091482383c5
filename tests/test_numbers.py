"""Numbers that must be finite: training stops when its loss or gradients are not, a model whose outputs are not
is refused at load, and nothing the package writes as JSON holds NaN or Infinity (issue 54)."""
import json

import pytest
import torch

from kold_span.config.loading import load_config
from kold_span.errors import NonFiniteError

from conftest import FIXTURE, TINY, untrained_model


def tiny_config(tmp_path, *overrides):
    return load_config(TINY, [f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r", "trainer.max_epochs=3",
                              *overrides])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("untrained") / "model")


def encoder_directory(model_dir, folder, **config_changes):
    """The untrained model's encoder as an encoder directory (config, weights, tokenizer), its config changed."""
    from kold_span.inference.predictor import Predictor

    predictor = Predictor.from_pretrained(model_dir)
    encoder = predictor.model.encoder
    for key, value in config_changes.items():
        setattr(encoder.config, key, value)
    encoder.save_pretrained(str(folder))
    predictor.tokenizer.save_pretrained(str(folder))
    return folder


@pytest.mark.slow
def test_a_run_whose_loss_diverges_stops_naming_the_step(tmp_path):
    from kold_span.training.run import train

    config = tiny_config(tmp_path, "trainer.lr=1e30", "trainer.warmup_ratio=0", "trainer.gradient_clip_val=null")
    with pytest.raises(NonFiniteError, match=r"^training stopped: the (loss|gradients' norm) is (nan|inf) after "
                                             r"[1-9]\d* optimizer steps?; lower trainer.lr"):
        train(config, quiet=True)
    assert not (tmp_path / "tiny" / "r" / "model").exists()  # no NaN model exported


def test_an_encoder_that_gives_nan_is_refused_before_training(tmp_path, model_dir):
    from kold_span.training.run import train

    encoder = encoder_directory(model_dir, tmp_path / "encoder", layer_norm_eps=-1.0)
    config = tiny_config(tmp_path, "model.encoder.scratch=null", f"model.encoder.name_or_path={encoder}",
                         "model.max_length=32", "model.stride=8")
    with pytest.raises(NonFiniteError, match="the encoder's outputs are NaN or infinite before any training"):
        train(config, quiet=True)


def edited_copy(model_dir, folder, change):
    """A copy of the model directory whose config.json `change(config)` edits, its manifest written again."""
    import shutil

    from kold_span.models.manifest import write_manifest

    shutil.copytree(model_dir, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    change(config)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_manifest(folder)
    return folder


@pytest.mark.parametrize("change, message", [
    (lambda c: c["encoder"].update(layer_norm_eps=-1.0), r"the model's outputs for task\(s\) OFF, OFF_span are NaN"),
    (lambda c: c.update(max_length=300), r"key 'max_length' \(300\) is longer than the encoder reads "
                                         r"\(max_position_embeddings: 64\)"),
    (lambda c: c["encoder"].update(num_hidden_layers=100000),
     r"key 'encoder': num_hidden_layers must be a whole number from 1 to 256, got 100000"),
])
def test_a_model_that_cannot_predict_is_refused_at_load(model_dir, tmp_path, change, message):
    from kold_span.errors import ModelFormatError
    from kold_span.inference.predictor import Predictor

    copy = edited_copy(model_dir, tmp_path / "model", change)
    with pytest.raises(ModelFormatError, match=f"^{copy / 'config.json'}: {message}"):
        Predictor.from_pretrained(copy)


def test_nan_weights_are_refused_at_load_and_by_predict(model_dir, tmp_path, capsys):
    from kold_span.cli import main
    from kold_span.errors import ModelFormatError
    from kold_span.inference.predictor import Predictor

    predictor = Predictor.from_pretrained(model_dir)
    with torch.no_grad():
        predictor.model.heads["OFF"].weight[0, 0] = float("nan")
    broken = predictor.save_pretrained(tmp_path / "nan")
    with pytest.raises(ModelFormatError, match=r"outputs for task\(s\) OFF are NaN or infinite"):
        Predictor.from_pretrained(broken)
    source = tmp_path / "in.txt"
    source.write_text("너 바보냐\n", encoding="utf-8")
    assert main(["predict", "--model", str(broken), "--input", str(source), "--output", str(tmp_path / "o.jsonl")]) == 2
    assert "outputs for task(s) OFF are NaN" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_tokenizer_larger_than_the_embedding_table_is_refused_at_load(model_dir, tmp_path):
    from kold_span.config.schema import ScratchEncoderConfig
    from kold_span.errors import ModelFormatError
    from kold_span.inference.predictor import Predictor, PredictorSettings
    from kold_span.models.backbones import scratch_encoder
    from kold_span.models.network import MultiTaskModel

    predictor = Predictor.from_pretrained(model_dir)
    small = scratch_encoder(ScratchEncoderConfig(vocab_size=50, hidden_size=32, layers=1, heads=2,
                                                 intermediate_size=64, max_position=64), 50, 0)
    assert len(predictor.tokenizer) > 50
    mismatched = Predictor(MultiTaskModel(small, predictor.tasks), predictor.tokenizer, predictor.tasks,
                           PredictorSettings(max_length=32, stride=8, snap="none")).save_pretrained(tmp_path / "small")
    with pytest.raises(ModelFormatError, match=r"the tokenizer has ids up to \d+, beyond the encoder's embedding "
                                               r"table of 50 rows"):
        Predictor.from_pretrained(mismatched)


def test_an_encoder_directory_whose_tokenizer_outgrows_its_embeddings_is_refused_before_training(tmp_path, model_dir):
    from transformers import BertModel

    from kold_span.errors import ConfigError
    from kold_span.training.run import train

    encoder = encoder_directory(model_dir, tmp_path / "encoder")
    small = BertModel.from_pretrained(str(encoder))
    small.resize_token_embeddings(50)
    small.save_pretrained(str(encoder))
    config = tiny_config(tmp_path, "model.encoder.scratch=null", f"model.encoder.name_or_path={encoder}",
                         "model.max_length=32", "model.stride=8")
    with pytest.raises(ConfigError, match=r"model.encoder.name_or_path=.*: the tokenizer has ids up to \d+, beyond "
                                          r"the encoder's embedding table of 50 rows"):
        train(config, quiet=True)


# json.dumps calls that write nothing: a cache key, a comparison, a grouping key.
NOT_WRITTEN = {"config/saved.py", "training/datamodule.py", "service/model.py",
               "data/example.py"}  # id_text: an id made from a JSON value, a key written nowhere as JSON


def test_every_json_the_package_writes_goes_through_json_text():
    import ast

    from conftest import PACKAGE

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in ("dumps", "dump")
                    and isinstance(node.value, ast.Name) and node.value.id == "json"):
                found.append(name)
    assert sorted(set(found) - NOT_WRITTEN) == ["data/jsonl.py"]  # json_text itself


def test_a_prediction_holding_nan_is_refused_not_written():
    from kold_span.data.example import Example
    from kold_span.inference.outputs import output_row

    prediction = {"labels": {"OFF": {"label": False, "probs": {"false": float("nan"), "true": float("nan")}}},
                  "spans": []}
    with pytest.raises(NonFiniteError, match=r"^the prediction of row '7': labels.OFF.probs.false is nan, "
                                             r"which JSON cannot hold$"):
        output_row(Example(id="7", text="바보"), prediction)


def test_a_converted_label_holding_nan_is_refused_and_nothing_is_written(tmp_path, capsys):
    from kold_span.cli import main

    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "1", "text": "바보", "labels": {"score": NaN}}\n', encoding="utf-8")
    assert main(["convert", "jsonl", str(source), str(tmp_path / "out.jsonl")]) == 2
    assert "example '1': labels.score is nan, which JSON cannot hold" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_undefined_scores_are_written_as_null():
    from kold_span.data.jsonl import finite_or_null, json_text

    assert json.loads(json_text(finite_or_null({"dev": {"OFF/f1": float("nan")}, "best": float("inf")}))) == {
        "dev": {"OFF/f1": None}, "best": None}


def test_an_encoder_directory_of_a_hundred_thousand_layers_is_refused_before_it_is_built(tmp_path, model_dir):
    from kold_span.errors import EncoderLoadError
    from kold_span.training.run import train

    encoder = encoder_directory(model_dir, tmp_path / "encoder")
    config_file = encoder / "config.json"
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), "num_hidden_layers": 100000}))
    config = tiny_config(tmp_path, "model.encoder.scratch=null", f"model.encoder.name_or_path={encoder}")
    with pytest.raises(EncoderLoadError, match=r"num_hidden_layers must be a whole number from 1 to 256, got 100000"):
        train(config, quiet=True)


def test_the_guard_checks_gradients_except_under_a_gradient_scaler():
    from types import SimpleNamespace

    from kold_span.training.divergence import StopOnNonFinite

    module = torch.nn.Linear(2, 1)
    module.weight.grad = torch.full_like(module.weight, float("inf"))
    plain = SimpleNamespace(precision_plugin=SimpleNamespace(), global_step=4)
    with pytest.raises(NonFiniteError, match=r"^training stopped: the gradients' norm is inf after 4 optimizer steps"):
        StopOnNonFinite().on_before_optimizer_step(plain, module, None)
    # 16-mixed: the scaler skips a step whose gradients overflowed and lowers its scale; that is no divergence
    scaled = SimpleNamespace(precision_plugin=SimpleNamespace(scaler=object()), global_step=4)
    StopOnNonFinite().on_before_optimizer_step(scaled, module, None)
