"""The weight average: hand-computed updates, the swap around validation, checkpoints and resume."""
import json
from types import SimpleNamespace

import pytest
import torch

from kold_span.config.loading import load_config
from kold_span.inference.predictor import Predictor
from kold_span.training.averaging import WeightEMA
from kold_span.training.run import train

from conftest import FIXTURE, TINY

# The tiny joint model of test_training, with a dev split and an average of decay 0.9.
EMA_RUN = [f"data.train={FIXTURE}", "run=r", "data.limit=16",
           "data.dev_fraction=0.25", "trainer.batch_size=4", "trainer.monitor=dev/loss", "trainer.ema_decay=0.9"]


def ema_config(out, epochs):
    return load_config(TINY, [f"output_dir={out}", *EMA_RUN, f"trainer.max_epochs={epochs}"])


class OneWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(2))
        self.frozen = torch.nn.Parameter(torch.ones(1), requires_grad=False)


def step_to(ema, trainer, module, step, value):
    """One training batch whose optimizer step sets the weight to `value`."""
    ema.on_train_batch_start(trainer, module, None, 0)
    with torch.no_grad():
        module.w.fill_(value)
    trainer.global_step = step
    ema.on_train_batch_end(trainer, module, None, None, 0)


def test_updates_follow_the_formula_and_skip_frozen_weights():
    module, trainer = OneWeight(), SimpleNamespace(global_step=0)
    ema = WeightEMA(0.05)  # under the ramp's 0.1, so every update uses 0.05
    step_to(ema, trainer, module, 1, 10.0)
    assert ema.shadow[0].tolist() == pytest.approx([9.5, 9.5])  # 0.05 * 0 + 0.95 * 10
    step_to(ema, trainer, module, 2, 20.0)
    assert ema.shadow[0].tolist() == pytest.approx([19.475, 19.475])  # 0.05 * 9.5 + 0.95 * 20
    assert len(ema.shadow) == 1 and ema.updates == 2


def test_the_ramp_weighs_early_updates_more():
    module, trainer = OneWeight(), SimpleNamespace(global_step=0)
    ema = WeightEMA(0.999)
    step_to(ema, trainer, module, 1, 10.0)  # decay 1/10: 0.1 * 0 + 0.9 * 10
    step_to(ema, trainer, module, 2, 20.0)  # decay 2/11: 2/11 * 9 + 9/11 * 20
    assert ema.shadow[0][0].item() == pytest.approx(9.0 * 2 / 11 + 20.0 * 9 / 11)


def test_accumulated_batches_without_an_optimizer_step_are_not_averaged():
    module, trainer = OneWeight(), SimpleNamespace(global_step=0)
    ema = WeightEMA(0.05)
    step_to(ema, trainer, module, 1, 10.0)
    step_to(ema, trainer, module, 1, 30.0)  # global_step unchanged: gradients were only accumulated
    assert ema.updates == 1 and ema.shadow[0][0].item() == pytest.approx(9.5)


def test_validation_sees_the_average_and_training_its_own_weights():
    module, trainer = OneWeight(), SimpleNamespace(global_step=0)
    ema = WeightEMA(0.05)
    step_to(ema, trainer, module, 1, 10.0)
    ema.on_validation_start(trainer, module)
    assert module.w.tolist() == pytest.approx([9.5, 9.5]) and ema.swapped
    ema.on_train_epoch_end(trainer, module)  # already swapped: stays the average
    assert module.w.tolist() == pytest.approx([9.5, 9.5])
    ema.on_train_batch_start(trainer, module, None, 0)
    assert module.w.tolist() == [10.0, 10.0] and not ema.swapped


def test_state_round_trip_keeps_the_swapped_out_copy():
    module, trainer = OneWeight(), SimpleNamespace(global_step=0)
    ema = WeightEMA(0.05)
    step_to(ema, trainer, module, 1, 10.0)
    ema.on_validation_start(trainer, module)
    restored = WeightEMA(0.05)
    restored.load_state_dict(ema.state_dict())
    assert restored.swapped and restored.updates == 1 and restored.shadow[0].tolist() == [10.0, 10.0]


def test_decay_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match=r"EMA decay must be in \(0, 1\), got 1"):
        WeightEMA(1)


@pytest.fixture(scope="module")
def ema_run(tmp_path_factory):
    return train(ema_config(tmp_path_factory.mktemp("ema"), 3), quiet=True)


@pytest.mark.slow
def test_checkpoint_and_export_hold_the_average(ema_run):
    last = torch.load(ema_run.run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    state = last["callbacks"]["WeightEMA[0.9]"]
    assert state["swapped"] and state["updates"] == 9  # 12 training examples, batches of 4, 3 epochs
    first = last["state_dict"]["model.encoder.embeddings.word_embeddings.weight"]
    # The callback keeps the training weights, the checkpoint the average: they differ after 9 steps.
    assert state["shadow"][0].shape == first.shape and not torch.equal(state["shadow"][0], first)
    best = torch.load(json.loads((ema_run.run_dir / "metrics.json").read_text())["best_checkpoint"],
                      weights_only=True)["state_dict"]
    exported = Predictor.from_pretrained(ema_run.model_dir).model.state_dict()
    for key, value in exported.items():
        assert torch.equal(value, best[f"model.{key}"]), key


@pytest.mark.slow
def test_resume_carries_the_average_on(ema_run):
    resumed = train(ema_config(ema_run.run_dir.parent.parent, 4), resume=True, quiet=True)
    state = torch.load(resumed.run_dir / "checkpoints" / "last.ckpt", weights_only=True)["callbacks"]["WeightEMA[0.9]"]
    assert resumed.run_dir == ema_run.run_dir and state["updates"] == 12
