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
from kold_span.agreement.bootstrap import ItemResamples
from kold_span.agreement.plots import CROWD
from kold_span.agreement.ratings import default_label, ratings_table
from kold_span.agreement.render import render_markdown
from kold_span.agreement.report import build_report, write_report
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


# --------------------------------------------------------------------------- label scales and levels

# Eight items, four annotators, a 1-5 scale with 4 unused and 2 rare; None = not rated.
LIKERT = {"p": [1, 2, 3, 3, 5, 1, None, 5], "q": [1, 3, 3, 5, 5, 2, 3, None],
          "r": [None, 2, 5, 3, 5, 1, 3, 3], "s": [1, 1, 3, 3, None, None, 5, 5]}


def _likert_ratings() -> list[dict]:
    return [{a: col[i] for a, col in LIKERT.items() if col[i] is not None} for i in range(8)]


def _likert_examples(values=LIKERT) -> list[Example]:
    return [Example(id=f"s{i}", text=f"sentence {i}",
                    annotations=[Annotation(a, {"rating": col[i]}) for a, col in values.items()])
            for i in range(8)]


def _package_alpha(ratings, level) -> float:
    """The `krippendorff` package's alpha, its reliability matrix built here (annotators × items, NaN = missing)."""
    import krippendorff

    annotators = sorted({a for item in ratings for a in item})
    matrix = [[float(item.get(a, math.nan)) for item in ratings] for a in annotators]
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_at_each_level_equals_the_krippendorff_package(level):
    ratings = _likert_ratings()
    report = build_report(_likert_examples(), level=level, n_boot=50, seed=3)
    assert report["level"] == level and report["krippendorff"]["level"] == level
    assert report["krippendorff"]["value"] == approx(_package_alpha(ratings, level), abs=1e-9)
    # The resampling code computes alpha on its own (from counts); with every item drawn once it
    # must give the package's value too.
    assert ItemResamples(ratings, level).alpha(np.ones((8, 1)))[0] == approx(_package_alpha(ratings, level), abs=1e-9)


def test_the_levels_give_different_alphas():
    values = {level: build_report(_likert_examples(), level=level, n_boot=10)["krippendorff"]["value"]
              for level in ("nominal", "ordinal", "interval", "ratio")}
    assert len({round(v, 6) for v in values.values()}) == 4, values


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_intervals_at_each_level_equal_the_reference_bootstrap(level):
    from functools import partial

    rng = random.Random(4)
    annotators = [f"a{i}" for i in range(5)]
    ratings = [{a: rng.choice([1, 2, 2, 3, 5, 8]) for a in rng.sample(annotators, rng.randint(1, 4))}
               for _ in range(25)]
    expected = agreement.bootstrap_ci(ratings, partial(agreement.krippendorff_alpha, level=level), 80, 6)
    assert ItemResamples(ratings, level).run(80, seed=6)["alpha"] == approx(expected, abs=1e-9)


def _weighted_kappas_of_resample(ratings, sample, drawn, weights):
    """As `_kappas_of_resample`, weighted on the scale of the whole table (not of the resample)."""
    from sklearn.metrics import cohen_kappa_score

    scale = agreement.ordered_labels(v for item in ratings for v in item.values())
    distinct = Counter(pair for i in drawn for pair in combinations(sorted(ratings[i], key=str), 2))
    shared: dict = {}
    for item in sample:
        for a, b in combinations(sorted(item, key=str), 2):
            shared.setdefault((a, b), ([], []))
            shared[(a, b)][0].append(item[a])
            shared[(a, b)][1].append(item[b])
    with np.errstate(divide="ignore", invalid="ignore"):
        return {pair: float(cohen_kappa_score(x, y, labels=scale, weights=weights))
                for pair, (x, y) in shared.items() if distinct[pair] >= 2}


def test_ordinal_report_has_the_weighted_kappa_and_its_intervals():
    ratings = _likert_ratings()
    report = build_report(_likert_examples(), level="ordinal", n_boot=60, seed=2)
    assert report["kappa_weights"] == "quadratic" and report["fleiss"] is None
    pairs = {(p["a"], p["b"]): p["kappa"] for p in report["cohen"]["pairs"]}
    assert pairs == approx(agreement.cohen_kappa_pairwise(ratings, "quadratic"))
    # p–q share items 0, 1, 2, 3, 4, 5 on the scale 1 < 2 < 3 < 5 (ranks 0-3): p 1 2 3 3 5 1, q 1 3 3 5 5 2.
    # Quadratic: observed Σ (i-j)² = 0+1+0+1+0+1 = 3; p's rank counts (2, 1, 2, 1), q's (1, 1, 2, 2):
    # Σ a_i b_j (i-j)² = 2·27 + 1·11 + 2·7 + 1·15 = 94 (rows i = 0..3), over n = 6 → kappa 1 - 3/(94/6) = 38/47.
    assert pairs[("p", "q")] == approx(38 / 47)

    def mean_weighted(sample, drawn):
        kappas = [k for k in _weighted_kappas_of_resample(ratings, sample, drawn, "quadratic").values()
                  if not math.isnan(k)]
        return sum(kappas) / len(kappas) if kappas else math.nan

    assert report["cohen"]["ci"] == approx(list(_reference_interval(ratings, mean_weighted, 60, 2)))
    for pair in report["cohen"]["pairs"]:
        def one(sample, drawn, pair=(pair["a"], pair["b"])):
            return _weighted_kappas_of_resample(ratings, sample, drawn, "quadratic").get(pair, math.nan)
        assert pair["ci"] == approx(list(_reference_interval(ratings, one, 60, 2)))
    linear = build_report(_likert_examples(), level="ordinal", weights="linear", n_boot=10)
    assert linear["cohen"]["mean"] == approx(agreement.mean_pairwise_cohen(ratings, "linear"))
    text = render_markdown(report)
    assert "- Level of measurement: **ordinal**" in text
    assert "| mean pairwise weighted Cohen's kappa (quadratic) | " in text
    assert "| Krippendorff's alpha (ordinal) | " in text and "Fleiss" not in text
    assert "## Pairwise weighted Cohen's kappa (quadratic)" in text


def test_interval_report_has_alpha_alone_and_says_so(tmp_path):
    report = build_report(_likert_examples(), level="interval", n_boot=20)
    assert report["fleiss"] is None and report["cohen"] is None
    assert report["krippendorff"]["ci"] is not None
    text = render_markdown(report)
    assert "kappas (categories or ranks) are not computed" in text
    assert "Not computed at level interval" in text
    paths = write_report(report, tmp_path)  # the heatmap still exists, and says why it is empty
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_integer_labels_are_categories_and_agree_with_the_same_table_as_bool():
    as_int = [Example(id=ex.id, text=ex.text, annotations=[Annotation(a.annotator, {"sarcasm": int(a.labels["OFF"])})
                                                           for a in ex.annotations]) for ex in _examples()]
    as_bool = build_report(_examples(), label="OFF", n_boot=50, seed=1)
    report = build_report(as_int, n_boot=50, seed=1)  # the label is found without --label
    assert report["label"] == "sarcasm" and report["level"] == "nominal" and report["label_kind"] == "number"
    assert report["label_counts"] == {"0": 8, "1": 10}
    for key in ("fleiss", "krippendorff"):
        assert report[key]["value"] == approx(as_bool[key]["value"])
    assert report["cohen"]["mean"] == approx(as_bool["cohen"]["mean"])
    assert report["cohen"]["ci"] == approx(as_bool["cohen"]["ci"])
    assert {r["annotator"]: r["bias"] for r in report["bias"]["annotators"]} == approx({"x": 0.0, "y": 1 / 6, "z": 0.0})
    assert "positive: gives higher values than the majority" in render_markdown(report)


def test_float_labels_sort_as_numbers_and_nan_means_not_rated():
    examples = [Example(id=str(i), text="t", annotations=[Annotation("a", {"score": a}), Annotation("b", {"score": b})])
                for i, (a, b) in enumerate([(10.0, 2.5), (2.5, 2.5), (10.0, math.nan), (0.5, 10.0)])]
    table = ratings_table(examples, "score")
    assert table.ratings[2] == {"a": 10.0} and table.missing_values == 1 and table.value_kind == "number"
    report = build_report(examples, level="interval", n_boot=10)
    assert list(report["label_counts"]) == ["0.5", "2.5", "10.0"]


def test_a_label_mixing_kinds_is_an_error_naming_both_places():
    examples = [Example(id="e1", text="t", annotations=[Annotation("a", {"L": 1}), Annotation("b", {"L": 0})]),
                Example(id="e2", text="t", annotations=[Annotation("a", {"L": "1"})])]
    with pytest.raises(ValueError, match=r"label 'L' mixes kinds of values: example 'e1' \(annotator 'a'\): 1 is "
                                         r"number, example 'e2' \(annotator 'a'\): '1' is text"):
        ratings_table(examples, "L")


def test_a_level_needing_numbers_on_bool_labels_is_an_error_naming_an_example():
    with pytest.raises(ValueError, match=r"level 'ordinal' needs numeric labels, but label 'OFF' holds bool values "
                                         r"\(example 'item0': True\)"):
        build_report(_examples(), level="ordinal")


@pytest.mark.parametrize("options, message", [
    ({"level": "ordinal", "weights": "cubic"}, "kappa weights must be one of"),
    ({"level": "nominal", "weights": "linear"}, "kappa weights apply at level 'ordinal' only"),
    ({"level": "likert"}, "level must be one of"),
])
def test_bad_level_or_weights_are_errors(options, message):
    with pytest.raises(ValueError, match=message):
        build_report(_likert_examples(), n_boot=5, **options)


def _write_annotation_export(path, columns: dict) -> None:
    """A JSONL export of per-annotator integer labels, as annotation tools write them."""
    n = len(next(iter(columns.values())))
    rows = [{"id": f"t{i}", "text": f"text {i}",
             "annotations": [{"annotator": a, "labels": {"sarcastic": col[i]}} for a, col in columns.items()
                             if col[i] is not None]} for i in range(n)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_end_to_end_integer_labels_and_levels(tmp_path, capsys):
    # The issue's case: three annotators' 0/1 labels once gave "no annotation label holds bool or str values".
    binary = tmp_path / "binary.jsonl"
    _write_annotation_export(binary, {a: [int(v) for v in col] for a, col in LABELS.items()})
    assert main(["agreement", str(binary), "--format", "jsonl", "--out", str(tmp_path / "b"), "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert "label 'sarcastic': 6 items, 3 annotators, 2 labels, level nominal" in out
    # Fleiss by hand: P_i is 1 on the 3 unanimous items and 1/3 on the others → P̄ = 2/3; p(1) = 10/18,
    # p(0) = 8/18 → P_e = 164/324; kappa = (2/3 - 164/324) / (1 - 164/324) = 0.325.
    assert "Fleiss 0.325; mean Cohen 0.333" in out

    likert = tmp_path / "likert.jsonl"
    _write_annotation_export(likert, LIKERT)
    assert main(["agreement", str(likert), "--format", "jsonl", "--out", str(tmp_path / "l"), "--n-boot", "20",
                 "--level", "ordinal", "--weights", "linear"]) == 0
    out = capsys.readouterr().out
    assert "level ordinal" in out and "mean Cohen (linear)" in out
    data = json.loads((tmp_path / "l" / "report.json").read_text(encoding="utf-8"))
    assert data["level"] == "ordinal" and data["kappa_weights"] == "linear"
    assert data["krippendorff"]["value"] == approx(_package_alpha(_likert_ratings(), "ordinal"), abs=1e-9)

    assert main(["agreement", str(likert), "--format", "jsonl", "--out", str(tmp_path / "x"),
                 "--weights", "linear"]) == 2
    assert "kappa weights apply at level 'ordinal' only" in capsys.readouterr().err
