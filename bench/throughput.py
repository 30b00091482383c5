"""Throughput: one multi-task model vs the single-task pair a user would otherwise run.

The same 2,000 comments (BEEP! with their titles when ../shared/data is there, else the
made-up KOLD sample cycled) go through
  (a) one joint model (OFF head + OFF span head, one forward pass per window), and
  (b) a sequence classifier plus a separate token tagger of the same encoder size.
Weights are randomly initialised: speed does not depend on them. Also reported: the share of
the joint model's predict time spent outside the network (tokenization, window merging,
alignment, morpheme snapping, JSON writing).

    python bench/throughput.py [--data DIR] [--n 2000] [--repeats 3] [--hidden 256 --layers 4]
                               [--device cuda] [--no-kiwi]

`--no-kiwi` splits words without Kiwi and does not snap spans to morphemes (for a machine
without Kiwi's model); `--device cuda` runs the network on the GPU, waiting for it before each
forward pass is timed.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kold_span import corpora  # noqa: E402
from kold_span.config.schema import ScratchEncoderConfig  # noqa: E402
from kold_span.data.example import Example  # noqa: E402
from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.models.backbones import scratch_encoder, train_tokenizer  # noqa: E402
from kold_span.models.network import MultiTaskModel  # noqa: E402
from kold_span.models.tasks import Task  # noqa: E402
from kold_span.text.morphemes import clear_cache  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from report import machine_line, write_section  # noqa: E402

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
OFF_SPAN = Task("OFF_span", "span", "OFF")


def load_comments(data_dir: Path, n: int) -> tuple[list[Example], str]:
    """n comments with titles: BEEP! if available, else the sample cycled."""
    beep = data_dir / "beep"
    if (beep / "train.tsv").exists():
        examples, source = corpora.read("beep", beep), "BEEP! train.tsv (comments + news titles)"
    else:
        examples, source = corpora.read("kold", ROOT / "data/sample/kold_sample.json"), "data/sample (cycled)"
    return [examples[i % len(examples)] for i in range(n)], source


def predictor_for(tasks: list[Task], tokenizer, scratch: ScratchEncoderConfig, max_length: int,
                  snap: str = "morpheme", device: str = "cpu") -> Predictor:
    torch.manual_seed(0)
    model = MultiTaskModel(scratch_encoder(scratch, len(tokenizer), tokenizer.pad_token_id), tasks)
    return Predictor(model, tokenizer, tasks, max_length=max_length, stride=32, snap=snap, device=device)


def timed_predict(predictor: Predictor, examples: list[Example], batch_size: int) -> tuple[float, float]:
    """(total seconds, seconds inside the network) of predicting and writing JSONL."""
    inside = 0.0
    forward = predictor.model.forward

    cuda = predictor.device.type == "cuda"

    def timed_forward(*args, **kwargs):
        nonlocal inside
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = forward(*args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
        inside += time.perf_counter() - start
        return out

    predictor.model.forward = timed_forward
    clear_cache()  # every pass pays for its own Kiwi analyses
    sink = io.StringIO()
    start = time.perf_counter()
    for row in predictor.predict_examples(examples, batch_size=batch_size):
        sink.write(json.dumps(row, ensure_ascii=False) + "\n")
    total = time.perf_counter() - start
    predictor.model.forward = forward
    return total, inside


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("KOLD_SPAN_DATA", ROOT.parent / "shared/data")))
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--device", default="cpu", help="where the network runs: cpu, cuda, cuda:1, …")
    parser.add_argument("--no-kiwi", action="store_true",
                        help="split words without Kiwi and do not snap spans to morphemes")
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/benchmarks/throughput.md")
    parser.add_argument("--section", default="throughput", help="section of docs/benchmarks/throughput.md to (re)write")
    args = parser.parse_args()

    examples, source = load_comments(args.data, args.n)
    scratch = ScratchEncoderConfig(vocab_size=16000, hidden_size=args.hidden, layers=args.layers,
                                   heads=max(1, args.hidden // 64), intermediate_size=4 * args.hidden,
                                   max_position=512, morpheme_pretokenize=not args.no_kiwi)
    texts = [e.text for e in examples] + sorted({e.context for e in examples if isinstance(e.context, str)})
    tokenizer = train_tokenizer(texts, scratch)
    setups = {"joint": [OFF, OFF_SPAN], "classifier": [OFF], "tagger": [OFF_SPAN]}
    snap = "none" if args.no_kiwi else "morpheme"
    predictors = {name: predictor_for(tasks, tokenizer, scratch, args.max_length, snap, args.device)
                  for name, tasks in setups.items()}
    for predictor in predictors.values():  # warm-up
        timed_predict(predictor, examples[:64], args.batch_size)

    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
    for _ in range(args.repeats):
        for name, predictor in predictors.items():
            runs[name].append(timed_predict(predictor, examples, args.batch_size))
    median = {name: statistics.median(t for t, _ in r) for name, r in runs.items()}
    joint_outside = statistics.median(1 - inside / total for total, inside in runs["joint"])
    joint_rate = args.n / median["joint"]
    pair_rate = args.n / (median["classifier"] + median["tagger"])
    result = {
        "comments": args.n, "source": source, "repeats": args.repeats, "batch_size": args.batch_size,
        "encoder": {"hidden": args.hidden, "layers": args.layers, "max_length": args.max_length},
        "torch_threads": torch.get_num_threads(), "device": device_name(args.device), "kiwi": not args.no_kiwi,
        "joint_comments_per_s": round(joint_rate, 1), "pair_comments_per_s": round(pair_rate, 1),
        "speedup": round(joint_rate / pair_rate, 3),
        "classifier_s": round(median["classifier"], 2), "tagger_s": round(median["tagger"], 2),
        "joint_s": round(median["joint"], 2), "joint_outside_model_share": round(joint_outside, 3),
        "machine": machine_line(),
    }
    out = ROOT / "bench/results" / f"{args.section}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if not args.no_docs:
        command = "python bench/throughput.py " + " ".join(sys.argv[1:])
        write_section(args.section, render(result, command.strip()))
    return 0


def device_name(device: str) -> str:
    """'cpu', or the GPU's name with the torch and CUDA versions."""
    if not device.startswith("cuda"):
        return "cpu"
    return f"{torch.cuda.get_device_name(torch.device(device))} (torch {torch.__version__}, CUDA {torch.version.cuda})"


def render(r: dict, command: str) -> str:
    device = r.get("device", "cpu")
    on_device = "" if device == "cpu" else f"; the network on {device}"
    words = ("Kiwi morphemes as pre-tokens, spans snapped to morphemes" if r.get("kiwi", True)
             else "no Kiwi (BERT word splitting, spans not snapped)")
    return f"""## Throughput: one joint model vs a classifier + a tagger (hidden {r['encoder']['hidden']}, {r['encoder']['layers']} layers)

Command: `{command}` — {r['machine']}, {r['torch_threads']} torch threads{on_device}.
Data: {r['comments']} comments from {r['source']}; batch {r['batch_size']}; encoder: BERT,
{r['encoder']['layers']} layers, hidden {r['encoder']['hidden']}, windows of {r['encoder']['max_length']} tokens,
randomly initialised (speed does not depend on the weights); median of {r['repeats']} passes,
each predicting and writing JSONL, {words}.

| setup | seconds | comments / s |
|---|---|---|
| joint model (category + spans, one pass) | {r['joint_s']} | {r['joint_comments_per_s']} |
| sequence classifier | {r['classifier_s']} | |
| token tagger | {r['tagger_s']} | |
| classifier + tagger (what a user would otherwise run) | {round(r['classifier_s'] + r['tagger_s'], 2)} | {r['pair_comments_per_s']} |

- Speed-up of the joint model: **{r['speedup']}×** (target ≥ 1.8×; the limit is 2×).
- Share of the joint model's predict time spent outside the network (tokenization, window
  merging, decoding, {'morpheme snapping, ' if r.get('kiwi', True) else ''}JSON writing): **{r['joint_outside_model_share'] * 100:.1f}%** (target ≤ 15%).
"""


if __name__ == "__main__":
    sys.exit(main())
