#!/usr/bin/env python3
"""Generate the made-up KOLD-format sample and the demo comments.

Run from anywhere (standard library only, seeded, so every run writes the same bytes):

    python3 data/sample/make_sample.py [OUT_DIR]

Writes into OUT_DIR (default: this folder, data/sample/)
    kold_sample.json   generated records in the KOLD v1 layout
    comments.txt       unlabeled demo comments, one per line

The words comments are made of are the files in words/ (see `word_list`); the record layout
and the gold rule are in kold_format.py, which the test fixtures' generator
(tests/fixtures/make_fixtures.py) shares. Every title, comment and annotator id was made up
for this project; nothing is taken from KOLD or any other corpus.
"""
from __future__ import annotations

import argparse
import datetime
import random
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from kold_format import (GROUPS, NOT_SPECIFIED, UNKNOWN_GROUP, Span, annotation, make_record, span_text, summary,
                         write_json)

HERE = Path(__file__).resolve().parent
WORDS = HERE / "words"

SEED = 20220216
N_RECORDS = 900
N_OFFENSIVE = 405  # 45 %
# How the offensive records split by target type.
N_BY_KIND = {"group": 182, "individual": 114, "others": 41, "untargeted": 68}

ANNOTATOR_IDS = [
    301127, 301458, 302093, 302511, 303370, 303842, 304106, 304659,
    305021, 305734, 306288, 306915, 307340, 307862, 308193, 308770,
    309052, 309613, 310247, 310898, 311426, 311957, 312380, 312846,
]


# --------------------------------------------------------------------------------------
# The word files.


def read_entries(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of each entry of a word file; `#` lines and blank lines are skipped.

    An entry that starts or ends with white space is an error naming the line: the generator
    joins entries with spaces of its own, and a stray one would change the sample unseen.
    """
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line != line.strip():
            raise ValueError(f"{path}:{number}: the entry {line!r} starts or ends with white space")
        entries.append((number, line))
    return entries


def word_list(name: str, folder: Path = WORDS) -> list[str]:
    """The entries of `folder/<name>.txt`, in file order (an entry listed twice is drawn twice as often)."""
    return [text for _, text in read_entries(folder / f"{name}.txt")]


def word_table(name: str, columns: Sequence[str], folder: Path = WORDS) -> list[tuple[str, ...]]:
    """The rows of `folder/<name>.tsv`: each entry's tab-separated fields, one per name in `columns`."""
    path = folder / f"{name}.tsv"
    rows = []
    for number, text in read_entries(path):
        fields = tuple(text.split("\t"))
        if len(fields) != len(columns):
            raise ValueError(f"{path}:{number}: expected {len(columns)} tab-separated fields "
                             f"({', '.join(columns)}), got {len(fields)}")
        for column, value in zip(columns, fields):
            if not value or value != value.strip():
                raise ValueError(f"{path}:{number}: field {column} is {value!r}: empty, or white space around it")
        rows.append(fields)
    return rows


def by_topic(name: str, folder: Path = WORDS) -> dict[str, list[str]]:
    """A (topic, entry) table as topic → its entries, both in file order."""
    out: dict[str, list[str]] = {}
    for topic, entry in word_table(name, ("topic", "entry"), folder):
        out.setdefault(topic, []).append(entry)
    return out


# (title, topic, source)
TITLES = [(title, topic, source) for topic, source, title in word_table("titles", ("topic", "source", "title"))]
# Group mentions (the target span) and the GRP names they stand for, by topic.
GROUP_TARGETS: dict[str, list[tuple[str, list[str]]]] = {}
for _topic, _mention, _grps in word_table("group_targets", ("topic", "mention", "GRP names")):
    GROUP_TARGETS.setdefault(_topic, []).append((_mention, _grps.split(", ")))
INDIVIDUAL_TARGETS = by_topic("individual_targets")
DEROGATORY = {"댓글 쓴 놈"}  # never used in a benign comment
OTHERS_TARGETS = word_list("others_targets")

# The insult lexicon: the offensive spans.
INSULT_PREDICATES = word_list("insult_predicates")
RACE_PREDICATES = word_list("race_predicates")
INSULT_MODIFIERS = word_list("insult_modifiers")
PROFANITY = word_list("profanity")
IMPERATIVES = {"꺼져라", "좀 꺼져", "입 닥쳐라", "입 좀 다물어", "그냥 사라져라", "한국에서 나가라",
               "자기 나라로 돌아가라"}
# Their benign twins.
PRAISE_PREDICATES = word_list("praise_predicates")
BENIGN_IMPERATIVES = {"화이팅", "힘내라"}
KIND_MODIFIERS = word_list("kind_modifiers")
EXCLAMATIONS = word_list("exclamations")

# Framing shared by benign and offensive comments, so that none of it hints at the label. Kept
# here, not in words/: the spaces at their ends are what joins them to the next piece.
PREFIXES = ["", "", "", "", "", "솔직히 ", "아니 ", "와 ", "이번에도 ", "어휴 ", "하... ", "ㅋㅋㅋ ", "진심 ",
            "근데 ", "음 ", "오 ", "ㅎㅎ "]
SUFFIXES = ["", "", "", "", " ㅋㅋ", " ㅋㅋㅋㅋ", "..", "!!", " 진짜로", ".", "~", "?", " ㅎㅎ", "!", " 어휴"]
JOINERS = [". ", " ", " ", "... ", "ㅋㅋ ", ", "]
ADVERBS = ["", "", "진짜 ", "또 ", "하여튼 ", "맨날 ", "다 "]
AFTER_GROUP = ["", " ㅋㅋ", " 또 시작이네", " 또 나왔네", "..", " 어휴", " 많네 요즘"]

# Neutral building blocks. A benign comment is one or two neutral clauses; an offensive
# comment is built from the same clauses plus an insult, so only the insult tells them apart.
TOPIC_NOUNS = by_topic("topic_nouns")
EVERYDAY_NOUNS = word_list("everyday_nouns")
GENERAL_NOUNS = word_list("general_nouns")
NOUN_PREDICATES = word_list("noun_predicates")
TOPIC_PREDICATES = word_list("topic_predicates")
NOUN_FRAMES = word_list("noun_frames")
NEUTRAL_ANY = word_list("neutral_sentences")
NEUTRAL_ECHOES = word_list("neutral_echoes")
NEUTRAL_BY_TOPIC = by_topic("neutral_by_topic")
NEUTRAL_GROUPS = by_topic("neutral_groups")
GROUP_FRAMES = word_list("group_frames")
PERSON_FRAMES = word_list("person_frames")
SCENES = word_list("scenes")
CONNECTIVES = word_list("connectives")
TIMES = word_list("times")
CONTEXT_LEADS = word_list("context_leads")
DOING_LEADS = word_list("doing_leads")

# Demo comments for `make demo`'s predict step: (comment, its insult or None), benign and
# offensive in turn, never a sample comment.
DEMO_COMMENTS: list[tuple[str, Optional[str]]] = [
    line for benign, (insult, offensive) in zip(word_list("demo_benign"),
                                                word_table("demo_offensive", ("insult", "comment")))
    for line in ((benign, None), (offensive, insult))]

# The sets above name entries of the word files; a renamed entry must not leave them stale.
assert IMPERATIVES <= set(INSULT_PREDICATES + RACE_PREDICATES), IMPERATIVES - set(INSULT_PREDICATES + RACE_PREDICATES)
assert BENIGN_IMPERATIVES <= set(PRAISE_PREDICATES), BENIGN_IMPERATIVES - set(PRAISE_PREDICATES)
assert DEROGATORY <= {p for people in INDIVIDUAL_TARGETS.values() for p in people}, DEROGATORY
assert {g for pool in GROUP_TARGETS.values() for _, grps in pool for g in grps} <= set(GROUPS)


# --------------------------------------------------------------------------------------
# Sample generation.


def has_final_consonant(word: str) -> bool:
    """Whether the last Hangul syllable ends in a consonant (decides 은/는, 이/가)."""
    c = word[-1]
    return "가" <= c <= "힣" and (ord(c) - 0xAC00) % 28 != 0


def particle(rng: random.Random, word: str) -> str:
    """A topic/subject particle (or none) fitting `word`."""
    kind = rng.choice(["topic", "topic", "subject", "none"])
    if kind == "none":
        return ""
    if kind == "topic":
        return "은" if has_final_consonant(word) else "는"
    return "이" if has_final_consonant(word) else "가"


def assemble(pieces: list[tuple[str, Optional[str]]]) -> tuple[str, list[Span], list[Span]]:
    """Join (text, tag) pieces; tag 'off'/'tgt' pieces become spans of that kind."""
    text, off, tgt = "", [], []
    for piece, tag in pieces:
        if tag == "off":
            off.append((len(text), len(text) + len(piece)))
        elif tag == "tgt":
            tgt.append((len(text), len(text) + len(piece)))
        text += piece
    return text, off, tgt


def fill(template: str, word: str) -> str:
    """Put `word` into the {n}/{g}/{x} slot of `template`, with particles that fit it."""
    final = has_final_consonant(word)
    text = template.replace("{n}", word).replace("{g}", word).replace("{x}", word)
    return (text.replace("{은}", "은" if final else "는").replace("{이}", "이" if final else "가")
            .replace("{을}", "을" if final else "를"))


_DECKS: dict[str, list[Any]] = {}  # see `deal`; emptied by `generate_sample`


def deal(rng: random.Random, key: str, pool: Sequence[Any]) -> Any:
    """The next item of a shuffled deck of `pool` (reshuffled when used up), so that every
    building block of the sample gets used, not only the lucky ones."""
    deck = _DECKS.get(key)
    if not deck:
        deck = _DECKS[key] = rng.sample(list(pool), len(pool))
    return deck.pop()


def topic_noun(rng: random.Random, topic: str) -> str:
    """A noun of `topic`, or an everyday or general one."""
    roll = rng.random()
    if roll < 0.1:
        return deal(rng, "noun", GENERAL_NOUNS)
    if roll < 0.4 or topic not in TOPIC_NOUNS:
        return deal(rng, "everyday", EVERYDAY_NOUNS)
    return deal(rng, f"noun:{topic}", TOPIC_NOUNS[topic])


def neutral_clause(rng: random.Random, topic: str) -> str:
    """One neutral clause: a noun pattern, or a whole neutral sentence."""
    if rng.random() < 0.6:
        clause = fill(rng.choice(NOUN_FRAMES), topic_noun(rng, topic))
        clause = clause.replace("{p}", deal(rng, "pred", NOUN_PREDICATES)).replace("{q}", rng.choice(TOPIC_PREDICATES))
        roll = rng.random()
        if roll < 0.25:
            return deal(rng, "scene", SCENES) + " " + clause
        if roll < 0.45:  # "개막전 보러 갔는데 좋네요"
            return connective(rng, topic) + " " + deal(rng, "pred", NOUN_PREDICATES)
        return clause
    roll = rng.random()
    if roll < 0.2:
        return deal(rng, "echo", NEUTRAL_ECHOES)
    if topic in NEUTRAL_BY_TOPIC and roll < 0.6:
        return deal(rng, f"sentence:{topic}", NEUTRAL_BY_TOPIC[topic])
    return deal(rng, "sentence", NEUTRAL_ANY)


def connective(rng: random.Random, topic: str) -> str:
    """A connective clause about a topic noun ("개막전 보러 갔는데")."""
    return deal(rng, "connective", CONNECTIVES).replace("{n}", topic_noun(rng, topic))


def neutral_mention(rng: random.Random, topic: str) -> str:
    """A group, person or organisation to say something nice about."""
    roll = rng.random()
    if roll < 0.35:
        pool = NEUTRAL_GROUPS.get(topic) or [g for gs in NEUTRAL_GROUPS.values() for g in gs]
        return deal(rng, f"group:{topic}", pool)
    if roll < 0.8:
        people = [p for p in INDIVIDUAL_TARGETS.get(topic, []) * 2 + INDIVIDUAL_TARGETS["any"] if p not in DEROGATORY]
        return deal(rng, f"person:{topic}", people)
    return deal(rng, "organisation", OTHERS_TARGETS)


def mention_clause(rng: random.Random, topic: str) -> str:
    """A neutral clause about a group, a person or an organisation."""
    roll = rng.random()
    if roll < 0.55:
        pool = NEUTRAL_GROUPS.get(topic) or [g for gs in NEUTRAL_GROUPS.values() for g in gs]
        return fill(rng.choice(GROUP_FRAMES), deal(rng, f"group:{topic}", pool))
    if roll < 0.85:
        people = [p for p in INDIVIDUAL_TARGETS.get(topic, []) * 2 + INDIVIDUAL_TARGETS["any"] if p not in DEROGATORY]
        return fill(rng.choice(PERSON_FRAMES), deal(rng, f"person:{topic}", people))
    return fill(rng.choice(PERSON_FRAMES), deal(rng, "organisation", OTHERS_TARGETS))


def join_clause(rng: random.Random, clause: str) -> str:
    """`clause` followed by a separator for the next one."""
    return clause + (" " if clause[-1] in "!?." else rng.choice(JOINERS))


def target_then_insult(rng: random.Random, mention: str, insult: str) -> list[tuple[str, Optional[str]]]:
    """`mention` + particle + adverb + `insult`, choosing words that fit the insult's mood."""
    if insult in IMPERATIVES or insult in BENIGN_IMPERATIVES:
        glue = rng.choice(["", "은" if has_final_consonant(mention) else "는"]) + " " + rng.choice(["", "그냥 ", "제발 "])
    else:
        adverb = rng.choice(ADVERBS)
        glue = particle(rng, mention) + " " + ("" if insult.startswith(adverb.strip() or "\0") else adverb)
    return [(mention, "tgt"), (glue, None), (insult, "off")]


def targeted_pieces(rng: random.Random, mention: str, topic: str, allow_modifier: bool,
                    benign: bool = False) -> list[tuple[str, Optional[str]]]:
    """A comment insulting `mention`, in one of several word orders, around neutral clauses; with
    `benign`, its twin that praises `mention` instead (the 'off' pieces are then not offensive)."""
    if benign:
        preds, key, modifiers = PRAISE_PREDICATES, "praise", KIND_MODIFIERS
    else:
        preds = INSULT_PREDICATES + (RACE_PREDICATES * 3 if topic == "race" else [])
        key, modifiers = ("insult:race" if topic == "race" else "insult"), INSULT_MODIFIERS

    def insult() -> str:
        return deal(rng, key, preds)

    pre, post = rng.choice(PREFIXES), rng.choice(SUFFIXES)
    shapes = (["target_first"] * 3 + ["after_neutral"] * 3 + ["context", "doing", "doing", "neutral_after", "inverted",
              "two_insults"] + (["modifier"] * 3 if allow_modifier else []))
    shape = rng.choice(shapes)
    if shape == "target_first":
        return [(pre, None), *target_then_insult(rng, mention, insult()), (post, None)]
    if shape == "after_neutral":
        return [(join_clause(rng, neutral_clause(rng, topic)), None),
                *target_then_insult(rng, mention, insult()), (post, None)]
    if shape == "context":
        if rng.random() < 0.5:
            lead = connective(rng, topic)
        else:
            lead = rng.choice(CONTEXT_LEADS).replace("{n}", topic_noun(rng, topic))
            lead = lead.replace("{s}", deal(rng, "scene", SCENES))
        return [(pre + lead + " ", None), *target_then_insult(rng, mention, insult()), (post, None)]
    if shape == "doing":
        word = insult()
        adverb = "" if word in IMPERATIVES or word in BENIGN_IMPERATIVES else rng.choice(ADVERBS)
        adverb = "" if word.startswith(adverb.strip() or "\0") else adverb
        if rng.random() < 0.5:
            lead = connective(rng, topic)
        else:
            lead = rng.choice(DOING_LEADS).replace("{n}", topic_noun(rng, topic)).replace("{t}", rng.choice(TIMES))
        return [(pre, None), (mention, "tgt"), (" " + lead + " " + adverb, None), (word, "off"), (post, None)]
    if shape == "neutral_after":
        clause = neutral_clause(rng, topic)
        return [(pre, None), *target_then_insult(rng, mention, insult()),
                (rng.choice([". ", " ", "... ", "ㅋㅋ "]) + clause, None)]
    if shape == "inverted":
        return [(pre, None), (insult(), "off"), (", ", None), (mention, "tgt"),
                (particle(rng, mention) + rng.choice(["", "", " ㅋㅋ", ".."]), None)]
    if shape == "two_insults":
        first, second = insult(), insult()
        while second == first:
            second = insult()
        return [(pre, None), *target_then_insult(rng, mention, first),
                (rng.choice([". ", " ", "... ", "ㅋㅋ "]) + rng.choice(["진짜 ", "그냥 ", "", "아무튼 "]), None),
                (second, "off"), (post, None)]
    lead = join_clause(rng, neutral_clause(rng, topic)) if rng.random() < 0.3 else pre
    return [(lead, None), (deal(rng, "modifier" + key, modifiers), "off"), (" ", None), (mention, "tgt"),
            (rng.choice(AFTER_GROUP), None)]


def untargeted_pieces(rng: random.Random, topic: str, benign: bool = False) -> list[tuple[str, Optional[str]]]:
    """Profanity with no target, around a neutral clause; with `benign`, an exclamation instead."""
    neutral = neutral_clause(rng, topic)
    lexicon, key = (EXCLAMATIONS, "exclamation") if benign else (PROFANITY, "profanity")
    shape = rng.choice(["before", "before", "after", "after", "alone", "two"])
    if shape == "before":
        return [(rng.choice(PREFIXES), None), (deal(rng, key, lexicon), "off"),
                (rng.choice([" ", ". ", "... ", ", "]) + neutral + rng.choice(SUFFIXES), None)]
    if shape == "after":
        return [(rng.choice(PREFIXES) + join_clause(rng, neutral), None), (deal(rng, key, lexicon), "off"),
                (rng.choice(SUFFIXES), None)]
    if shape == "alone":
        return [(rng.choice(PREFIXES), None), (deal(rng, key, lexicon), "off"), (rng.choice(SUFFIXES), None)]
    first, second = deal(rng, key, lexicon), deal(rng, key, lexicon)
    while second == first:
        second = deal(rng, key, lexicon)
    return [(first, "off"), (" " + rng.choice(["이게 뭐냐", "또 이러네", "아침부터"]) + " ", None), (second, "off"),
            (rng.choice(SUFFIXES), None)]


def neutral_comment(rng: random.Random, topic: str) -> str:
    """A benign comment: one or two neutral clauses, often mentioning a group or person neutrally,
    or the benign twin of an offensive comment."""
    roll = rng.random()
    if roll < 0.3:
        return assemble(targeted_pieces(rng, neutral_mention(rng, topic), topic, allow_modifier=True, benign=True))[0]
    if roll < 0.38:
        return assemble(untargeted_pieces(rng, topic, benign=True))[0]
    first = mention_clause(rng, topic) if rng.random() < 0.35 else neutral_clause(rng, topic)
    roll = rng.random()
    if roll < 0.25:
        text = join_clause(rng, first) + neutral_clause(rng, topic)
    elif roll < 0.35:
        text = join_clause(rng, neutral_clause(rng, topic)) + first
    else:
        text = first
    return (rng.choice(PREFIXES) + text + rng.choice(SUFFIXES)).strip()


def perturb(rng: random.Random, comment: str, span: Span) -> Optional[Span]:
    """A third annotator's version of a span: wider, narrower, shifted, whole comment or missing."""
    s, e = span
    how = rng.choice(["wider_left", "wider_right", "narrower", "shifted", "whole", "missing"])
    if how == "wider_left" and s > 0:
        return (comment.rfind(" ", 0, max(s - 1, 0)) + 1, e)
    if how == "wider_right" and e < len(comment):
        nxt = comment.find(" ", e + 1)
        return (s, len(comment) if nxt == -1 else nxt)
    if how == "narrower" and e - s >= 4:
        cut = rng.choice([1, 2])
        return (s, e - cut) if rng.random() < 0.5 else (s + cut, e)
    if how == "shifted" and e < len(comment):
        return (s + 1, e + 1)
    if how == "whole":
        return (0, len(comment))
    if how == "missing":
        return None
    return span


def third_spans(rng: random.Random, comment: str, spans: list[Span]) -> list[Span]:
    """Perturb each span; sometimes merge two spans into one covering the gap."""
    if len(spans) == 2 and rng.random() < 0.3:
        return [(spans[0][0], spans[1][1])]
    out = [p for p in (perturb(rng, comment, sp) for sp in spans) if p is not None]
    return sorted(set(out))


def target_labels(kind: str, grps: list[str]) -> tuple[list[str], list[str]]:
    """The raw `target` inner list and `target_group` inner list for an agreeing annotator."""
    return [kind], [GROUPS[g] for g in grps]


def simulate_offensive(rng: random.Random, ids: list[int], comment: str, off: list[Span], tgt: list[Span],
                       kind: str, grps: list[str]) -> list[dict[str, Any]]:
    """Two annotators mark exactly the generated spans; the third agrees, varies or dissents."""
    target, groups = target_labels(kind, grps)
    agree = [annotation(i, True, off, target, groups, tgt) for i in ids[:2]]
    roll = rng.random()
    if roll < 0.40:
        third = annotation(ids[2], True, off, target, groups, tgt)
    elif roll < 0.85:
        t3, g3 = list(target), list(groups)
        if rng.random() < 0.25:
            t3 = [NOT_SPECIFIED] + t3
            if kind == "group":
                g3 = g3 + [UNKNOWN_GROUP]
        if kind == "group" and rng.random() < 0.2:
            g3 = [rng.choice(list(GROUPS.values()))]
        if kind in ("individual", "others") and rng.random() < 0.15:
            t3 = ["group" if kind == "others" else "others"]
        tgt3 = [] if (not tgt or rng.random() < 0.3) else third_spans(rng, comment, tgt)
        third = annotation(ids[2], True, third_spans(rng, comment, off), t3, g3, tgt3)
    else:
        third = annotation(ids[2], False)
    raw = agree + [third]
    rng.shuffle(raw)
    return raw


def simulate_benign(rng: random.Random, ids: list[int], comment: str) -> list[dict[str, Any]]:
    """All three say not offensive, or one dissents and marks a word."""
    raw = [annotation(i, False) for i in ids]
    if rng.random() < 0.12:
        start, word = rng.choice(_word_offsets(comment))
        k = rng.randrange(3)
        raw[k] = annotation(ids[k], True, [(start, start + len(word))], [rng.choice(["untargeted", NOT_SPECIFIED])])
    return raw


def _word_offsets(text: str) -> list[tuple[int, str]]:
    """(start, word) for the space-separated words of `text`."""
    out, pos = [], 0
    for w in text.split(" "):
        if w:
            out.append((pos, w))
        pos += len(w) + 1
    return out


def pick_group_mention(rng: random.Random, grp: str) -> tuple[str, str, list[str]]:
    """(topic, mention, GRP names) of a group mention standing for `grp`."""
    return deal(rng, f"mention:{grp}", [(topic, mention, grps) for topic, pool in GROUP_TARGETS.items()
                                        for mention, grps in pool if grp in grps])


def pick_title(rng: random.Random, kind: str, topic: Optional[str] = None) -> tuple[str, str, str]:
    """A title fitting the kind of comment to generate (of `topic` when given)."""
    if topic is not None:
        return rng.choice([t for t in TITLES if t[1] == topic])
    if kind == "individual":
        return rng.choice([t for t in TITLES if t[1] in INDIVIDUAL_TARGETS] * 2 + TITLES)
    if kind in ("none", "untargeted"):  # every topic equally often, so each one's words get used
        return pick_title(rng, kind, rng.choice(sorted({t[1] for t in TITLES})))
    return rng.choice(TITLES)


def random_date(rng: random.Random) -> str:
    """A date between 2021-06-01 and 2022-05-31."""
    return (datetime.date(2021, 6, 1) + datetime.timedelta(days=rng.randrange(365))).isoformat()


def generate_sample(rng: random.Random) -> list[dict[str, Any]]:
    """N_RECORDS records, N_OFFENSIVE of them offensive, all comments distinct."""
    kinds = [k for k, n in N_BY_KIND.items() for _ in range(n)] + ["none"] * (N_RECORDS - N_OFFENSIVE)
    assert len(kinds) == N_RECORDS and sum(N_BY_KIND.values()) == N_OFFENSIVE
    rng.shuffle(kinds)
    _DECKS.clear()
    # Every GRP group gets its turn as the main target of group comments.
    group_turns = [g for _ in range(N_BY_KIND["group"] // len(GROUPS) + 1) for g in rng.sample(list(GROUPS), len(GROUPS))]
    seen: set[str] = set()
    records = []
    for n, kind in enumerate(kinds):
        for _attempt in range(200):
            grps: list[str] = []
            if kind == "group":
                topic, mention, grps = pick_group_mention(rng, group_turns[0])
                title, topic, source = pick_title(rng, kind, topic)
            else:
                title, topic, source = pick_title(rng, kind)
            if kind == "none":
                comment, off, tgt = neutral_comment(rng, topic), [], []
            elif kind == "untargeted":
                comment, off, tgt = assemble(untargeted_pieces(rng, topic))
            elif kind == "group":
                comment, off, tgt = assemble(targeted_pieces(rng, mention, topic, allow_modifier=True))
            elif kind == "individual":
                people = INDIVIDUAL_TARGETS.get(topic, []) + INDIVIDUAL_TARGETS["any"]
                mention = deal(rng, f"individual:{topic}", people)
                comment, off, tgt = assemble(targeted_pieces(rng, mention, topic, allow_modifier=False))
            else:
                mention = deal(rng, "others", OTHERS_TARGETS)
                comment, off, tgt = assemble(targeted_pieces(rng, mention, topic, allow_modifier=True))
            if comment not in seen:
                break
        else:
            raise RuntimeError(f"could not make a new {kind} comment")
        seen.add(comment)
        if kind == "group":
            group_turns.pop(0)
        ids = rng.sample(ANNOTATOR_IDS, 3)
        if kind == "none":
            raw = simulate_benign(rng, ids, comment)
        else:
            raw = simulate_offensive(rng, ids, comment, off, tgt, kind, grps)
        record = make_record(f"kold-sample_{n:05d}", source, random_date(rng), title, comment, raw)
        # The rule must give back exactly what was generated.
        assert record["OFF"] == (kind != "none"), record
        assert record["OFF_span"] == span_text(comment, off), record
        assert record["TGT_span"] == span_text(comment, tgt), record
        if kind != "none":
            assert record["TGT"] == kind, record
            assert record["GRP"] == (", ".join(g for g in GROUPS if g in grps) or None), record
        records.append(record)
    return records


# --------------------------------------------------------------------------------------
# The demo comments.


def insult_lexicon() -> list[str]:
    """Every insult expression the generator uses (the offensive spans of the sample)."""
    return INSULT_PREDICATES + RACE_PREDICATES + INSULT_MODIFIERS + PROFANITY


def check_demo(sample: list[dict[str, Any]]) -> list[str]:
    """The demo lines: new, offensive ones with a lexicon insult, benign ones without any."""
    lexicon = insult_lexicon()
    demo = [c for c, _ in DEMO_COMMENTS]
    assert len(set(demo)) == len(demo) >= 30, "demo comments must be distinct"
    assert not set(demo) & {r["comment"] for r in sample}, "a demo comment copies a sample comment"
    for comment, insult in DEMO_COMMENTS:
        assert comment == comment.strip() and "\n" not in comment, comment
        if insult is None:
            assert not [w for w in lexicon if w in comment], f"benign demo comment with an insult: {comment!r}"
        else:
            assert insult in lexicon and insult in comment, f"{insult!r} is not a lexicon insult of {comment!r}"
    for r in sample:  # benign sample comments never contain an insult expression
        assert r["OFF"] or not [w for w in lexicon if w in r["comment"]], r["comment"]
    # Benign lines recombine the sample's words: at least two thirds of their words, or of the
    # words' first two characters (the stem, roughly), occur in the sample.
    text = "\n".join(r["comment"] for r in sample)
    for comment, insult in DEMO_COMMENTS:
        unseen = [w for w in comment.split() if w not in text and w[:2] not in text]
        assert insult is not None or 3 * len(unseen) <= len(comment.split()), f"{comment!r}: new words {unseen}"
    return demo


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Write the made-up KOLD-format sample and the demo comments.")
    parser.add_argument("out_dir", nargs="?", type=Path, default=HERE,
                        help="where to write kold_sample.json and comments.txt (default: %(default)s)")
    out_dir = parser.parse_args(argv).out_dir
    sample = generate_sample(random.Random(SEED))
    demo = check_demo(sample)
    write_json(out_dir / "kold_sample.json", sample)
    (out_dir / "comments.txt").write_text("\n".join(demo) + "\n", encoding="utf-8")
    n_off = sum(insult is not None for _, insult in DEMO_COMMENTS)
    print(f"{out_dir / 'kold_sample.json'}\n{summary(sample)}\n")
    print(f"{out_dir / 'comments.txt'}: {len(demo)} lines ({n_off} with an insult)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
