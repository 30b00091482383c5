"""`kold-span evaluate --model DIR --curves OUT`: curves.json and PNGs per task, ECE before and after calibration."""
import json

from kold_span.cli.main import main
from kold_span.data.example import Example
from kold_span.inference.predictor import Predictor
from kold_span.training.calibration import Calibration

from conftest import untrained_model

TEXTS = ["이 쓰레기 같은 정치인들", "너 진짜 한심하다", "좋은 기사 감사합니다", "오늘 경기 정말 재밌었어요"]


def gold_file(path):
    rows = [Example(str(i), text, labels={"OFF": i % 2 == 0}, spans={"OFF": [(0, 2)] if i % 2 == 0 else []})
            for i, text in enumerate(TEXTS * 2)]
    path.write_text("".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in rows), encoding="utf-8")
    return path


def test_curves_and_calibration_are_written(tmp_path, capsys):
    plain = untrained_model(tmp_path / "plain")
    model = Calibration(temperatures={"OFF": 2.0}).apply_to(Predictor.from_pretrained(plain)).save_pretrained(
        tmp_path / "model")
    gold = gold_file(tmp_path / "gold.jsonl")
    assert main(["evaluate", "--gold", str(gold), "--model", str(model), "--curves", str(tmp_path / "curves"),
                 "--out", str(tmp_path / "scores.json")]) == 0
    curves = json.loads((tmp_path / "curves" / "curves.json").read_text(encoding="utf-8"))
    assert set(curves) == {"OFF:true", "OFF_span"}
    off = curves["OFF:true"]
    assert off["unit"] == "texts" and off["ece"]["temperature"] == 2.0 and off["ece"]["bins"] == 15
    assert off["ece"]["before"] != off["ece"]["after"]
    assert 0.0 <= off["ece"]["floor_after"]["mean"] <= 1.0 and set(off["ece"]["floor_after"]) == {"mean", "p95"}
    assert off["thresholds"][-1]["recall"] == 1.0 and off["thresholds"][-1]["benign_flagged"] == 1.0
    assert off["roc"][0] == [0.0, 0.0] and 0.0 <= off["roc_auc"] <= 1.0
    assert curves["OFF_span"]["unit"] == "characters" and "roc" not in curves["OFF_span"]
    assert (tmp_path / "curves" / "OFF_true.png").stat().st_size > 0
    assert (tmp_path / "curves" / "OFF_span.png").exists()
    scores = json.loads((tmp_path / "scores.json").read_text(encoding="utf-8"))
    assert scores["calibration/OFF/temperature"] == 2.0 and "calibration/OFF/ece_15_bins_before" in scores
    assert scores["calibration/OFF/ece_15_bins_floor_p95"] == off["ece"]["floor_after"]["p95"]
    assert "label/OFF/accuracy" in scores  # the untrained model decodes no span: "span_types_not_predicted"
    assert "calibration/OFF/ece_15_bins_after" in capsys.readouterr().out


def test_before_is_the_model_as_trained_when_it_has_a_confidence_map(tmp_path):
    plain = untrained_model(tmp_path / "plain")
    knots = ((0.5, 0.5), (0.75, 0.6), (1.0, 1.0))
    model = Calibration(temperatures={"OFF": 2.0}, confidence_maps={"OFF": knots}).apply_to(
        Predictor.from_pretrained(plain)).save_pretrained(tmp_path / "model")
    gold = gold_file(tmp_path / "gold.jsonl")
    for directory, out in ((plain, "plain.json"), (model, "model.json")):
        assert main(["evaluate", "--gold", str(gold), "--model", str(directory), "--out", str(tmp_path / out)]) == 0
    raw, calibrated = (json.loads((tmp_path / out).read_text(encoding="utf-8")) for out in ("plain.json", "model.json"))
    assert calibrated["calibration/OFF/confidence_map_knots"] == 3 and raw["calibration/OFF/confidence_map_knots"] == 0
    assert calibrated["calibration/OFF/ece_15_bins_before"] == raw["calibration/OFF/ece_15_bins_after"]
    assert calibrated["calibration/OFF/ece_15_bins_after"] != calibrated["calibration/OFF/ece_15_bins_before"]


def test_curves_need_a_model(tmp_path, capsys):
    gold = gold_file(tmp_path / "gold.jsonl")
    assert main(["evaluate", "--gold", str(gold), "--pred", str(gold), "--curves", str(tmp_path / "c")]) == 2
    assert "--curves needs --model" in capsys.readouterr().err
