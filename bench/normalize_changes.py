"""How many ordinary texts evasion-robust normalization changes: its false positives.

The dev split of each corpus (as its shipped config carves it) is clean, ordinary text. Every
change normalization makes there beyond NFC is a false positive of some step (or an evasion the
corpus really holds: counted alike). Writes the section `normalize-changes` of docs/ROBUSTNESS.md.

    python bench/normalize_changes.py [--data ../shared/data] [--write]

No excerpt of a corpus is printed or written: only counts.
"""
from __future__ import annotations

import argparse
import sys
import time
import unicodedata
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from quality_corpora import EXPERIMENTS  # noqa: E402
from report import machine_line, write_section  # noqa: E402

from kold_span import corpora  # noqa: E402
from kold_span.config.loading import load_config  # noqa: E402
from kold_span.corpora.experiment import load_splits  # noqa: E402
from kold_span.text.normalize import STEPS, words_of_length, normalize  # noqa: E402

CONFIGS = {"Toxic Spans (en)": "toxic_spans_minilm", "BEEP! (ko)": "beep_e5", "KoCoSa (ko)": "kocosa_e5",
           "UnSmile (ko)": "unsmile_e5", "IroSvA es (es)": "irosva_e5"}
KINDS = ("width", "spaces", "invisible", "bidi", "confusables", "letters", "elongation", "leet", "keyboard", "jamo",
         "separators", "masks", "spaced")


def dev_texts(config_name: str, data: Path) -> list[str]:
    """The dev split's texts of a shipped config, its data under `data`."""
    config = load_config(EXPERIMENTS / f"{config_name}.yaml")
    config.data.train = str(data / Path(config.data.train).relative_to("../shared/data"))
    return [example.text for example in load_splits(config)["dev"]]


def multipico_english(data: Path) -> list[str]:
    """MultiPICo's English replies and posts (ordinary social-media text, irony or not), each once."""
    texts: list[str] = []
    for example in corpora.read("multipico", data / "multipico"):
        if example.meta.get("lang") == "en":
            texts += [example.text] + ([example.context] if isinstance(example.context, str) else [])
    return list(dict.fromkeys(texts))


def toxic_spans_train(data: Path) -> list[str]:
    """Every Toxic Spans training post (tsd_train.csv, dev included): more English than a dev side."""
    return [example.text for example in corpora.read("toxic_spans", data / "toxic_spans" / "tsd_train.csv")]


def measure(texts: list[str]) -> tuple[int, int, Counter, float, int]:
    """Texts NFC changes, texts changed beyond NFC, per kind the texts it edited, seconds spent normalizing, and
    texts with a chosung abbreviation (a signal that changes nothing)."""
    nfc_changed, beyond, kinds, seconds, chosung = 0, 0, Counter(), 0.0, 0
    for text in texts:
        started = time.perf_counter()
        result = normalize(text, STEPS)
        seconds += time.perf_counter() - started
        nfc = unicodedata.normalize("NFC", text)
        nfc_changed += nfc != text
        chosung += "chosung" in result.signals
        if result.aligned.text != nfc:
            beyond += 1
            kinds.update(k for k in result.signals if k not in ("nfc", "chosung"))
    return nfc_changed, beyond, kinds, seconds, chosung


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--write", action="store_true", help="write the section into docs/ROBUSTNESS.md")
    args = parser.parse_args()
    rows = []
    for length in range(3, 16):  # the word lists and leet's per-length index, built once per process
        words_of_length(length)
    normalize("tlqkf 씨.발 stuuupid ⓘⓓⓘⓞⓣ ѕсаm ㅅㅂ f#ck 개x끼")  # every lazy table loaded before the clock runs
    sources = [(name, lambda c=config_name: dev_texts(c, args.data)) for name, config_name in CONFIGS.items()]
    sources.append(("MultiPICo en, every text (en)", lambda: multipico_english(args.data)))
    sources.append(("Toxic Spans, every training post (en)", lambda: toxic_spans_train(args.data)))
    for name, texts_of in sources:
        texts = texts_of()
        nfc_changed, beyond, kinds, seconds, chosung = measure(texts)
        per_kind = ", ".join(f"{k} {kinds[k]}" for k in KINDS if kinds[k]) or "none"
        chars = sum(map(len, texts))
        rows.append(f"| {name} | {len(texts)} | {nfc_changed} | {beyond} ({100 * beyond / max(len(texts), 1):.1f}%) "
                    f"| {per_kind} | {chosung} | {1e3 * seconds / max(len(texts), 1):.2f} ms "
                    f"({chars / max(seconds, 1e-9) / 1e3:.0f}k chars/s) |")
        print(rows[-1], flush=True)
    body = "\n".join([
        "Command: `python bench/normalize_changes.py --write` (all steps on: " + ", ".join(STEPS) + "; dev splits "
        f"carved by the shipped configs; one process on {machine_line()}; the time is normalization's alone, word "
        "lists loaded).", "",
        "| corpus (dev) | texts | changed by NFC | changed beyond NFC | texts edited, by kind | chosung signalled "
        "| time per text |",
        "|---|---|---|---|---|---|---|", *rows])
    if args.write:
        write_section("normalize-changes", body, ROOT / "docs" / "ROBUSTNESS.md")
    print(body)


if __name__ == "__main__":
    main()
