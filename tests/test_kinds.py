"""Task kinds, label problems and snap modes: defined once (config.choices), each kind's behaviour in one place."""
import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from kold_span.config.choices import Problem, SnapMode, TaskKind
from kold_span.config.loading import load_config
from kold_span.config.schema import FUSE_METRICS
from kold_span.data.example import Annotation, Example
from kold_span.errors import ConfigError
from kold_span.evaluation.baselines import LABEL_SCORES
from kold_span.models.decoding import merge_windows, prediction
from kold_span.models.kinds import KINDS, Decoding, MergedExample, kind_of
from kold_span.models.kinds.problems import PROBLEMS, label_problem
from kold_span.models.network import probabilities, task_loss
from kold_span.models.tasks import Task
from kold_span.models.windows import collate

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "configs" / "experiment" / "demo.yaml"

# Tasks as a model directory saved before the kinds were enums stores them in its config.json.
OLD_TASKS = [
    {"name": "OFF", "kind": "sequence", "source": "OFF", "problem": "single", "weight": 1.0,
     "labels": ["false", "true"], "gate": None, "class_weights": [0.9, 1.1], "thresholds": []},
    {"name": "GRP", "kind": "sequence", "source": "GRP", "problem": "multi", "weight": 1.0,
     "labels": ["a", "b", "c"], "gate": None, "class_weights": [], "thresholds": [0.3, 0.6, 0.5]},
    {"name": "OFF_span", "kind": "span", "source": "OFF", "problem": "single", "weight": 1.0,
     "labels": [], "gate": "OFF", "class_weights": [], "thresholds": []},
]


def test_choices_are_their_strings_on_disk_and_in_dicts():
    assert TaskKind.SPAN == "span" and Problem("multi") is Problem.MULTI
    assert json.dumps({"kind": TaskKind.SPAN, "snap": SnapMode.EOJEOL}) == '{"kind": "span", "snap": "eojeol"}'
    assert f"{Problem.MULTI}/{SnapMode.MORPHEME}" == "multi/morpheme" and str(TaskKind.SEQUENCE) == "sequence"
    assert {"multi": 1}[Problem.MULTI] == 1


def test_parse_names_what_and_the_allowed_values():
    allowed = r"\('none', 'morpheme', 'eojeol', 'word'\)"
    with pytest.raises(ValueError, match=rf"^snap must be one of {allowed}, got 'words'$"):
        SnapMode.parse("words", "snap")
    with pytest.raises(ValueError, match=r"task 'x': kind must be one of \('sequence', 'span'\), got 'spam'"):
        Task("x", "spam", "OFF")


def test_every_kind_and_problem_has_its_behaviour_and_its_scores():
    assert set(KINDS) == set(TaskKind) and set(PROBLEMS) == set(Problem)
    assert all(callable(KINDS.get(k).scores) and callable(KINDS.get(k).tune_thresholds) for k in KINDS)
    assert all(callable(problem.scores) for problem in PROBLEMS.values())
    label_valued = {p for p in Problem if p.label_valued}
    assert label_valued == set(LABEL_SCORES) == set(FUSE_METRICS) == {Problem.SINGLE, Problem.MULTI}


def test_facts_the_config_checks():
    assert [TaskKind.SEQUENCE.takes_threshold(p) for p in Problem] == [False, True, False]
    assert TaskKind.SPAN.takes_threshold(Problem.SINGLE) and not TaskKind.SPAN.label_valued(Problem.SINGLE)
    assert [TaskKind.SEQUENCE.label_valued(p) for p in Problem] == [True, True, False]
    assert [TaskKind.SEQUENCE.single_label(p) for p in Problem] == [True, False, False]
    assert (TaskKind.SPAN.gated, TaskKind.SEQUENCE.gated) == (True, False)


def test_a_loaded_config_holds_members_and_gives_back_plain_strings():
    assert load_config(DEMO, ["align.snap=word"]).align.snap is SnapMode.WORD
    config = load_config(DEMO, ["align.snap=eojeol"])
    assert config.tasks[1].kind is TaskKind.SPAN and config.align.snap is SnapMode.EOJEOL
    plain = config.to_dict()
    assert [type(t["kind"]) for t in plain["tasks"]] == [str, str, str]
    assert (plain["tasks"][1]["kind"], plain["tasks"][0]["problem"], plain["align"]["snap"]) == ("span", "single",
                                                                                                 "eojeol")
    assert "kind: span" in yaml.safe_dump(plain)  # a plain-data dumper takes it: no enum objects left


@pytest.mark.parametrize("task, message", [
    ("{name: s, kind: spam, source: OFF}", r"tasks\[0\]\.kind must be one of \('sequence', 'span'\), got 'spam'"),
    ("{name: s, kind: 3, source: OFF}", r"tasks\[0\]\.kind' must be one of \('sequence', 'span'\), got 3"),
    ("{name: s, source: OFF, problem: many}", r"tasks\[0\]\.problem must be one of \('single', 'multi', 'soft'\)"),
])
def test_a_kind_or_problem_outside_the_set_is_a_config_error(task, message):
    with pytest.raises(ConfigError, match=message):
        load_config(DEMO, [f"tasks=[{task}]", "trainer.monitor=dev/loss"])


def test_tasks_from_an_old_style_config_dict_decode_as_before():
    tasks = [Task.from_dict(d) for d in OLD_TASKS]
    assert [(t.kind, t.problem) for t in tasks] == [(TaskKind.SEQUENCE, Problem.SINGLE),
                                                     (TaskKind.SEQUENCE, Problem.MULTI),
                                                     (TaskKind.SPAN, Problem.SINGLE)]
    assert json.dumps([t.to_dict() for t in tasks]) == json.dumps(OLD_TASKS)  # saved again byte for byte
    assert {type(t.to_dict()[key]) for t in tasks for key in ("kind", "problem")} == {str}  # plain data
    assert [kind_of(t).num_outputs(t) for t in tasks] == [2, 3, 3]
    off, grp, span = tasks
    # softmax(0, ln 3) = (1/4, 3/4); sigmoid(0) = 1/2, sigmoid(ln 3) = 3/4
    off_probs = probabilities(off, torch.tensor([[0.0, math.log(3)]]))[0].numpy()
    grp_probs = probabilities(grp, torch.tensor([[0.0, 0.0, math.log(3)]]))[0].numpy()
    merged = MergedExample(sequence_probs={"OFF": off_probs, "GRP": grp_probs}, token_offsets=[(0, 2), (3, 5)],
                           token_probs={"OFF_span": np.array([[0.1, 0.8, 0.1], [0.7, 0.2, 0.1]])})
    # GRP: a 0.5 ≥ 0.3, b 0.5 < 0.6, c 0.75 ≥ 0.5; the span: "ab" is B, "cd" O; OFF says true, the gate opens
    assert prediction(Decoding(tasks), merged, "ab cd") == {
        "labels": {"OFF": {"label": True, "probs": {"false": 0.25, "true": 0.75}},
                   "GRP": {"label": ["a", "c"], "probs": {"a": 0.5, "b": 0.5, "c": 0.75}}},
        "spans": [{"type": "OFF", "start": 0, "end": 2, "text": "ab", "score": 0.9}]}
    closed = MergedExample(sequence_probs={"OFF": off_probs[::-1], "GRP": grp_probs},
                           token_offsets=merged.token_offsets, token_probs=merged.token_probs)
    assert prediction(Decoding(tasks), closed, "ab cd")["spans"] == []


def window(offsets, text_mask):
    return {"input_ids": [1] * len(offsets), "attention_mask": [1] * len(offsets),
            "token_type_ids": [0] * len(offsets), "offsets": offsets, "text_mask": text_mask}


def test_each_kind_and_problem_attaches_and_collates_its_targets():
    tasks = [Task("s", "sequence", "y", labels=("false", "true")),
             Task("m", "sequence", "g", problem="multi", labels=("a", "b", "c")),
             Task("v", "sequence", "y", problem="soft", labels=("false", "true")),
             Task("t", "span", "OFF")]
    votes = [Annotation("1", labels={"y": True}), Annotation("2", labels={"y": True}),
             Annotation("3", labels={"y": True}), Annotation("4", labels={"y": False})]
    labelled = Example("1", "ab cd", labels={"y": True, "g": ["b"]}, spans={"OFF": [(3, 5)]}, annotations=votes)
    bare = Example("2", "ab")
    first = [window([[0, 0], [0, 2], [3, 5], [0, 0]], [0, 1, 1, 0]), window([[0, 0], [3, 5], [0, 0]], [0, 1, 0])]
    second = [window([[0, 0], [0, 2], [0, 0]], [0, 1, 0])]
    for example, windows in ((labelled, first), (bare, second)):
        for task in tasks:
            kind_of(task).add_targets(task, example, windows)
    # a sequence target is the example's, on each of its windows; span tags are each window's own
    assert [w["target_s"] for w in first] == [1, 1] and second[0]["target_s"] == -100
    assert first[1]["target_m"] == [0.0, 1.0, 0.0] and second[0]["target_m"] == []
    assert first[0]["target_v"] == [0.25, 0.75] and second[0]["target_v"] == []
    assert [w["tags_t"] for w in first] == [[-100, 0, 1, -100], [-100, 1, -100]]
    batch = collate(first[:1] + second, tasks, pad_id=0)
    assert batch["target_s"].tolist() == [1, -100]
    assert batch["target_m"].tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]] and batch["mask_m"].tolist() == [1, 0]
    assert batch["target_v"].tolist() == [[0.25, 0.75], [0.0, 0.0]] and batch["mask_v"].tolist() == [1, 0]
    assert batch["tags_t"].tolist() == [[-100, 0, 1, -100], [-100, 0, -100, -100]]  # padded to 4 tokens


def test_soft_loss_is_the_cross_entropy_to_the_vote_shares_of_the_masked_in_examples():
    task = Task("v", "sequence", "y", problem="soft", labels=("false", "true"))
    logits = torch.tensor([[0.0, math.log(3)], [5.0, -5.0]])  # log-softmax of row 1: ln 1/4, ln 3/4
    batch = {"target_v": torch.tensor([[0.5, 0.5], [0.0, 0.0]]), "mask_v": torch.tensor([1.0, 0.0])}
    expected = -(0.5 * math.log(0.25) + 0.5 * math.log(0.75))
    assert task_loss(task, logits, batch).item() == pytest.approx(expected, rel=1e-6)
    assert task_loss(task, logits, {**batch, "mask_v": torch.tensor([0.0, 0.0])}).item() == 0.0


def test_merge_takes_each_token_from_its_most_central_window_and_the_surest_true():
    tasks = [Task("s", "sequence", "y", labels=("false", "true")), Task("t", "span", "OFF")]
    # text tokens (0,1) (2,3) (4,5) in window 0 and (2,3) (4,5) (6,7) in windows 1 and 2: (2,3) sits one
    # token from an edge in window 0 and at the edge in window 1, (4,5) the other way round; window 2
    # ties with window 1 everywhere, and the first of a tie wins
    windows = [window([[0, 0], [0, 1], [2, 3], [4, 5], [0, 0]], [0, 1, 1, 1, 0]),
               window([[0, 0], [2, 3], [4, 5], [6, 7], [0, 0]], [0, 1, 1, 1, 0]),
               window([[0, 0], [2, 3], [4, 5], [6, 7], [0, 0]], [0, 1, 1, 1, 0])]
    rows = [np.full((5, 3), float(w)) + np.arange(5)[:, None] / 10 for w in range(3)]  # window w, position i: w + i/10
    probs = [{"s": np.array(s), "t": r} for s, r in zip([[0.2, 0.8], [0.4, 0.6], [0.3, 0.7]], rows)]
    merged = merge_windows(tasks, windows, probs)
    assert merged.token_offsets == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert merged.token_probs["t"][:, 0].tolist() == pytest.approx([0.1, 0.2, 1.2, 1.3])
    assert merged.sequence_probs["s"].tolist() == pytest.approx([0.2, 0.8])  # P(true) of the surest window


def test_label_problems_decode_label_strings_as_the_ngram_and_baselines_read_them():
    assert label_problem("single").decode_probs({"b": 0.4, "a": 0.4, "c": 0.2}) == "a"  # a tie: the smallest
    assert label_problem(Problem.MULTI).decode_probs({"b": 0.4, "a": 0.6}, threshold=0.4) == ["a", "b"]
    assert label_problem("multi").gold_label(["b", True, "b"]) == ["b", "true"]
    with pytest.raises(ValueError, match="distribution of votes"):
        label_problem("soft").gold_label("true")


NAMES = {member.value for member in (*TaskKind, *Problem)}  # "sequence", "span", "single", "multi", "soft"


def _names_in(node: ast.AST) -> list[str]:
    """The kind or problem names a comparison operand or a case pattern spells as string literals."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _names_in(element)]
    if isinstance(node, ast.MatchValue):
        return _names_in(node.value)
    if isinstance(node, ast.MatchOr):
        return [name for pattern in node.patterns for name in _names_in(pattern)]
    if isinstance(node, ast.MatchAs) and node.pattern is not None:
        return _names_in(node.pattern)
    return []


def string_comparisons(source: str) -> list[tuple[int, str]]:
    """Where code compares something with a task kind's or label problem's name instead of its member.

    Caught: `==`, `!=`, `is`, `is not`, `in`, `not in` with the name on either side, alone or in a tuple,
    list or set literal; `case "span":` (or `case "span" | "x":`) in a `match`; and a dict literal keyed
    by names (a dispatch table, `{"span": f}[kind]`). A name as a value (`Task("x", "span", "OFF")`,
    `kind=TaskKind("span")`) is no comparison and is left alone.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            names = [name for operand in (node.left, *node.comparators) for name in _names_in(operand)]
        elif isinstance(node, ast.match_case):
            names = _names_in(node.pattern)
        elif isinstance(node, ast.Dict):
            names = [name for key in node.keys if key is not None for name in _names_in(key)]
        else:
            continue
        found += [(getattr(node, "lineno", None) or node.pattern.lineno, name) for name in names]
    return sorted(found)


def test_the_guard_catches_every_way_of_comparing_with_a_name():
    source = """\
if kind in ("span",): pass
if "span" == kind: pass
if kind != 'sequence': pass
if task.problem is not "multi": pass
if problem not in ["soft", "x"]: pass
ok = task.kind.value == "single" or kind in {"span": f, "other": g}
match kind:
    case "span":
        pass
    case TaskKind.SEQUENCE:
        pass
match problem:
    case "x" | "soft" as p:
        pass
    case (TaskKind.SPAN | "multi"):
        pass
handle = {"soft": f, TaskKind.SPAN: g}.get(problem)
"""
    assert string_comparisons(source) == [(1, "span"), (2, "span"), (3, "sequence"), (4, "multi"), (5, "soft"),
                                          (6, "single"), (6, "span"), (8, "span"), (13, "soft"), (15, "multi"),
                                          (17, "soft")]


def test_the_guard_leaves_members_values_and_other_strings_alone():
    source = """\
if kind is TaskKind.SPAN or task.problem == Problem.MULTI or kind in (TaskKind.SPAN, TaskKind.SEQUENCE): pass
task = Task("x", "span", "OFF", problem="multi")
kind = TaskKind("span")
if fmt == "parquet" or tag in ("b", "i") or snap != "none": pass
handle = {TaskKind.SPAN: f, "kind": "span"}[kind]
match kind:
    case TaskKind.SPAN:
        pass
    case "parquet":
        pass
"""
    assert string_comparisons(source) == []


def test_no_module_compares_a_kind_or_problem_with_a_name():
    defining = ROOT / "kold_span" / "config" / "choices.py"
    found = [f"{path.relative_to(ROOT)}:{line}: {name!r}" for path in sorted((ROOT / "kold_span").rglob("*.py"))
             if path != defining for line, name in string_comparisons(path.read_text(encoding="utf-8"))]
    assert found == []
