"""The functional test suite: templates of `functional.yaml` expanded into cases, and the `functional` reader.

The suite (written for this project, English and Korean) pairs what a moderation model must not flag
(neutral and positive statements about a group, counter-speech quoting or referring to abuse, negated
abuse, reclaimed terms, profanity that insults no one, abuse of objects) with hateful counterparts
(derogation, dehumanisation, threats, ...). `generate` expands every template deterministically: case i
of a template takes the i-th identity group, every other slot its fillers in turn; texts repeated within
a template are kept once. Each case is an `Example`:

- `labels`: `{"hateful": bool}`; `spans`: `{"OFF": [...]}`, the marked offensive span of a hateful case;
- `meta`: `lang`, `functionality`, `template` (its id), `group` (the family: the pair both templates belong
  to; `data.selection.carve` moves the cases of a group together, so a dev share carved from the train part
  holds whole pairs), `identity` (the group filler, or None), `part` (`train` or `held_out`).

The split is by family, seeded, within each language and benign functionality (`split.held_out` of the
families held out): a pair's two templates, and every case of them, are on the same side, so a model
trained on the train part has seen neither the wording nor the contrast of a held-out template.

>>> cases = read_functional(SUITE, lang="en", part="held_out")
>>> first = next(c for c in cases if c.meta["template"] == "en.negated_abuse.3.hateful")
>>> first.text, first.spans, first.meta["identity"], first.meta["functionality"]
('Women are not people, they are parasites.', {'OFF': [(31, 40)]}, 'women', 'dehumanisation')
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Optional

import yaml

from kold_span.config.limits import CONFIG_BYTES, read_bounded_text
from kold_span.config.yaml12 import YamlTooLargeError, yaml_load
from kold_span.corpora import register
from kold_span.corpora._common import reports_skipped
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Example, Span
from kold_span.errors import ArgumentError, DataError

SUITE = Path(__file__).with_name("functional.yaml")
PARTS = ("train", "held_out", "all")
SPAN_TYPE = "OFF"
IDENTITY_SLOT = "group"
# A Korean particle's two forms: after a syllable with a final consonant, after one without.
PARTICLES = (("은", "는"), ("이", "가"), ("을", "를"), ("과", "와"), ("으로", "로"), ("이다", "다"),
             ("이라고", "라고"), ("이라는", "라는"), ("이고", "고"), ("이야", "야"), ("이랑", "랑"))
_FORMS = {form: pair for pair in PARTICLES for form in pair}
_TOKEN = re.compile(r"\[\[|\]\]|\{([a-z_]*)(?:/([^{}]+))?\}")


def korean_particle(word: str, particle: str) -> str:
    """The form of `particle` that follows `word`: by whether its last syllable ends in a consonant (으로: ㄹ too).

    Example:
        >>> [korean_particle(w, "은") for w in ("여성", "노인", "무슬림", "난민", "이 프린터")]
        ['은', '은', '은', '은', '는']
        >>> korean_particle("쓰레기", "이다"), korean_particle("벌레", "이라는"), korean_particle("지하철", "으로")
        ('다', '라는', '로')
    """
    import hangul_jamo

    pair = _FORMS.get(particle)
    if pair is None:
        raise DataError(f"unknown Korean particle {particle!r}; known: {', '.join(f for p in PARTICLES for f in p)}")
    last = word[-1:] if word else ""
    if not hangul_jamo.is_syllable(last):
        raise DataError(f"a particle follows {word!r}, which does not end in a Hangul syllable")
    final = hangul_jamo.decompose_syllable(last)[2]
    if pair[0] == "으로" and final == "ㄹ":  # 으로 drops its vowel after ㄹ as after a vowel
        return pair[1]
    return pair[0] if final else pair[1]


def expand(template: str, fillers: dict[str, list[str]], index: int, offset: int = 0,
           capitalize: bool = False) -> tuple[str, list[Span], Optional[str]]:
    """One case of a template: its text, its marked spans (end-exclusive) and its identity group (or None).

    Case `index` takes the `index`-th identity group and, for every other slot, filler `index + offset`
    (both modulo the list's length).

    Example:
        >>> fillers = {"group": ["여성", "이민자"], "vermin": ["벌레", "기생충"]}
        >>> expand("{group/은} 사람이 아니라 [[{vermin}]]{/이다}.", fillers, 1)
        ('이민자는 사람이 아니라 기생충이다.', [(13, 16)], '이민자')
        >>> expand("\\"{group} are [[{vermin}]]\\" is a lie.", {"group": ["women"], "vermin": ["rats"]}, 0,
        ...        capitalize=True)
        ('"Women are rats" is a lie.', [(11, 15)], 'women')
    """
    out: list[str] = []
    spans: list[Span] = []
    opened: Optional[int] = None
    identity: Optional[str] = None
    last = ""
    position = 0
    for match in _TOKEN.finditer(template):
        out.append(template[position:match.start()])
        position = match.end()
        token = match.group(0)
        if token == "[[":
            if opened is not None:
                raise DataError(f"template {template!r}: a span opens inside another")
            opened = len("".join(out))
        elif token == "]]":
            if opened is None:
                raise DataError(f"template {template!r}: ']]' without '[['")
            spans.append((opened, len("".join(out))))
            opened = None
        else:
            slot, particle = match.group(1), match.group(2)
            if slot:
                if slot not in fillers or not fillers[slot]:
                    raise DataError(f"template {template!r}: no fillers for slot {{{slot}}}")
                choices = fillers[slot]
                last = choices[index % len(choices)] if slot == IDENTITY_SLOT else \
                    choices[(index + offset) % len(choices)]
                if slot == IDENTITY_SLOT:
                    identity = last
                out.append(last)
            elif not last:
                raise DataError(f"template {template!r}: {{/{particle}}} follows no slot")
            if particle:
                out.append(korean_particle(last, particle))
    out.append(template[position:])
    if opened is not None:
        raise DataError(f"template {template!r}: '[[' without ']]'")
    text = "".join(out)
    if capitalize:
        text = _capitalized(text)
    if any(start == end for start, end in spans):
        raise DataError(f"template {template!r}: an empty span")
    return text, spans, identity


def _capitalized(text: str) -> str:
    """The text with its first letter upper-cased when only punctuation comes before it."""
    for i, ch in enumerate(text):
        if ch.isalnum():
            return text[:i] + ch.upper() + text[i + 1:] if ch.islower() else text
    return text


def held_out_families(families: list[str], seed: int, share: float) -> set[str]:
    """The families held out: the `share` of them (at least one, never all of two or more) ranked first by a hash.

    The rank is SHA-256 of "<seed>:<family>", so the split depends on the seed and the names only
    (not on Python's random module, nor on the order families are listed in).

    Example:
        >>> sorted(held_out_families(["en.x.1", "en.x.2", "en.x.3", "en.x.4"], 58, 0.5))
        ['en.x.1', 'en.x.3']
        >>> len(held_out_families(["a"], 58, 0.5)), len(held_out_families(["a", "b"], 58, 0.99))
        (1, 1)
    """
    ranked = sorted(families, key=lambda f: hashlib.sha256(f"{seed}:{f}".encode()).hexdigest())
    count = int(share * len(ranked) + 0.5)
    count = min(max(count, 1), max(len(ranked) - 1, 1))
    return set(ranked[:count])


def load_suite(path: Path = SUITE) -> dict[str, Any]:
    """The suite file, its shape checked (else a `DataError` naming the file and the record) and its values as
    strings: `{"seed": int, "held_out": float, "languages": {lang: {"fillers": {slot: [str]}, "families":
    {functionality: [{"benign", "hateful", "hateful_as"}]}}}}`."""
    document = _read_document(Path(path))
    if document is None:
        raise DataError(f"{path}: empty file")
    if not isinstance(document, dict):
        raise _bad(path, "(the document)", "expected a mapping of `split` and `languages`")
    split = document.get("split")
    if not isinstance(split, dict) or not _is_number(split.get("seed"), whole=True) \
            or not _is_number(split.get("held_out")) or not 0 < split["held_out"] < 1:
        raise _bad(path, "split", "needs a whole-number `seed` and a share `held_out` in (0, 1)")
    languages = document.get("languages")
    if not isinstance(languages, dict) or not languages:
        raise _bad(path, "languages", "must map a language code to its fillers and families")
    out: dict[str, Any] = {"seed": split["seed"], "held_out": float(split["held_out"]), "languages": {}}
    for lang, spec in languages.items():
        where = f"languages.{lang}"
        if not isinstance(lang, str) or not isinstance(spec, dict) or not isinstance(spec.get("fillers"), dict) \
                or not isinstance(spec.get("families"), dict):
            raise _bad(path, where, "a language code with `fillers` and `families` mappings")
        fillers: dict[str, list[str]] = {}
        for slot, values in spec["fillers"].items():
            if not isinstance(slot, str) or not isinstance(values, list) or not values \
                    or not all(isinstance(v, str) and v for v in values):
                raise _bad(path, f"{where}.fillers.{slot}", "a slot name and a list of non-empty strings")
            fillers[slot] = values
        if IDENTITY_SLOT not in fillers:
            raise _bad(path, f"{where}.fillers", f"no `{IDENTITY_SLOT}` fillers (the identity groups)")
        families: dict[str, list[dict[str, str]]] = {}
        for functionality, pairs in spec["families"].items():
            if not isinstance(functionality, str) or not isinstance(pairs, list) or not pairs:
                raise _bad(path, f"{where}.families.{functionality}", "a functionality and a list of template pairs")
            for k, pair in enumerate(pairs, 1):
                if not isinstance(pair, dict) or not all(isinstance(pair.get(key), str)
                                                         for key in ("benign", "hateful", "hateful_as")):
                    raise _bad(path, f"{lang}.{functionality}.{k}", "needs `benign`, `hateful` and `hateful_as`")
            families[functionality] = pairs
        out["languages"][lang] = {"fillers": fillers, "families": families}
    return out


def _read_document(path: Path) -> Any:
    """The YAML document of the suite file (bounded as config files are); its faults as `DataError`s with a line."""
    text = read_bounded_text(path, CONFIG_BYTES, DataError)
    try:
        return yaml_load(text)
    except YamlTooLargeError as err:
        raise DataError(f"{path}: a YAML document too large: {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        lines = re.findall(r"line (\d+)", str(err))  # a key written twice names its lines
        line = mark.line + 1 if mark is not None else int(lines[-1]) if lines else 1
        problem = str(getattr(err, "problem", None) or err).splitlines()[0]
        raise DataError(f"{path}:{line}: invalid YAML: {problem}") from None


def _is_number(value: Any, whole: bool = False) -> bool:
    return isinstance(value, int if whole else (int, float)) and not isinstance(value, bool)


def _bad(path: Path, where: str, problem: str) -> DataError:
    """A fault of one record of the suite file (a key path or a template id)."""
    return DataError(f"{path}: record {where}: {problem}")


def generate(path: Path = SUITE) -> list[Example]:
    """Every case of the suite, in file order (language, functionality, family, benign then hateful, case)."""
    suite = load_suite(path)
    cases: list[Example] = []
    for lang, spec in suite["languages"].items():
        for functionality, pairs in spec["families"].items():
            families = [f"{lang}.{functionality}.{k}" for k in range(1, len(pairs) + 1)]
            held_out = held_out_families(families, suite["seed"], suite["held_out"])
            for k, (family, pair) in enumerate(zip(families, pairs)):
                part = "held_out" if family in held_out else "train"
                for side, hateful, kind in (("benign", False, functionality), ("hateful", True, pair["hateful_as"])):
                    meta = {"lang": lang, "functionality": kind, "template": f"{family}.{side}", "group": family,
                            "part": part}
                    try:
                        cases += _template_cases(pair[side], spec["fillers"], k, hateful, lang, meta)
                    except DataError as err:
                        raise _bad(path, meta["template"], str(err)) from None
    return cases


def _template_cases(template: str, fillers: dict[str, list[str]], offset: int, hateful: bool, lang: str,
                    meta: dict[str, Any]) -> list[Example]:
    """The cases of one template, each text once; a `DataError` says which rule it breaks."""
    cases, seen = [], set()
    for i in range(len(fillers[IDENTITY_SLOT])):
        text, spans, identity = expand(template, fillers, i, offset, capitalize=lang == "en")
        if hateful and not spans:
            raise DataError("a hateful template marks its offensive span with [[ ]]")
        if not hateful and spans:
            raise DataError("a benign template has no offensive span")
        if identity is not None:
            start = text.lower().find(identity.lower())
            if any(s < start + len(identity) and start < e for s, e in spans):
                raise DataError(f"the span covers the identity group {identity!r}")
        if text in seen:
            continue
        seen.add(text)
        cases.append(Example(id=f"functional:{meta['template']}:{i}", text=text, labels={"hateful": hateful},
                             spans={SPAN_TYPE: spans} if hateful else {},
                             meta={**meta, "identity": identity}))
    return cases


@register("functional")
@reports_skipped("functional")
def read_functional(path: Path, *, bad: BadRecords, lang: str = "all", part: str = "train") -> list[Example]:
    """The functional suite's cases (the packaged file is `SUITE`) of one language (en, ko or "all") and part:
    "train" (the templates to train on: negatives and contrastive pairs), "held_out" (the templates to measure on)
    or "all"; as `Example`s (see the module docstring); as negatives, `filter: {hateful: false}` keeps the benign.
    """
    if part not in PARTS:
        raise ArgumentError(f"functional: part must be one of {list(PARTS)}, got {part!r}")
    cases = generate(path)
    languages = sorted({c.meta["lang"] for c in cases})
    if lang != "all" and lang not in languages:
        raise ArgumentError(f"functional: lang must be one of {languages} or 'all', got {lang!r}")
    return [c for c in cases if (lang == "all" or c.meta["lang"] == lang) and (part == "all" or c.meta["part"] == part)]
