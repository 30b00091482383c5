"""Agreement report: numbers equal `kold_span.agreement`'s, hand-checked views, files, the CLI end to end."""
import json
import math
import random
from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from kold_span import agreement
from kold_span.agreement import report as report_module
from kold_span.agreement.report import (CROWD, ItemResamples, build_report, default_label, ratings_table,
                                        render_markdown, write_report)
from kold_span.cli import main
from kold_span.data.example import Annotation, Example

from conftest import CORPORA, FIXTURE

approx = pytest.approx

# Six items, three annotators (x, y, z), binary labels:
#   item   x  y  z   unanimous  entropy
#   0      1  1  1   yes        0
#   1      1  1  0   no         0.918  (hard)
#   2      0  0  0   yes        0
#   3      0  0  1   no         0.918  (hard)
#   4      1  1  1   yes        0
#   5      0  1  0   no         0.918  (hard)
LABELS = {"x": [1, 1, 0, 0, 1, 0], "y": [1, 1, 0, 0, 1, 1], "z": [1, 0, 0, 1, 1, 0]}
# Annotator x marks characters 0-3 on every text, y 0-1, z nothing.
SPANS = {"x": [(0, 4)], "y": [(0, 2)], "z": []}


def _examples() -> list[Example]:
    return [Example(id=f"item{i}", text=f"text number {i} " + "word " * 20, meta={"lang": "ab"[i % 2]},
                    annotations=[Annotation(annotator=a, labels={"TGT": ["group"], "OFF": bool(LABELS[a][i])},
                                            spans={"OFF": SPANS[a]})
                                 for a in LABELS])
            for i in range(6)]


def _ratings() -> list[dict]:
    return [{a: bool(LABELS[a][i]) for a in LABELS} for i in range(6)]


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(_examples(), n_boot=100, seed=5, group_by="lang")


def test_default_label_skips_list_labels():
    assert default_label(_examples()) == "OFF"


def test_ratings_table_keeps_first_annotation_of_an_annotator_and_skips_none():
    examples = [Example(id="a", text="t", annotations=[Annotation("x", {"L": "p"}), Annotation("x", {"L": "q"}),
                                                       Annotation("y", {"L": None})]),
                Example(id="b", text="t", annotations=[Annotation("y", {})])]
    table = ratings_table(examples, "L")
    assert table.ratings == [{"x": "p"}]
    assert (table.duplicate_annotations, table.missing_values, table.unrated_examples) == (1, 2, 1)
    with pytest.raises(ValueError, match="TGT"):
        ratings_table(_examples(), "TGT")


def test_counts(report):
    assert (report["n_items"], report["n_items_multi"], report["n_annotators"], report["n_ratings"]) == (6, 6, 3, 18)
    assert report["label_counts"] == {"False": 8, "True": 10}
    assert report["label"] == "OFF"


def test_coefficients_equal_the_agreement_functions(report):
    ratings = _ratings()
    assert report["fleiss"]["value"] == approx(agreement.fleiss_kappa(ratings))
    assert (report["fleiss"]["raters_per_item"], report["fleiss"]["n_items_used"]) == (3, 6)
    assert report["cohen"]["mean"] == approx(agreement.mean_pairwise_cohen(ratings))
    pairs = {(p["a"], p["b"]): p["kappa"] for p in report["cohen"]["pairs"]}
    assert pairs == approx(agreement.cohen_kappa_pairwise(ratings))
    # Hand-checked: x–y agree on 5/6, p_e = 1/2 → 2/3; x–z 4/6 → 1/3; y–z 3/6 → 0.
    assert pairs == approx({("x", "y"): 2 / 3, ("x", "z"): 1 / 3, ("y", "z"): 0.0})
    assert report["cohen"]["mean"] == approx(1 / 3)
    assert report["krippendorff"]["value"] == approx(agreement.krippendorff_alpha(ratings))
    assert report["cohen"]["band"] == agreement.interpret_kappa(1 / 3) == "fair"
    assert report["krippendorff"]["band"] == agreement.interpret_kappa(report["krippendorff"]["value"])


def _reference_interval(ratings, statistic, n_boot, seed):
    """`agreement.bootstrap_ci`'s draws and percentiles, with the statistic also told which items were drawn."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        drawn = rng.integers(0, len(ratings), size=len(ratings))
        value = statistic([ratings[i] for i in drawn], set(drawn.tolist()))
        if not math.isnan(value):
            values.append(value)
    return tuple(np.percentile(values, [2.5, 97.5]))


def _kappas_of_resample(ratings, sample, drawn):
    """cohen_kappa_pairwise of a resample, keeping the pairs that share 2+ distinct drawn items."""
    distinct = Counter(pair for i in drawn for pair in combinations(sorted(ratings[i], key=str), 2))
    return {pair: k for pair, k in agreement.cohen_kappa_pairwise(sample).items() if distinct[pair] >= 2}


def _mean_kappa(ratings):
    def statistic(sample, drawn):
        defined = [k for k in _kappas_of_resample(ratings, sample, drawn).values() if not math.isnan(k)]
        return sum(defined) / len(defined) if defined else math.nan
    return statistic


def _pair_kappa(ratings, pair):
    return lambda sample, drawn: _kappas_of_resample(ratings, sample, drawn).get(pair, math.nan)


def test_intervals_equal_the_reference_bootstrap(report):
    ratings = _ratings()
    assert report["krippendorff"]["ci"] == approx(list(agreement.bootstrap_ci(ratings, agreement.krippendorff_alpha,
                                                                              n_boot=100, seed=5)))
    assert report["cohen"]["ci"] == approx(list(_reference_interval(ratings, _mean_kappa(ratings), 100, 5)))
    for pair in report["cohen"]["pairs"]:
        expected = _reference_interval(ratings, _pair_kappa(ratings, (pair["a"], pair["b"])), 100, 5)
        assert pair["ci"] == approx(list(expected))


def test_item_resamples_with_missing_ratings_and_three_labels():
    rng = random.Random(1)
    annotators = [f"a{i}" for i in range(6)]
    ratings = [{a: rng.choice("ppqr") for a in rng.sample(annotators, rng.randint(1, 4))} for _ in range(30)]
    pairs = [("a0", "a1"), ("a2", "a5")]
    result = ItemResamples(ratings).run(60, seed=2, tracked=pairs)
    assert result["alpha"] == approx(agreement.bootstrap_ci(ratings, agreement.krippendorff_alpha, 60, 2))
    assert result["mean_cohen"] == approx(_reference_interval(ratings, _mean_kappa(ratings), 60, 2))
    for pair in pairs:
        assert result["pairs"][pair] == approx(_reference_interval(ratings, _pair_kappa(ratings, pair), 60, 2))


def test_a_pair_whose_one_shared_item_is_drawn_twice_does_not_count():
    # x and y share item 0 only (they disagree), x and z share items 1, 2 (they agree perfectly).
    # bootstrap_ci(ratings, mean_pairwise_cohen) would average in x–y's kappa of 0 whenever item 0 is
    # drawn twice; here the mean is x–z's kappa (1) in every resample where that pair is defined.
    ratings = [{"x": "p", "y": "q"}, {"x": "p", "z": "p"}, {"x": "q", "z": "q"}]
    result = ItemResamples(ratings).run(200, seed=0)
    assert result["mean_cohen"] == (1.0, 1.0)
    assert agreement.bootstrap_ci(ratings, agreement.mean_pairwise_cohen, 200, 0)[0] == 0.0


def test_unanimity_bias_and_hard_cases_hand_checked(report):
    # Unanimous: items 0, 2, 4. Majority True: 0, 1, 4 (0 and 4 unanimous); False: 2, 3, 5 (2 unanimous).
    assert report["unanimity"]["overall"] == approx(0.5)
    assert report["unanimity"]["per_class"] == approx({"False": 1 / 3, "True": 2 / 3})
    hard = report["entropy"]["hard_cases"]
    assert hard["count"] == 3
    assert [h["id"] for h in hard["listed"]] == ["item1", "item3", "item5"]
    assert hard["listed"][0]["entropy"] == approx(agreement.item_entropy([1, 1, 0]))
    assert hard["listed"][0]["labels"] == {"False": 1, "True": 2}
    assert len(hard["listed"][0]["text"]) == 80 and hard["listed"][0]["text"].endswith("…")
    # y says True on item 5 where the majority says False: +1/6; x and z never deviate on balance.
    bias = {row["annotator"]: row["bias"] for row in report["bias"]["annotators"]}
    assert bias == approx(agreement.annotator_bias(_ratings()))
    assert bias == approx({"x": 0.0, "y": 1 / 6, "z": 0.0})


def test_span_agreement_equals_the_agreement_function(report):
    marks = [{"x": {0, 1, 2, 3}, "y": {0, 1}, "z": set()} for _ in range(6)]
    expected = agreement.span_agreement(marks, [len(ex.text) for ex in _examples()])
    spans = report["spans"]
    assert (spans["span_type"], spans["n_texts"]) == ("OFF", 6)
    assert spans["mean_pairwise_f1"] == approx(expected["mean_pairwise_f1"])
    assert spans["char_kappa"] == approx(expected["char_kappa"])


def test_groups_repeat_the_statistics_per_meta_value(report):
    rows = {row["group"]: row for row in report["groups"]["rows"]}
    assert sorted(rows) == ["a", "b"] and report["groups"]["key"] == "lang"
    for name, start in (("a", 0), ("b", 1)):
        subset = _ratings()[start::2]
        assert rows[name]["n_items"] == 3
        assert rows[name]["fleiss"]["value"] == approx(agreement.fleiss_kappa(subset))
        assert rows[name]["krippendorff"]["value"] == approx(agreement.krippendorff_alpha(subset))
        assert rows[name]["unanimity"]["overall"] == approx(agreement.unanimity(subset)["overall"])


def test_write_report_writes_the_four_files(report, tmp_path):
    paths = write_report(report, tmp_path / "out")
    assert [p.name for p in paths] == ["report.md", "report.json", "kappa_heatmap.png", "entropy_hist.png"]
    for png in paths[2:]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(paths[1].read_text(encoding="utf-8"))
    assert data["cohen"]["mean"] == approx(1 / 3)
    text = paths[0].read_text(encoding="utf-8")
    assert "| Fleiss' kappa | " in text and "item1" in text and "## By lang" in text


def test_a_report_that_fails_leaves_every_previous_file_as_it_was(report, tmp_path, monkeypatch):
    paths = write_report(report, tmp_path / "out")
    before = [p.read_bytes() for p in paths]

    def broken(report, target):
        raise OSError("no space left on device")

    monkeypatch.setattr(report_module, "plot_entropy_hist", broken)  # the last file: all others rendered first
    with pytest.raises(OSError, match="no space"):
        write_report({**report, "n_items": 99}, tmp_path / "out")
    assert [p.read_bytes() for p in paths] == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(p.name for p in paths)


def test_crowd_heatmap_shows_the_busiest_annotators_and_says_so():
    # 40 annotators; annotator c{i} labels items i .. i+2 (wrapping), so everyone has 3 items.
    # "busy" labels every item, so it comes first.
    n = 40
    examples = [Example(id=str(i), text="t", annotations=[
        Annotation("busy", {"L": i % 2 == 0}),
        *[Annotation(f"c{j}", {"L": (i + j) % 3 == 0}) for j in range(n) if (i - j) % n < 3]]) for i in range(n)]
    report = build_report(examples, n_boot=20)
    assert report["n_annotators"] == n + 1
    assert list(report["annotator_items"])[0] == "busy"
    text = render_markdown(report)
    assert f"The heatmap shows the {CROWD} annotators with the most items, of {n + 1}." in text


def test_end_to_end_kold(tmp_path, capsys):
    out = tmp_path / "kold"
    code = main(["agreement", str(FIXTURE), "--format", "kold", "--out", str(out), "--n-boot", "50"])
    assert code == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    for heading in ("# Agreement report: label `OFF`", "## Data", "## Chance-corrected agreement",
                    "## Pairwise Cohen's kappa", "## Unanimity", "## Annotator bias",
                    "## Item entropy and hard cases", "## Span agreement"):
        assert heading in text
    assert "Span type `OFF`" in text
    assert all((out / name).is_file() for name in ("report.json", "kappa_heatmap.png", "entropy_hist.png"))
    assert "label 'OFF': 26 items" in capsys.readouterr().out


def test_end_to_end_multipico_by_language(tmp_path):
    out = tmp_path / "mp"
    code = main(["agreement", str(CORPORA / "multipico"), "--format", "multipico", "--out", str(out),
                 "--group-by", "lang", "--n-boot", "50"])
    assert code == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "# Agreement report: label `irony`" in text and "## By lang" in text
    assert "## Span agreement" not in text  # MultiPICo has no spans
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [row["group"] for row in data["groups"]["rows"]] == ["de", "en", "es"]
    assert [row["n_items"] for row in data["groups"]["rows"]] == [1, 1, 1]
    assert data["n_items"] == 3 and data["n_annotators"] == 4


def test_end_to_end_bad_label_is_an_error(tmp_path, capsys):
    code = main(["agreement", str(FIXTURE), "--format", "kold", "--out", str(tmp_path), "--label", "TGT"])
    assert code == 2
    assert "TGT" in capsys.readouterr().err


def test_end_to_end_unknown_span_type_is_an_error(tmp_path, capsys):
    code = main(["agreement", str(FIXTURE), "--format", "kold", "--out", str(tmp_path), "--span-type", "NOPE"])
    assert code == 2
    assert "no annotation marks spans of type 'NOPE'; span types present: " in capsys.readouterr().err
