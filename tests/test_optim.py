"""The optimizer groups and learning-rate schedule shared by fine-tuning and pretraining (training/optim.py)."""
import pytest
import torch
from torch import nn

from kold_span.training.optim import adamw, decay_groups, lr_factor, warmup_schedule, warmup_steps


class Toy(nn.Module):
    """One parameter of each kind a model has."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 3)
        self.proj = nn.Linear(3, 2)
        self.ln_f = nn.LayerNorm(2)  # a norm not named LayerNorm
        self.scale = nn.Parameter(torch.ones(()))
        self.frozen = nn.Linear(2, 2)
        self.frozen.requires_grad_(False)


def names(model, params):
    by_id = {id(p): n for n, p in model.named_parameters()}
    return [by_id[id(p)] for p in params]


def test_matrices_decay_vectors_and_scalars_do_not_frozen_are_left_out():
    model = Toy()
    decayed, plain = decay_groups(model.parameters(), 0.05)
    assert names(model, decayed["params"]) == ["embed.weight", "proj.weight"]
    # A module's own parameters come before its children's.
    assert names(model, plain["params"]) == ["scale", "proj.bias", "ln_f.weight", "ln_f.bias"]
    assert (decayed["weight_decay"], plain["weight_decay"]) == (0.05, 0.0)
    optimizer = adamw(model.parameters(), lr=0.1, weight_decay=0.05)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.05, 0.0]
    assert all(g["lr"] == 0.1 for g in optimizer.param_groups)


def test_the_shape_rule_picks_what_the_name_rule_of_earlier_training_picked():
    """On the encoders built here, so fine-tuning results did not change when the rule did."""
    from transformers import BertConfig, BertForMaskedLM

    from kold_span.config.schema import ScratchEncoderConfig
    from kold_span.models.backbones import scratch_encoder
    from kold_span.models.network import MultiTaskModel
    from kold_span.models.tasks import Task

    earlier = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")  # training/module.py's names
    encoder = scratch_encoder(ScratchEncoderConfig(hidden_size=8, layers=1, heads=1, intermediate_size=8,
                                                   max_position=8), vocab_size=20, pad_id=0)
    tasks = [Task("OFF", "sequence", "OFF", labels=("false", "true")), Task("OFF_span", "span", "OFF")]
    masked_lm = BertForMaskedLM(BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                                           intermediate_size=8, max_position_embeddings=8))
    for model in (MultiTaskModel(encoder, tasks), masked_lm):
        _, plain = decay_groups(model.parameters(), 0.01)
        assert names(model, plain["params"]) == [n for n, _ in model.named_parameters() if n.endswith(earlier)]


def test_warmup_steps_round_down():
    assert [warmup_steps(30, 0.06), warmup_steps(100, 0.1), warmup_steps(7, 0.5), warmup_steps(9, 0.0)] == [1, 10, 3, 0]


def test_lr_factor_rises_then_falls_without_a_step_at_zero():
    assert [lr_factor(s, 5, 2) for s in range(6)] == pytest.approx([1 / 3, 2 / 3, 1.0, 2 / 3, 1 / 3, 0.0])
    assert [lr_factor(s, 4, 0) for s in range(5)] == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])
    assert lr_factor(4.5, 5, 2) == pytest.approx(0.5 / 3)  # a time limit counts elapsed time as steps
    assert lr_factor(7, 5, 2) == 0.0


def test_warmup_schedule_sets_each_steps_learning_rate():
    optimizer = adamw(nn.Linear(2, 2).parameters(), lr=0.3, weight_decay=0.01)
    schedule = warmup_schedule(optimizer, total=5, warmup_ratio=0.4)  # 2 warm-up steps
    rates = []
    for _ in range(5):
        rates.append([g["lr"] for g in optimizer.param_groups])
        optimizer.step()
        schedule.step()
    assert rates == [pytest.approx([r, r]) for r in (0.1, 0.2, 0.3, 0.2, 0.1)]
