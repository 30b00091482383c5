"""The config schema: one dataclass per section, and the values each key allows.

Keys that choose from a closed set of names are typed by the enums of `kold_span.config.choices`
(`TaskKind`, `Problem`, `SnapMode`); `Config.to_dict` gives them back as their strings.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional, Union

from kold_span.config.binding import bounded
from kold_span.config.choices import EvasionKind, Problem, SnapMode, Targets, TaskKind

POOLINGS = ("first", "mean")
# Seeds as numpy and Lightning take them.
SEED_MAX = 2 ** 32 - 1
# Far above any encoder trained (a few hundred layers, heads and positions in the tens of thousands), far
# below what would exhaust memory while the network is built (docs/ROBUSTNESS.md, "Config checks").
MAX_LAYERS, MAX_HEADS, MAX_WIDTH, MAX_POSITIONS, MAX_VOCAB = 256, 1024, 65_536, 1_048_576, 4_194_304


@dataclass
class ScratchEncoderConfig:
    """A small BERT-style encoder trained from scratch with a tokenizer trained on the data."""

    vocab_size: int = bounded(8000, 16, MAX_VOCAB)
    hidden_size: int = bounded(128, 1, MAX_WIDTH)  # a multiple of heads
    layers: int = bounded(2, 1, MAX_LAYERS)
    heads: int = bounded(2, 1, MAX_HEADS)
    intermediate_size: int = bounded(256, 1, MAX_WIDTH)
    max_position: int = bounded(512, 8, MAX_POSITIONS)
    tokenizer: str = "wordpiece"  # or "unigram"
    morpheme_pretokenize: bool = False  # Kiwi morphemes as pre-tokens (Korean)
    lowercase: bool = True


@dataclass
class EncoderConfig:
    """Which encoder to use: a hub id / local directory, or a scratch encoder."""

    name_or_path: Optional[str] = None
    scratch: Optional[ScratchEncoderConfig] = None
    # Keep the word embedding table as loaded: a multilingual vocabulary is most of a small encoder's
    # weights, and its AdamW update a large share of a CPU step (measured in docs/ENCODERS.md).
    freeze_word_embeddings: bool = False


@dataclass
class ModelConfig:
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    dropout: float = bounded(0.1, 0, 1, high_open=True)
    max_length: int = bounded(128, 8, MAX_POSITIONS)
    stride: int = bounded(32, 0)
    # What the sequence heads read: the first token ("first") or the mean over the window's
    # tokens ("mean", how sentence encoders such as e5 and all-MiniLM were trained).
    pooling: str = "first"


@dataclass
class DecisionConfig:
    """The thresholds chosen on dev after training, as `kold-span thresholds` chooses them (docs/THRESHOLDS.md).

    `remove` (high precision) comes from `precision` or `f1`, `review` (high recall) from `recall`
    or `flagged` (the share of texts a reviewer sees); e.g. {precision: 0.95, recall: 0.9}.
    """

    label: Optional[str] = None  # sequence tasks: the label whose probability is cut ("true" for a true/false task)
    precision: Optional[float] = bounded(None, 0, 1, low_open=True)
    f1: bool = False
    recall: Optional[float] = bounded(None, 0, 1, low_open=True)
    flagged: Optional[float] = bounded(None, 0, 1, low_open=True)


@dataclass
class TaskConfig:
    """One training objective: a sequence label or a span type."""

    name: str = ""
    kind: TaskKind = TaskKind.SEQUENCE  # "sequence" (first-token head) or "span" (BIO token head)
    source: str = ""  # label key for sequence tasks, span type for span tasks
    problem: Problem = Problem.SINGLE  # sequence: "single", "multi" or "soft"
    weight: float = bounded(1.0, 0)
    labels: Optional[list[str]] = None  # fixed label order; built from the data when empty
    gate: Optional[str] = None  # span tasks: output spans only where this boolean task says true
    # sequence tasks: "balanced" weighs each class's loss by n / (classes × its count in train) (single-label),
    # or each label's positive term by its negatives / positives in train (multi-label)
    class_weight: Optional[str] = None
    # multi-label sequence tasks: the probability at which a label is predicted; a number for every
    # label, or "dev" = each label's F1-best threshold on the dev split, chosen after training.
    # span tasks: the default 0.5 keeps each token's most probable tag; a number t (or "dev" = the
    # char-F1-best t on the dev split) marks a token inside a span when P(B) + P(I) >= t
    threshold: Any = 0.5
    # single- and multi-label sequence tasks: fuse a TF-IDF n-gram model into the predictions, its weight
    # and whether it reads the context chosen on dev by `fuse_metric` (see kold_span.models.ngram)
    fuse_ngram: bool = False
    fuse_metric: str = "macro_f1"  # single: macro_f1, accuracy, balanced_accuracy; multi: macro_f1, micro_f1
    # more labelled files (read like data.train) the fused n-gram may also learn from, not the encoder;
    # dev decides whether it does. Examples whose text is in the dev or test split are left out.
    fuse_ngram_train: Optional[list[str]] = None
    # the temperature its probabilities are divided at (as logits): "dev" = fitted on the dev split after training
    # by negative log-likelihood (none without dev), a number = fixed (1 = as trained)
    temperature: Any = "dev"
    # single-label and soft sequence tasks: "dev" = after the temperature, map the top label's probability to
    # its dev hit rate (centred isotonic regression, argmax kept: kold_span.models.confidence); a multi-label
    # task with threshold: dev, each label's probability. "none" = no map; span tasks have none.
    confidence_map: str = "dev"
    # the allow / review / remove thresholds chosen on dev after training (`DecisionConfig`); none by default
    decision: Optional[DecisionConfig] = None


@dataclass
class ContextConfig:
    """What context enters the input: `mode: none` drops it (the ablation switch)."""

    mode: str = "auto"  # auto/title/topic/post/dialogue = use the corpus's context; none = drop it
    max_turns: Optional[int] = bounded(None, 0)  # dialogue: keep only the last N turns (0 = none)


@dataclass
class PerspectiveConfig:
    """One example per (item, annotator), the annotator's traits verbalised as context."""

    label: str = ""  # the annotation label each expanded example is trained on
    traits: list[str] = field(default_factory=list)  # e.g. [gender, age]; [] = no traits


@dataclass
class NegativesConfig:
    """Benign texts from another corpus: trained on with `labels` and no span, a held-out share kept to count
    how many benign texts the model flags (the `benign` scores of metrics.json), a `dev_fraction` share scored
    with dev (so dev holds both classes of the gating task: its balanced accuracy means something).

    `keep_spans: true` makes a source of positives instead: each text keeps its gold spans beside `labels`
    (the hateful side of contrastive pairs, e.g. the functional suite's train templates with
    `filter: {hateful: true}`); such a source holds nothing out as benign (`holdout_fraction: 0`).
    """

    reader: str = ""  # a corpus reader, as data.reader
    path: str = ""
    labels: dict[str, Any] = field(default_factory=dict)  # every negative gets these labels, e.g. {toxic: false}
    filter: dict[str, Any] = field(default_factory=dict)  # keep texts whose labels (or meta.KEY) match, as data.filter
    reader_options: dict[str, Any] = field(default_factory=dict)
    limit: Optional[int] = bounded(None, 1)  # read at most N texts (after the filter)
    # share never trained on, scored as `benign` after training
    holdout_fraction: float = bounded(0.3, 0, 1, high_open=True)
    dev_fraction: float = bounded(0.0, 0, 1, high_open=True)  # share never trained on, added to the dev split
    keep_spans: bool = False  # keep each text's gold spans (a source of positives; see above)


@dataclass
class EvasionConfig:
    """Disguised copies of training texts (`kold_span.text.perturb`), gold spans carried through each edit."""

    # share of training examples that get one disguised copy beside the original
    probability: float = bounded(0.5, 0, 1)
    kinds: list[EvasionKind] = field(default_factory=lambda: list(EvasionKind))  # one drawn per copy
    word_probability: float = bounded(0.5, 0, 1)  # share of a chosen example's words disguised
    targets: Targets = Targets.ALL  # "spans": only words inside a gold span are disguised
    seed: Optional[int] = bounded(None, 0, SEED_MAX)  # null: the run's seed
    dev: bool = True  # also score a disguised copy of dev after each epoch (dev_perturbed/...)


@dataclass
class AugmentConfig:
    """Training-data augmentations; each is off while its key is null."""

    evasion: Optional[EvasionConfig] = None


@dataclass
class DataConfig:
    reader: str = "kold"
    train: str = ""
    dev: Optional[str] = None
    test: Optional[str] = None
    dev_fraction: float = bounded(0.1, 0, 1, high_open=True)
    test_fraction: float = bounded(0.1, 0, 1, high_open=True)
    split_seed: int = bounded(13, 0, SEED_MAX)
    stratify: Optional[str] = None  # label key to stratify the carved splits on
    filter: dict[str, Any] = field(default_factory=dict)  # keep examples whose labels match
    reader_options: dict[str, Any] = field(default_factory=dict)
    limit: Optional[int] = bounded(None, 1)  # read only the first N training examples (debugging)
    # share of the training split (after dev/test are carved) whose A/B speaker marks are exchanged,
    # the KoCoSa paper's augmentation (0.5 there); chosen with the run's seed; dev and test stay as read
    speaker_swap: float = bounded(0.0, 0, 1)
    perspective: Optional[PerspectiveConfig] = None
    # benign texts from another corpus (a corpus without them), or a list of such sources (each its own held-out share)
    negatives: Union[NegativesConfig, list[NegativesConfig], None] = None
    augment: AugmentConfig = field(default_factory=AugmentConfig)

    def negative_sources(self) -> list[NegativesConfig]:
        """`negatives` as a list: none, the one source, or each of several.

        Example:
            >>> one = DataConfig(negatives=NegativesConfig(reader="beep"))
            >>> DataConfig().negative_sources(), len(one.negative_sources())
            ([], 1)
        """
        if self.negatives is None:
            return []
        return list(self.negatives) if isinstance(self.negatives, list) else [self.negatives]


@dataclass
class AlignConfig:
    snap: SnapMode = SnapMode.MORPHEME  # how predicted spans are widened: morpheme, eojeol, word, none
    trim: bool = True


@dataclass
class NormalizeConfig:
    """Evasion-robust normalization (`kold_span.text.normalize`) of every text the model reads.

    On unless `enabled: false` (a config without the section normalizes too); each step runs unless
    switched off. Saved in the model directory, so training, predict, serve, the spaCy component and
    Ray normalize alike (docs/ROBUSTNESS.md).
    """

    enabled: bool = True
    nfc: bool = True  # canonical composition: decomposed Hangul (NFD) to syllables
    width: bool = True  # fullwidth, halfwidth and mathematical letters and digits
    invisible: bool = True  # zero-width, bidi and other invisible characters removed
    confusables: bool = True  # look-alike letters inside Latin words folded (Unicode TR39)
    letters: bool = True  # ⓘⓓⓘⓞⓣ, ɪᴅɪᴏᴛ, 🇮🇩🇮🇴🇹: letters by Unicode's data, inside a word that reads as a word
    elongation: bool = True  # stuuuupid -> stupid
    leet: bool = True  # 1d10t, $tupid, f*ck
    keyboard: bool = True  # tlqkf -> 시발 (Korean typed on an English keyboard)
    jamo: bool = True  # ㅅㅣ발 -> 시발
    separators: bool = True  # 씨.발, 시1발, st.upid
    masks: bool = True  # f**k, b#tch, 씨x발, 개x끼: symbols for letters, read where one word clearly fits
    # 씨 발, s t u p i d (single syllables or letters that spell a common word; can join an interjection: 오 이 → 오이)
    spaced: bool = True

    def steps(self) -> Optional[tuple[str, ...]]:
        """The names of the steps switched on, or None when normalization is off.

        Example:
            >>> NormalizeConfig(enabled=False).steps(), NormalizeConfig(leet=False).steps()[:4]
            (None, ('nfc', 'width', 'invisible', 'confusables'))
        """
        if not self.enabled:
            return None
        return tuple(f.name for f in dataclasses.fields(self) if f.name != "enabled" and getattr(self, f.name))


@dataclass
class TrainerConfig:
    accelerator: str = "auto"
    # a count (-1: every GPU), "auto", or which GPUs: [0, 2]; the training layer checks them against the machine
    devices: Union[int, str, list[int]] = bounded("auto", 0, also=(-1,))
    strategy: str = "auto"
    num_nodes: int = bounded(1, 1, 65_536)
    precision: str = "32-true"
    max_epochs: int = bounded(10, 1)
    max_steps: int = bounded(-1, 1, also=(-1,))  # -1: no limit
    batch_size: int = bounded(16, 1)
    eval_batch_size: int = bounded(64, 1)
    accumulate_grad_batches: int = bounded(1, 1)
    lr: float = bounded(5e-4, 0, low_open=True)
    weight_decay: float = bounded(0.01, 0)
    warmup_ratio: float = bounded(0.1, 0, 1, high_open=True)
    gradient_clip_val: Optional[float] = bounded(1.0, 0, low_open=True)
    monitor: str = "dev/loss"
    monitor_mode: str = "min"
    early_stopping_patience: Optional[int] = bounded(None, 0)
    num_workers: int = bounded(0, 0, 1024)
    log_every_n_steps: int = bounded(10, 1)
    check_val_every_n_epoch: int = bounded(1, 1)
    deterministic: bool = False
    progress_bar: bool = True
    # a number of batches (int) or a share of them (float, at most 1)
    overfit_batches: Union[int, float] = bounded(0.0, 0)
    threads: Optional[int] = bounded(None, 1, 4096)  # torch CPU threads; 1 is fastest when several runs share a machine
    group_by_length: bool = False  # batches of similar-length windows: less padding, same examples per epoch
    keep_checkpoints: bool = True  # false: delete checkpoints/ once the best model is exported (no --resume)
    # also write checkpoints/last.ckpt every this many optimizer steps, so --resume continues inside an
    # epoch (the same batches, dropout and weights as the run uninterrupted); null: after each epoch only
    checkpoint_every_n_steps: Optional[int] = bounded(None, 1)
    # validate, checkpoint and export an exponential moving average of the trained weights with this
    # decay (e.g. 0.999: about the last thousand steps); null trains and exports the weights as they are
    ema_decay: Optional[float] = bounded(None, 0, 1, low_open=True, high_open=True)


@dataclass
class TextSource:
    """Where pretraining texts come from: exactly one of `reader` (+ `path`), `file` or `beep_unlabeled`."""

    reader: Optional[str] = None  # a corpus reader name (kold, beep, unsmile, kocosa, ...)
    path: Optional[str] = None  # the reader's file or directory
    options: dict[str, Any] = field(default_factory=dict)  # reader keyword options
    file: Optional[str] = None  # a plain UTF-8 text file, one text per line
    beep_unlabeled: Optional[str] = None  # the BEEP! directory holding the unlabeled comments


@dataclass
class PretrainConfig:
    """One `kold-span pretrain` run: texts, encoder sizes, masking and optimisation, output directory.

    The optimisation keys mean what the `trainer` keys of the same names mean in an experiment.
    """

    texts: list[TextSource] = field(default_factory=list)
    include_context: bool = True  # also train on the titles / dialogue turns the readers give as context
    encoder: ScratchEncoderConfig = field(default_factory=ScratchEncoderConfig)
    max_length: int = bounded(64, 8, MAX_POSITIONS)  # tokens per text, [CLS] and [SEP] included
    mlm_probability: float = bounded(0.15, 0, 1, low_open=True, high_open=True)
    batch_size: int = bounded(32, 1)
    lr: float = bounded(5e-4, 0, low_open=True)
    weight_decay: float = bounded(0.01, 0)
    max_steps: Optional[int] = bounded(None, 1)  # when set, wins over `epochs`
    epochs: int = bounded(1, 1)
    warmup_ratio: float = bounded(0.06, 0, 1, high_open=True)
    # the gradients' largest norm; null: not clipped
    gradient_clip_val: Optional[float] = bounded(1.0, 0, low_open=True)
    max_minutes: Optional[float] = bounded(None, 0, low_open=True)  # stop (learning rate decayed to 0) after this long
    heldout_fraction: float = bounded(0.02, 0, 0.5, high_open=True)  # texts kept out of training for the final loss
    log_every_n_steps: int = bounded(50, 1)
    threads: Optional[int] = bounded(None, 1, 4096)  # torch CPU threads; 1 is often fastest on a shared machine
    accelerator: str = "auto"
    devices: Union[int, str, list[int]] = bounded("auto", 0, also=(-1,))
    strategy: str = "auto"
    precision: str = "32-true"
    seed: int = bounded(13, 0, SEED_MAX)
    output: str = "checkpoints/pretrained/mlm"  # the encoder directory; checkpoints, logs: OUTPUT-run
    limit_texts: Optional[int] = bounded(None, 2)  # keep a random N of the texts (debugging)


@dataclass
class Config:
    """A whole experiment: one dataclass per section, each key with its default.

    Example:
        >>> config = Config(tasks=[TaskConfig(name="OFF", source="OFF")])
        >>> config.trainer.lr, config.to_dict()["tasks"][0]["kind"]
        (0.0005, 'sequence')
    """

    experiment: str = "default"
    run: Optional[str] = None
    seed: int = bounded(13, 0, SEED_MAX)
    output_dir: str = "checkpoints"
    data: DataConfig = field(default_factory=DataConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    tasks: list[TaskConfig] = field(default_factory=list)
    align: AlignConfig = field(default_factory=AlignConfig)
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data: the enum members as their strings."""
        return dataclasses.asdict(self, dict_factory=lambda items: {
            key: value.value if isinstance(value, Enum) else value for key, value in items})


SECTIONS = ("data", "model", "trainer", "context", "align", "tasks", "debug")


# The metrics a fused n-gram's weight may be chosen by, per problem (see `fuse_metric`).
FUSE_METRICS = {Problem.SINGLE: ("macro_f1", "accuracy", "balanced_accuracy"),
                Problem.MULTI: ("macro_f1", "micro_f1")}


CONTEXT_MODES = ("auto", "title", "topic", "post", "dialogue", "none")
