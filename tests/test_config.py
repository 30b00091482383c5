"""Configs: split by concern, validated before any work, overrides."""
import dataclasses
import re
from typing import Optional

import pytest
import yaml

from kold_span.config.loading import load_config
from kold_span.config.overrides import parse_override
from kold_span.errors import ConfigError

from conftest import CONFIGS, CORPORA, DEMO, ROOT


def test_demo_config_merges_its_parts():
    config = load_config(DEMO)
    assert config.data.reader == "kold"  # from configs/data/kold_sample.yaml
    assert config.model.encoder.scratch.hidden_size == 128  # from configs/model/scratch_tiny.yaml
    assert config.trainer.accelerator == "cpu"  # from configs/trainer/cpu.yaml
    assert config.trainer.max_epochs == 8  # the experiment's own override
    assert [t.name for t in config.tasks] == ["OFF", "OFF_span", "TGT_span"]


def test_labels_such_as_off_stay_strings():
    config = load_config(DEMO)
    assert config.tasks[0].source == "OFF"
    assert config.data.stratify == "OFF"


def test_set_overrides_win_and_are_typed():
    config = load_config(DEMO, ["trainer.max_epochs=3", "context=none", "model.encoder.scratch.layers=1"])
    assert config.trainer.max_epochs == 3
    assert config.context.mode == "none"
    assert config.model.encoder.scratch.layers == 1
    assert parse_override("a.b=[1, 2]") == {"a": {"b": [1, 2]}}


def test_exponent_floats_without_a_dot_are_numbers():
    # YAML 1.1 (PyYAML) reads 1e-4 as the string '1e-4'; a float key takes it as 0.0001.
    config = load_config(DEMO, ["trainer.lr=1e-4", "trainer.weight_decay=5E-3", "trainer.warmup_ratio=.5e-1"])
    assert (config.trainer.lr, config.trainer.weight_decay, config.trainer.warmup_ratio) == (0.0001, 0.005, 0.05)
    with pytest.raises(ConfigError, match="'trainer.lr' must be float, got '1e-4x'"):
        load_config(DEMO, ["trainer.lr=1e-4x"])
    with pytest.raises(ConfigError, match="'trainer.max_epochs' must be int, got 10.0"):
        load_config(DEMO, ["trainer.max_epochs=1e1"])


def test_plain_values_follow_yaml_1_2_not_1_1():
    config = load_config(DEMO, ["seed=013", "run=2024-01-01", "trainer.overfit_batches=2", "trainer.devices=[0]",
                                "tasks=[{name: OFF, kind: sequence, source: OFF, problem: multi, threshold: 4e-1}]",
                                "trainer.monitor=dev/loss"])
    assert config.seed == 13  # YAML 1.1: octal 11
    assert config.run == "2024-01-01"  # YAML 1.1: a date
    assert config.trainer.overfit_batches == 2 and isinstance(config.trainer.overfit_batches, int)
    assert config.trainer.devices == [0]
    assert config.tasks[0].threshold == 0.4
    assert load_config(DEMO, ["run=13"]).run == "13"
    assert load_config(DEMO, ["run=12:30"]).run == "12:30"  # YAML 1.1: 750, base 60


def test_invalid_yaml_in_an_override_names_the_argument():
    with pytest.raises(ConfigError, match=r"--set trainer.lr=\[1: invalid YAML value"):
        load_config(DEMO, ["trainer.lr=[1"])


def test_mistyped_key_names_key_file_and_allowed_keys(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("trainer:\n  max_epoch: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert "trainer.max_epoch" in message and str(path) in message and "max_epochs" in message


def test_mistyped_key_in_a_part_file_names_that_file():
    with pytest.raises(ConfigError, match=r"--set trainer.lr_rate=0.1: unknown key 'trainer.lr_rate'"):
        load_config(DEMO, ["trainer.lr_rate=0.1"])


@pytest.mark.parametrize("override, fragment", [
    ("trainer.max_epochs=many", "trainer.max_epochs' must be int"),
    ("align.snap=words", "align.snap must be one of"),
    ("context.mode=headline", "context.mode must be one of"),
    ("model.encoder.name_or_path=klue/roberta-base", "exactly one of"),
    ("model.pooling=max", "model.pooling must be one of first, mean"),
    ("trainer.lr=-1e-4", r"--set trainer.lr=-1e-4: key 'trainer.lr' must be above 0, got -0.0001"),
    ("trainer.warmup_ratio=1.5", r"key 'trainer.warmup_ratio' must be in \[0, 1\), got 1.5"),
    ("trainer.batch_size=0", r"key 'trainer.batch_size' must be at least 1, got 0"),
    ("trainer.monitor=val/loss", r"trainer.monitor 'val/loss' names no metric of this config: use one of dev/loss"),
    ("trainer.monitor=dev/OFFF/macro_f1",
     r"or dev/<task>/<metric> with a task of \['OFF', 'OFF_span', 'TGT_span'\]"),
    ("trainer.ema_decay=1.0", r"key 'trainer.ema_decay' must be in \(0, 1\), got 1.0"),
    ("trainer.checkpoint_every_n_steps=0", r"key 'trainer.checkpoint_every_n_steps' must be at least 1, got 0"),
    ("trainer.checkpoint_every_n_steps=-5", r"key 'trainer.checkpoint_every_n_steps' must be at least 1, got -5"),
    # issue 54: each of these trained on, or crashed with a raw traceback from Lightning, torch or Python
    ("trainer.lr=.inf", r"key 'trainer.lr' must be a finite number, got inf"),
    ("trainer.lr=0", r"key 'trainer.lr' must be above 0, got 0.0"),
    ("trainer.max_epochs=-3", r"key 'trainer.max_epochs' must be at least 1, got -3"),
    ("trainer.max_steps=-7", r"key 'trainer.max_steps' must be -1 or at least 1, got -7"),
    ("seed=12345678901234567890", r"key 'seed' must be in \[0, 4294967295\], got 12345678901234567890"),
    ("model.dropout=2", r"key 'model.dropout' must be in \[0, 1\), got 2.0"),
    ("trainer.threads=-1", r"key 'trainer.threads' must be in \[1, 4096\], got -1"),
    ("trainer.num_workers=-1", r"key 'trainer.num_workers' must be in \[0, 1024\], got -1"),
    ("data.limit=0", r"key 'data.limit' must be at least 1, got 0"),
    ("data.dev_fraction=-0.5", r"key 'data.dev_fraction' must be in \[0, 1\), got -0.5"),
    ("data.test_fraction=1", r"key 'data.test_fraction' must be in \[0, 1\), got 1.0"),
    ("model.encoder.scratch.layers=100000", r"key 'model.encoder.scratch.layers' must be in \[1, 256\], got 100000"),
    ("model.encoder.scratch.hidden_size=130",
     r"model.encoder.scratch.hidden_size \(130\) must be a multiple of model.encoder.scratch.heads \(4\)"),
    ("tasks=[{name: a.b, kind: sequence, source: OFF}]", r"tasks\[0\].name must be a name of letters, digits and _"),
    ("tasks=[{name: '', kind: sequence, source: OFF}]", r"tasks\[0\].name must be a name of letters, digits and _"),
    ("tasks=[{name: OFF, kind: sequence, source: OFF, weight: .nan}]", r"key 'tasks\[0\].weight' must be a finite"),
    ("trainer.overfit_batches=1.5", r"trainer.overfit_batches as a float is a share of the batches, in \[0, 1\]"),
    ("trainer.devices=[-2]", r"key 'trainer.devices\[0\]' must be -1 or at least 0, got -2"),
    ("model.encoder.scratch.max_position=1e400", r"key 'model.encoder.scratch.max_position' must be int"),
])
def test_bad_values_fail_before_any_work(override, fragment):
    with pytest.raises(ConfigError, match=fragment):
        load_config(DEMO, [override] + (["model.encoder.scratch.heads=4"] if "hidden_size" in override else []))


def test_checkpoint_every_n_steps_is_off_unless_set():
    assert load_config(DEMO).trainer.checkpoint_every_n_steps is None
    assert load_config(DEMO, ["trainer.checkpoint_every_n_steps=500"]).trainer.checkpoint_every_n_steps == 500
    assert load_config(DEMO, ["trainer.checkpoint_every_n_steps=null"]).trainer.checkpoint_every_n_steps is None


def test_switching_to_a_pretrained_encoder():
    config = load_config(DEMO, ["model.encoder.scratch=null", "model.encoder.name_or_path=klue/roberta-base"])
    assert config.model.encoder.name_or_path == "klue/roberta-base"


def test_missing_default_part_is_named(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "model").mkdir()
    exp = tmp_path / "experiment"
    exp.mkdir()
    (exp / "x.yaml").write_text("defaults:\n  data: nowhere\n")
    with pytest.raises(ConfigError, match="nowhere.yaml does not exist"):
        load_config(exp / "x.yaml")


def test_a_bad_value_names_every_source_it_was_merged_from(monkeypatch):
    monkeypatch.chdir(ROOT)  # the file is named as given, its parts relative to the working directory
    with pytest.raises(ConfigError, match=r"^configs/experiment/demo.yaml \+ configs/data/kold_sample.yaml \+ "
                                          r".* \+ --set align.snap=eojul: align.snap must be one of"):
        load_config("configs/experiment/demo.yaml", ["align.snap=eojul"])


def test_a_config_file_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_bytes(b"experiment: x\nseed: 7  # caf\xe9 in Latin-1\n")
    with pytest.raises(ConfigError, match=r"exp\.yaml:2: not UTF-8 text; save the file as UTF-8"):
        load_config(path)


def test_build_dataclass_names_a_missing_key_without_a_default():
    from dataclasses import dataclass

    from kold_span.config import build_dataclass

    @dataclass
    class Entry:
        reader: str
        aim: Optional[float] = None

    assert build_dataclass(Entry, {"reader": "beep", "aim": 1}, "t.yaml", "corpora.beep.") == Entry("beep", 1.0)
    with pytest.raises(ConfigError, match=r"^t.yaml: missing key 'corpora.beep.reader'$"):
        build_dataclass(Entry, {"aim": 0.5}, "t.yaml", "corpora.beep.")
    with pytest.raises(ConfigError, match=r"t.yaml: unknown key 'corpora.beep.aims'; allowed keys here: reader, aim"):
        build_dataclass(Entry, {"reader": "beep", "aims": 0.5}, "t.yaml", "corpora.beep.")


@pytest.mark.parametrize("negatives, message", [
    ("{reader: jsonl}", "data.negatives needs a reader and a path"),
    ("{reader: jsonl, path: x.jsonl}", "data.negatives.labels is empty"),
    ("{reader: jsonl, path: x.jsonl, labels: {OFF: false}, holdout_fraction: 1.0}",
     "key 'data.negatives.holdout_fraction' must be in [0, 1), got 1.0"),
    ("{reader: jsonl, path: x.jsonl, labels: {OFF: false}, limit: 0}", "key 'data.negatives.limit' must be at least 1"),
    ("{reader: jsonl, path: x.jsonl, labels: {OFF: false}, holdout_fraction: 0.6, dev_fraction: 0.4}",
     "data.negatives: holdout_fraction + dev_fraction must leave texts to train on, got 0.6 + 0.4"),
    ("{reader: jsonl, path: x.jsonl, labels: {OFF: true}, keep_spans: true}",
     "data.negatives.keep_spans: a source of positives holds nothing out as benign; set holdout_fraction: 0"),
])
def test_bad_negatives_are_named(negatives, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(DEMO, [f"data.negatives={negatives}"])


@pytest.mark.parametrize("negatives, message", [
    ("[{reader: jsonl, path: x.jsonl, labels: {OFF: false}}, {reader: jsonl, path: y.jsonl}]",
     "data.negatives[1].labels is empty"),
    ("[{reader: jsonl, path: x.jsonl, labels: {OFF: false}, lable: 1}]", "unknown key 'data.negatives[0].lable'"),
    ("{reader: jsonl, path: x.jsonl, labels: {OFF: false}, lable: 1}", "unknown key 'data.negatives.lable'"),
    ("[]", "data.negatives is an empty list"),
])
def test_a_list_of_negatives_sources_is_checked_source_by_source(negatives, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(DEMO, [f"data.negatives={negatives}"])


EXPERIMENT_FILES = sorted((CONFIGS / "experiment").rglob("*.yaml"))


@pytest.mark.parametrize("path", EXPERIMENT_FILES, ids=lambda p: str(p.relative_to(CONFIGS / "experiment")))
def test_every_shipped_experiment_file_loads(path):
    config = load_config(path)
    assert config.tasks and config.data.reader


# What each KOLD experiment file beside kold_gs_e5.yaml changes (tasks compared by name; the rest key by key).
KOLD_VARIANTS = {"kold_gs_e5_span_only.yaml": (set(), ["OFF_span"]),
                 "kold_gs_e5_type_only.yaml": ({"trainer.monitor"}, ["TGT"]),
                 "kold_gs_e5_dialect.yaml": ({"data.reader_options.side", "data.reader_options.skip_bad"},
                                             ["OFF_span", "TGT"]),
                 "kold_gs_e5_negatives.yaml": ({"data.negatives"}, ["OFF", "OFF_span", "TGT"])}


@pytest.mark.parametrize("name", sorted(KOLD_VARIANTS))
def test_the_kold_variants_are_kold_gs_e5_with_one_change_each(name):
    """The joint-vs-separate, dialect and negatives files: the same encoder and settings as the joint file."""
    def flat(value, prefix=""):
        if not isinstance(value, dict):
            return {prefix.rstrip("."): value}
        return {k: v for key, inner in value.items() for k, v in flat(inner, f"{prefix}{key}.").items()}

    quality = CONFIGS / "experiment" / "quality"
    base, variant = (load_config(quality / f).to_dict() for f in ("kold_gs_e5.yaml", name))
    changed, tasks = KOLD_VARIANTS[name]
    assert [t["name"] for t in variant["tasks"]] == tasks
    base_tasks = {t["name"]: t for t in base["tasks"]}
    for task in variant["tasks"]:  # a task both files have is the same task; the gate is what the OFF head adds
        if task["name"] in base_tasks:
            assert {k: v for k, v in task.items() if k != "gate"} == {k: v for k, v in base_tasks[task["name"]].items()
                                                                       if k != "gate"}
    base.pop("tasks"), variant.pop("tasks")
    base, variant = flat(base), flat(variant)
    assert {key for key in base.keys() | variant.keys() if base.get(key) != variant.get(key)} == changed


def test_the_kold_negatives_file_reads_benign_comments_of_both_corpora(tmp_path):
    """Its filters on invented rows of BEEP! and UnSmile: neither hate nor bias; `clean` alone. The functional
    suite's Korean train templates: benign ones without spans, hateful ones offensive with their spans; a fifth of
    its pairs in dev, each pair whole."""
    from kold_span.corpora.experiment import BENIGN, load_splits
    from kold_span.corpora.functional import SUITE

    config = load_config(CONFIGS / "experiment" / "quality" / "kold_gs_e5_negatives.yaml", [
        f"data.train={CORPORA / 'kold_gs'}", f"data.test={CORPORA / 'kold_gs' / 'valid.json'}",
        "data.reader_options={skip_bad: true}"])
    for source in config.data.negative_sources():  # the shipped filters, on the invented files
        if source.reader == "functional":
            assert source.reader_options == {"lang": "ko", "part": "train"}
            source.path = str(SUITE)  # the shipped path is read from the checkout
        else:
            source.path, source.holdout_fraction, source.dev_fraction = str(CORPORA / source.reader), 0.0, 0.0
    splits = load_splits(config)
    negatives = [ex for ex in splits["train"] if ex.id.startswith("negative:")]
    assert [(ex.id, ex.text, ex.labels) for ex in negatives[:2]] == [
        ("negative:beep-train-0", "진짜 연기 너무 잘한다 ㅎㅎ", {"OFF": False}),
        ("negative:unsmile_train_v1.0-0", '그 "전문가"들 말은 믿지 마라', {"OFF": False})]
    functional = [ex for split in ("train", "dev") for ex in splits[split] if ex.id.startswith("negative:functional:")]
    assert {ex.meta["part"] for ex in functional} == {"train"} and {ex.meta["lang"] for ex in functional} == {"ko"}
    assert all(ex.labels == {"OFF": True} and ex.spans["OFF"] for ex in functional if ex.id.endswith(tuple(
        f".hateful:{i}" for i in range(12))))
    assert all(ex.labels == {"OFF": False} and not ex.spans for ex in functional if ".benign:" in ex.id)
    in_dev = {ex.meta["group"] for ex in splits["dev"] if ex.id.startswith("negative:functional:")}
    in_train = {ex.meta["group"] for ex in negatives if ex.id.startswith("negative:functional:")}
    assert in_dev and not in_dev & in_train  # whole pairs: a family is in dev or in train
    assert round(len(in_dev) / len(in_dev | in_train), 1) == 0.2
    assert splits[BENIGN] == []


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    from kold_span.errors import ConfigError

    lines = ["data:", "  filter:", "    a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):  # 10^9 strings once expanded
        name, previous = chr(97 + level), chr(96 + level)
        lines.append(f"    {name}: &{name} [{', '.join(['*' + previous] * 10)}]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message == (f"{path}: invalid YAML: its aliases expand to more than 4000000 values and characters "
                       "(an alias bomb?)")


def test_the_alias_bound_counts_characters_not_values(tmp_path):
    # issue 54: a long string aliased many times passed a bound that counted 2,001 values
    from kold_span.config.yaml12 import yaml_load

    path = tmp_path / "long.yaml"
    path.write_text("data:\n  filter:\n    a: &a " + "x" * 10_000 + "\n    b: [" + ", ".join(["*a"] * 2000) + "]\n",
                    encoding="utf-8")
    with pytest.raises(ConfigError, match=r"long.yaml: invalid YAML: its aliases expand to more than 4000000"):
        load_config(path)
    with pytest.raises(yaml.YAMLError, match="its aliases expand"):  # the 5 MB × 2,000, given as text
        yaml_load("a: &a " + "x" * 5_000_000 + "\nb: [" + ", ".join(["*a"] * 2000) + "]\n")
    assert len(yaml_load("a: &a " + "x" * 1000 + "\nb: [" + ", ".join(["*a"] * 100) + "]\n")["b"]) == 100


@pytest.mark.parametrize("text, where, problem", [
    ("trainer:\n\tlr: 0.1\n", 2, "found character '\\t' that cannot start any token"),
    ("experiment: demo\ntasks:\n  - {name: OFF, kind: sequence\n", 4,
     "expected ',' or '}', but got '<stream end>' (while parsing a flow mapping, line 3)"),
])
def test_a_yaml_syntax_error_is_one_line_naming_the_file_and_line(tmp_path, text, where, problem):
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}:{where}: invalid YAML: {problem}"


def test_a_key_written_twice_is_an_error_naming_both_lines(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("trainer:\n  lr: 0.1\n  max_epochs: 2\n  lr: 0.2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"twice.yaml: invalid YAML: key 'lr' appears twice in one mapping, "
                                          r"on line 2 and on line 4"):
        load_config(path)
    with pytest.raises(ConfigError, match="key 'lr' appears twice"):
        load_config(DEMO, ["trainer={lr: 0.1, lr: 0.2}"])
    merged = tmp_path / "merged.yaml"  # a `<<` merge then an override is no duplicate
    merged.write_text("trainer:\n  <<: {lr: 0.1, max_epochs: 2}\n  lr: 0.2\n", encoding="utf-8")
    assert load_dataclass_trainer(merged) == (0.2, 2)


def load_dataclass_trainer(path):
    from kold_span.config.loading import load_dataclass
    from kold_span.config.schema import TrainerConfig

    @dataclasses.dataclass
    class Only:
        trainer: TrainerConfig = dataclasses.field(default_factory=TrainerConfig)

    trainer = load_dataclass(Only, path).trainer
    return trainer.lr, trainer.max_epochs


@pytest.mark.parametrize("text", ["a: " + "[" * 10_000 + "]" * 10_000, "".join(" " * i + "a:\n" for i in range(2000))])
def test_yaml_nested_ten_thousand_deep_is_a_config_error(tmp_path, text):
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"deep.yaml: invalid YAML: nested deeper than 64 levels"):
        load_config(path)
    with pytest.raises(ConfigError, match="a key of more than 64 parts"):
        load_config(DEMO, ["data.filter." + ".".join(["a"] * 10_000) + "=1"])


def test_a_config_that_never_ends_is_refused(monkeypatch):
    with pytest.raises(ConfigError, match=r"^/dev/zero: a file longer than 4 MiB; set KOLD_SPAN_MAX_CONFIG_BYTES"):
        load_config("/dev/zero")
    monkeypatch.setenv("KOLD_SPAN_MAX_CONFIG_BYTES", "100")
    with pytest.raises(ConfigError, match=r"demo.yaml: a file longer than 100 bytes; set KOLD_SPAN_MAX_CONFIG_BYTES"):
        load_config(DEMO)
    monkeypatch.setenv("KOLD_SPAN_MAX_CONFIG_BYTES", "-1")
    with pytest.raises(ConfigError, match=r"KOLD_SPAN_MAX_CONFIG_BYTES='-1': must be a whole number of bytes"):
        load_config(DEMO)


def test_a_huge_bad_value_is_cut_short_in_the_message(tmp_path):
    from kold_span.errors import ConfigError

    path = tmp_path / "run.yaml"
    path.write_text("trainer:\n  max_epochs: [" + ", ".join(["1"] * 5000) + "]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "[1, 1, 1, 1, 1, 1, ...]" in str(caught.value) and len(str(caught.value)) < 300


def numeric_fields(cls, prefix=""):
    """(dotted key, field) of every int or float field of a config dataclass and the dataclasses inside it."""
    import typing

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        types = set(typing.get_args(hints[f.name])) | {hints[f.name]}
        types |= {arg for t in list(types) for arg in typing.get_args(t)}  # Optional[list[int]], Union[..., list[int]]
        if types & {int, float}:
            yield f"{prefix}{f.name}", f
        for inner in types:
            if dataclasses.is_dataclass(inner):
                yield from numeric_fields(inner, f"{prefix}{f.name}.")


def test_every_numeric_key_has_a_range():
    from kold_span.config.binding import field_bounds
    from kold_span.config.schema import Config, PretrainConfig

    keys = [key for cls in (Config, PretrainConfig) for key, f in numeric_fields(cls) if field_bounds(f) is None]
    assert keys == []
    assert len(list(numeric_fields(Config))) > 40  # the walk reaches the sections, tasks and the scratch encoder
