"""`kold-span predict --engine ray` on a local Ray cluster of two CPUs: the same bytes as the single-process
command per shard, a rerun that redoes only missing shards, and a bad row named by shard and line."""
import json
import os

import pytest

from kold_span.cli import main
from kold_span.errors import ArgumentError, DataError
from kold_span.inference.outputs import run_options
from kold_span.inference.pipeline import RunOptions
from kold_span.inference.predictor import Predictor
from kold_span.inference.ray_engine import RayOptions, output_shards, predict_shard, predict_shards, shard_paths

from conftest import untrained_model

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # starts a Ray cluster and its worker processes

COMMENTS = ["이 쓰레기 같은 정치인들", "좋은 기사 감사합니다", "너 진짜 한심하다", "오늘 경기 정말 재밌었어요",
            "ㅋㅋㅋ 진짜 웃기네", "기사 잘 봤습니다 정치인들 정말 한심하다 오늘도"]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("model") / "model")


def write_shards(folder):
    """Four shards, one of each input type but txt's line-numbered ids (txt, jsonl with titles, csv, Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    (folder / "a.txt").write_text("\n".join(COMMENTS) + "\n", encoding="utf-8")
    (folder / "b.jsonl").write_text("".join(json.dumps({"id": f"b{i}", "comment": c, "title": "국회 소식"},
                                                       ensure_ascii=False) + "\n" for i, c in enumerate(COMMENTS)),
                                    encoding="utf-8")
    (folder / "c.csv").write_text("id,comment\n" + "".join(f"c{i},{c}\n" for i, c in enumerate(COMMENTS[::-1])),
                                  encoding="utf-8")
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(3)], "text": COMMENTS[:3]}), folder / "d.parquet")
    return folder


def single_process(model_dir, shard, output):
    assert main(["predict", "--model", str(model_dir), "--input", str(shard), "--output", str(output),
                 "--quiet", "--batch-size", "4"]) == 0
    return output.read_bytes()


def test_ray_shards_are_byte_identical_to_the_single_process_command(cluster, model_dir, tmp_path, capsys):
    shards = write_shards(tmp_path / "shards")
    out = tmp_path / "out"
    assert main(["predict", "--engine", "ray", "--workers", "2", "--model", str(model_dir), "--input",
                 str(shards / "*"), "--output", str(out), "--quiet", "--batch-size", "4"]) == 0
    assert "wrote 21 predictions to 4 shard(s)" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"]
    for shard in sorted(shards.iterdir()):
        expected = single_process(model_dir, shard, tmp_path / f"single-{shard.stem}.jsonl")
        assert (out / f"{shard.stem}.jsonl").read_bytes() == expected, shard.name
    ids = [json.loads(line)["id"] for line in (out / "b.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ids == [f"b{i}" for i in range(len(COMMENTS))]  # input order


def test_a_rerun_redoes_only_the_shard_whose_output_is_missing(cluster, model_dir, tmp_path):
    shards = shard_paths([str(write_shards(tmp_path / "shards") / "*")])
    out = tmp_path / "out"
    options = RayOptions(workers=2, run=RunOptions(4))
    first = predict_shards([str(model_dir)], shards, out, options)
    assert (first.done, first.skipped, first.predictions) == (4, 0, 21)
    kept = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    removed = out / "c.jsonl"
    expected = removed.read_bytes()
    removed.unlink()
    second = predict_shards([str(model_dir)], shards, out, options)
    assert (second.done, second.skipped, second.predictions) == (1, 3, 6)
    assert removed.read_bytes() == expected
    for name, mtime in kept.items():
        if name != "c.jsonl":
            assert (out / name).stat().st_mtime_ns == mtime, f"{name} was written again"
    assert predict_shards([str(model_dir)], shards, out, options).done == 0  # all complete: nothing starts


def test_a_bad_row_names_its_shard_and_line_and_leaves_no_partial_output(cluster, model_dir, tmp_path, capsys):
    shards = write_shards(tmp_path / "shards")
    bad = shards / "b.jsonl"
    bad.write_text(bad.read_text(encoding="utf-8") + '{"id": "x", "title": "no comment"}\n', encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(DataError, match=rf"{bad}:7: no text column"):
        predict_shards([str(model_dir)], shard_paths([str(shards / "*")]), out, RayOptions(workers=2))
    assert not (out / "b.jsonl").exists()
    assert not [p for p in out.iterdir() if ".partial" in p.name]
    assert main(["predict", "--engine", "ray", "--model", str(model_dir), "--input", str(shards / "*.jsonl"),
                 "--output", str(out), "--quiet", "--skip-bad"]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 bad record(s)" in err and f"{bad}:7: no text column" in err
    assert len((out / "b.jsonl").read_text(encoding="utf-8").splitlines()) == len(COMMENTS)


def test_a_half_done_shard_continues_after_its_last_whole_chunk(model_dir, tmp_path):
    shards = write_shards(tmp_path / "shards")
    predictor = Predictor.from_pretrained(model_dir)
    options = RayOptions(run=RunOptions(1))  # chunks of 8 rows: the 6 + 6 rows of a.txt and b.jsonl are 2 chunks
    whole = tmp_path / "whole.jsonl"
    big = shards / "ab.jsonl"
    big.write_text("".join(json.dumps({"id": f"r{i}", "text": c}, ensure_ascii=False) + "\n"
                           for i, c in enumerate(COMMENTS * 2)), encoding="utf-8")
    assert predict_shard(predictor, big, whole, options) == (12, [])
    out = tmp_path / "out" / "ab.jsonl"
    out.parent.mkdir()
    lines = whole.read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])
    for value in first["labels"].values():  # probabilities no prediction of this row has: the mark of a kept row
        value["probs"] = {label: 0.5 for label in value["probs"]}
    marked = json.dumps(first, ensure_ascii=False).encode() + b"\n"
    (out.parent / "ab.jsonl.partial").write_bytes(marked + b"".join(lines[1:10]) + lines[10][:7])  # killed in row 11
    # and the options it was predicted with, which the killed run wrote first
    (out.parent / "ab.jsonl.partial.json").write_text(json.dumps(run_options(predictor, RunOptions(1), options.read)),
                                                        encoding="utf-8")
    assert predict_shard(predictor, big, out, options) == (12, [])
    assert out.read_bytes() == marked + b"".join(lines[1:])  # rows 1-8 kept, 9-12 predicted again
    assert not (out.parent / "ab.jsonl.partial").exists()


def test_an_output_named_as_a_file_is_refused_before_ray_starts(model_dir, tmp_path, capsys):
    shards = write_shards(tmp_path / "shards")
    for name in ("out.jsonl", "out.PARQUET"):
        assert main(["predict", "--engine", "ray", "--model", str(model_dir), "--input", str(shards / "*"),
                     "--output", str(tmp_path / name), "--quiet"]) == 2
        assert "the Ray engine writes a folder, one output shard per input shard" in capsys.readouterr().err
        assert not (tmp_path / name).exists()


def test_shards_that_would_write_the_same_output_are_refused(tmp_path):
    with pytest.raises(ArgumentError, match="would both write"):
        output_shards([tmp_path / "x" / "a.csv", tmp_path / "y" / "a.jsonl"], tmp_path / "out", "jsonl")
    with pytest.raises(ArgumentError, match="no input shard matches"):
        shard_paths([os.fspath(tmp_path / "*.jsonl")])
