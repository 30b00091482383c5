"""The functional suite (`corpora.functional`), its report (`evaluation.functional`), the bias AUCs and the command."""
from __future__ import annotations

import ast
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from kold_span import corpora
from kold_span.cli.main import main
from kold_span.corpora.functional import SUITE, expand, generate, held_out_families, korean_particle
from kold_span.errors import ArgumentError, DataError
from kold_span import metrics
from kold_span.evaluation.functional import case_outcome, measure, offensive_task, predict_cases
from kold_span.models.kinds import MergedExample
from kold_span.models.tasks import Task

from conftest import ROOT, untrained_model

BENIGN = ("neutral_identity", "positive_identity", "counter_quote", "counter_reference", "negated_abuse",
          "reclaimed_term", "profanity_untargeted", "object_abuse")
CASES = generate()


# --------------------------------------------------------------------------- the suite


def test_the_suite_is_generated_the_same_each_time():
    again = generate()
    assert [(c.id, c.text, c.spans, c.meta) for c in again] == [(c.id, c.text, c.spans, c.meta) for c in CASES]
    assert len({c.id for c in CASES}) == len(CASES)


def test_every_language_has_every_benign_functionality_on_both_sides_of_the_split():
    seen = Counter((c.meta["lang"], c.meta["functionality"], c.meta["part"]) for c in CASES if not c.labels["hateful"])
    for lang in ("en", "ko"):
        for functionality in BENIGN:
            assert seen[(lang, functionality, "train")] >= 6 and seen[(lang, functionality, "held_out")] >= 6, \
                (lang, functionality)


def test_the_split_is_by_family_and_each_family_pairs_a_benign_and_a_hateful_template():
    parts, sides = defaultdict(set), defaultdict(set)
    for case in CASES:
        parts[case.meta["group"]].add(case.meta["part"])
        sides[case.meta["group"]].add((case.meta["template"].rsplit(".", 1)[1], case.labels["hateful"]))
    assert all(len(p) == 1 for p in parts.values())  # a family (both templates, all cases) on one side
    assert all(s == {("benign", False), ("hateful", True)} for s in sides.values())
    # Half of each functionality's six families held out, in each language.
    held = Counter(family.rsplit(".", 1)[0] for family, p in parts.items() if p == {"held_out"})
    assert set(held.values()) == {3} and len(held) == 16


def test_hateful_cases_mark_a_span_that_spares_the_identity_group_and_benign_ones_mark_none():
    for case in CASES:
        if not case.labels["hateful"]:
            assert case.spans == {}
            continue
        assert case.spans["OFF"], case.id
        identity = case.meta["identity"]
        if identity:
            start = case.text.lower().find(identity.lower())
            assert start >= 0 and not any(s < start + len(identity) and start < e for s, e in case.spans["OFF"])


def test_cases_pair_case_by_case_on_the_same_identity_group():
    by_template = defaultdict(dict)
    for case in CASES:
        by_template[case.meta["template"]][case.id.rsplit(":", 1)[1]] = case.meta["identity"]
    neutral, hateful = by_template["ko.neutral_identity.1.benign"], by_template["ko.neutral_identity.1.hateful"]
    assert neutral == hateful and len(neutral) == 12 and None not in neutral.values()


def test_a_template_expands_its_slots_particles_and_spans():
    fillers = {"group": ["여성", "난민", "장애인"], "vermin": ["벌레", "기생충"], "event": ["콘서트"]}
    # case 2: 장애인 (final ㄴ: 은), vermin (2 + offset 1) % 2 = 1: 기생충 (final ㅇ: 이라고), after "장애인은 ": 5..8
    assert expand("{group/는} [[{vermin}]]{/라고} 했다, {event/은} 별로", fillers, 2, offset=1) == \
        ("장애인은 기생충이라고 했다, 콘서트는 별로", [(5, 8)], "장애인")
    assert expand("\"{group}\" [[x]]", {"group": ["women"]}, 0, capitalize=True) == ('"Women" x', [(8, 9)], "women")


@pytest.mark.parametrize("word, particle, form", [
    ("여성", "이", "이"), ("노인", "가", "이"), ("트랜스젠더", "을", "를"), ("무슬림", "와", "과"),
    ("지하철", "으로", "로"), ("버스", "으로", "로"), ("난민", "로", "으로"), ("찐따", "이고", "고"),
    ("멍청이", "이라고", "라고"), ("등신", "라고", "이라고"), ("한심한 퀴어", "이야", "야"),
])
def test_korean_particles_follow_the_last_syllable(word, particle, form):
    assert korean_particle(word, particle) == form


def test_a_particle_after_a_word_without_a_final_hangul_syllable_is_refused():
    with pytest.raises(DataError, match="does not end in a Hangul syllable"):
        korean_particle("LGBT", "은")


def test_held_out_families_depend_on_the_seed_not_on_the_order():
    families = [f"en.x.{i}" for i in range(1, 7)]
    assert held_out_families(families, 58, 0.5) == held_out_families(families[::-1], 58, 0.5)
    assert len(held_out_families(families, 58, 0.5)) == 3
    assert any(held_out_families(families, seed, 0.5) != held_out_families(families, 58, 0.5) for seed in (1, 2, 3))


def _suite(tmp_path, benign: str, hateful: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(json.dumps({"split": {"seed": 1, "held_out": 0.5}, "languages": {"en": {
        "fillers": {"group": ["women", "men"]},
        "families": {"neutral_identity": [{"benign": benign, "hateful": hateful, "hateful_as": "derogation"}]}}}}),
        encoding="utf-8")
    return path


@pytest.mark.parametrize("benign, hateful, message", [
    ("{group} vote.", "{group} are bad.", "en.neutral_identity.1.hateful: a hateful template marks its offensive"),
    ("{group} are [[ok]].", "{group} are [[bad]].", "en.neutral_identity.1.benign: a benign template has no"),
    ("{group} vote.", "[[{group} are bad]].", "the span covers the identity group 'women'"),
    ("{group} vote {thing}.", "{group} are [[bad]].", "no fillers for slot {thing}"),
    ("{group} vote.", "{group} are [[bad.", "'[[' without ']]'"),
])
def test_a_broken_template_is_named(tmp_path, benign, hateful, message):
    with pytest.raises(DataError, match=__import__("re").escape(message)):
        generate(_suite(tmp_path, benign, hateful))


def test_the_reader_is_registered_and_takes_lang_and_part():
    assert "functional" in corpora.available()
    held_out = corpora.read("functional", SUITE, lang="ko", part="held_out")
    assert {(c.meta["lang"], c.meta["part"]) for c in held_out} == {("ko", "held_out")}
    everything = corpora.read("functional", SUITE, part="all")
    assert len(everything) == len(CASES) and len(corpora.read("functional", SUITE)) < len(everything)
    with pytest.raises(ArgumentError, match=r"lang must be one of \['en', 'ko'\] or 'all', got 'de'"):
        corpora.read("functional", SUITE, lang="de")
    with pytest.raises(ArgumentError, match="part must be one of"):
        corpora.read("functional", SUITE, part="test")


def test_the_suite_file_is_package_data():
    """An installed package (not only a checkout) must carry the suite file the reader defaults to."""
    call = next(node for node in ast.walk(ast.parse((ROOT / "setup.py").read_text()))
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup")
    package_data = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "package_data"))
    patterns = package_data["kold_span"]
    package = ROOT / "kold_span"
    assert any(SUITE in package.glob(pattern) for pattern in patterns)


# --------------------------------------------------------------------------- the bias AUCs, by hand

# Seven texts: (toxic, score, identity).
#   c1 toxic 0.9 A | c2 non 0.6 A | c3 non 0.2 A | c4 toxic 0.5 - | c5 non 0.3 - | c6 toxic 0.7 B | c7 non 0.8 B
LABELS = [True, False, False, True, False, True, False]
SCORES = [0.9, 0.6, 0.2, 0.5, 0.3, 0.7, 0.8]
TERMS = ["A", "A", "A", None, None, "B", "B"]


def test_bias_aucs_by_hand():
    out = metrics.bias_aucs(LABELS, SCORES, TERMS)
    # A, subgroup: 0.9 against 0.6 and 0.2: 2 of 2 pairs ranked right.
    # A, BPSN: A's non-toxic 0.6, 0.2 against the background's toxic 0.5, 0.7: (0.5 > 0.6 no, 0.5 > 0.2,
    #   0.7 > 0.6, 0.7 > 0.2): 3 of 4.
    # A, BNSP: A's toxic 0.9 against the background's non-toxic 0.3, 0.8: 2 of 2.
    assert out["A"] == {"texts": 3, "subgroup_auc": 1.0, "bpsn_auc": 0.75, "bnsp_auc": 1.0}
    # B, subgroup: 0.7 against 0.8: 0 of 1. BPSN: B's 0.8 against the background's toxic 0.9, 0.5: 1 of 2.
    # B, BNSP: B's 0.7 against the background's non-toxic 0.6, 0.2, 0.3: 3 of 3.
    assert out["B"] == {"texts": 2, "subgroup_auc": 0.0, "bpsn_auc": 0.5, "bnsp_auc": 1.0}


def test_bias_summary_by_hand():
    per_term = metrics.bias_aucs(LABELS, SCORES, TERMS)
    summary = metrics.bias_summary(LABELS, SCORES, per_term)
    # Overall: toxic 0.9 beats all 4 non-toxic, 0.5 beats 0.2 and 0.3, 0.7 beats 0.6, 0.2, 0.3: 9 of 12.
    assert summary["overall_auc"] == 0.75
    assert summary["mean_subgroup_auc"] == 0.0  # a zero AUC: its power mean is 0
    # BPSN 0.75 and 0.5 at p = -5: ((4/3)^5 + 2^5) / 2, to the power -1/5.
    assert summary["mean_bpsn_auc"] == pytest.approx((((4 / 3) ** 5 + 2 ** 5) / 2) ** (-1 / 5))
    assert summary["mean_bnsp_auc"] == 1.0
    assert summary["final"] == pytest.approx((0.75 + 0.0 + summary["mean_bpsn_auc"] + 1.0) / 4)


def test_an_auc_with_one_class_is_none_and_ties_count_half():
    assert metrics.roc_auc([True, True], [0.1, 0.9]) is None
    assert metrics.bias_aucs([True, True, False], [0.5, 0.5, 0.5], ["A", "A", None])["A"]["subgroup_auc"] is None
    assert metrics.roc_auc([True, False], [0.5, 0.5]) == 0.5


# --------------------------------------------------------------------------- flagged, score, the report

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
SPAN = Task("OFF_span", "span", "OFF", gate="OFF")


def test_a_gated_model_is_flagged_by_its_gate_and_scored_by_it():
    merged = MergedExample({"OFF": np.array([0.3, 0.7])}, [(0, 2)], {"OFF_span": np.array([[0.9, 0.05, 0.05]])})
    assert offensive_task([SPAN, OFF]) is OFF
    assert case_outcome([OFF, SPAN], merged, {"labels": {"OFF": {"label": True}}, "spans": []}) == (True, 0.7)
    assert case_outcome([OFF, SPAN], merged, {"labels": {"OFF": {"label": False}}, "spans": []}) == (False, 0.7)


def test_a_span_only_model_is_flagged_by_its_spans_and_scored_by_its_likeliest_token():
    span = Task("OFF_span", "span", "OFF")
    tgt = Task("TGT", "sequence", "TGT", labels=("group", "individual"))
    merged = MergedExample({"TGT": np.array([0.5, 0.5])}, [(0, 2), (3, 5)],
                           {"OFF_span": np.array([[0.9, 0.05, 0.05], [0.2, 0.5, 0.3]])})
    assert offensive_task([span, tgt]) is None
    flagged, score = case_outcome([span, tgt], merged, {"labels": {"TGT": {"label": "group"}},
                                                        "spans": [{"type": "OFF", "start": 3, "end": 5}]})
    assert flagged and score == pytest.approx(0.8)
    empty = MergedExample({}, [], {"OFF_span": np.zeros((0, 3))})
    assert case_outcome([span], empty, {"labels": {}, "spans": []}) == (False, 0.0)


def test_the_report_counts_per_functionality_and_group():
    cases = [c for c in CASES if c.meta["lang"] == "en" and c.meta["part"] == "held_out"]
    # A model that flags every text mentioning "are": what the table shows is what it did.
    outcomes = [(" are " in c.text, 1.0 if " are " in c.text else 0.0) for c in cases]
    report = measure(cases, outcomes)
    negated = [c for c in cases if c.meta["functionality"] == "negated_abuse"]
    assert report["functionalities"]["negated_abuse"]["cases"] == len(negated)
    assert report["functionalities"]["negated_abuse"]["flagged"] == pytest.approx(
        sum(" are " in c.text for c in negated) / len(negated))
    benign = [c for c in cases if not c.labels["hateful"]]
    assert report["groups"]["all benign"] == {"hateful": False, "cases": len(benign),
                                              "flagged": sum(" are " in c.text for c in benign) / len(benign)}
    assert list(report["functionalities"])[:8] == list(BENIGN)  # benign first, in the suite's order
    assert set(report["bias"]["terms"]) == {c.meta["identity"] for c in cases if c.meta["identity"]}


# --------------------------------------------------------------------------- the command


def test_functional_command_end_to_end(tmp_path, capsys):
    model = untrained_model(tmp_path / "model")
    out = tmp_path / "out"
    assert main(["functional", "--model", str(model), "--lang", "en", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| negated_abuse | not hateful | 3 |" in printed and "generalized mean" in printed
    report = json.loads((out / "functional.json").read_text(encoding="utf-8"))
    cases = corpora.read("functional", SUITE, lang="en", part="held_out")
    assert report["cases"] == len(cases) and report["part"] == "held_out" and report["languages"] == ["en"]
    assert set(report["functionalities"]) >= set(BENIGN) and "all hateful" in report["groups"]
    rows = [json.loads(line) for line in (out / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [c.id for c in cases]
    # The same model through the library gives the same flags and scores.
    from kold_span.inference.predictor import Predictor
    again = predict_cases(Predictor.from_pretrained(model, precision="fp32"), cases)
    assert [(r["flagged"], r["score"]) for r in rows] == [(f, pytest.approx(s, abs=1e-6)) for f, s in again]
    assert "| **all benign** |" in (out / "functional.md").read_text(encoding="utf-8")


def test_functional_command_names_a_bad_language(tmp_path, capsys):
    status = main(["functional", "--model", str(tmp_path / "none"), "--lang", "fr", "--out", str(tmp_path / "out")])
    assert status == 2
    assert "lang must be one of ['en', 'ko'] or 'all', got 'fr'" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_writes_its_section_with_both_commands_and_the_machine(tmp_path, monkeypatch):
    import sys

    from conftest import BENCH
    sys.path.insert(0, str(BENCH))
    bench = pytest.importorskip("functional")
    model = untrained_model(tmp_path / "model")
    page = tmp_path / "functional.md"
    monkeypatch.setattr(bench, "PAGE", page)
    monkeypatch.chdir(tmp_path)  # main() works from the checkout; the original directory comes back after
    monkeypatch.setattr(sys, "argv", ["bench/functional.py", "--model", str(model), "--lang", "ko", "--name", "demo",
                                      "--note", "An untrained model.", "--out", str(tmp_path / "out")])
    assert bench.main() == 0
    text = page.read_text(encoding="utf-8")
    assert "<!-- begin functional-demo -->" in text and "An untrained model." in text
    assert "# which ran:\nkold-span functional --model" in text and "CPU flags:" in text
    assert "| **all hateful** | hateful |" in text and (tmp_path / "out" / "demo" / "cases.jsonl").exists()


@pytest.mark.slow
def test_a_run_trains_on_the_suite_and_scores_its_gate_on_a_dev_with_both_classes(tmp_path):
    """The suite's benign train cases as negatives, its hateful ones as positives with spans, a share of each in
    dev: dev then holds benign texts, so the gate's balanced accuracy is scored there."""
    from kold_span.config import load_config
    from kold_span.training import train

    from conftest import FIXTURE, TINY

    source = (f"{{reader: functional, path: {SUITE}, reader_options: {{lang: ko, part: train}}, limit: 48, "
              "dev_fraction: 0.5")
    config = load_config(TINY, [
        f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r", "trainer.max_epochs=1",
        "tasks=[{name: OFF, kind: sequence, source: OFF, class_weight: balanced}, "
        "{name: OFF_span, kind: span, source: OFF, gate: OFF}]",
        f"data.negatives=[{source}, filter: {{hateful: false}}, labels: {{OFF: false}}, holdout_fraction: 0.25}}, "
        f"{source}, filter: {{hateful: true}}, labels: {{OFF: true}}, keep_spans: true, holdout_fraction: 0.0}}]"])
    result = train(config, quiet=True)
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    # 48 cases of each side: 4 families of 12, carved by family. Benign: held out round(4 × 0.25) = 1 family, then
    # dev round(3 × 0.5 / 0.75) = 2 of the other 3; hateful: dev round(4 × 0.5) = 2 families. Dev: 4 × 12 cases.
    assert metrics["sizes"]["benign"] == 12 and metrics["sizes"]["dev"] == 24 + 24
    assert metrics["benign"]["examples"] == 12
    assert 0.0 <= metrics["dev"]["OFF/balanced_accuracy"] <= 1.0 and "OFF_span/char_f1" in metrics["dev"]
