"""Training speed with random vs length-grouped batches (`trainer.group_by_length`), and in bf16.

Batches are padded to their longest window. On corpora whose texts range from a few words to
several hundred, a random batch of 16 almost always holds one long window, so most of its
compute goes to padding. This trains one epoch over the same windows twice, from the same
initial weights, once with random batches and once with length-grouped ones, and reports
seconds per epoch and the padded tokens per real token. `--bf16` adds a third epoch, grouped,
with forward and loss under bf16 autocast (what `trainer.precision: bf16-mixed` does on a CPU;
the weights and the optimizer stay float32). The config is a quality-benchmark experiment
(default: Toxic Spans with the packaged MiniLM), run on its first `--n` examples.

    python bench/batching.py [--experiment toxic_spans_minilm.yaml] [--n 2000] [--threads 1]
    python bench/batching.py --experiment unsmile_e5.yaml --threads 2 --bf16 --section precision

Results: bench/results/SECTION.json (default `batching`) and that section of docs/benchmarks/training-speed.md.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from quality_corpora import EXPERIMENTS, load_corpora  # noqa: E402
from report import DATA, machine_line, save_results, write_section  # noqa: E402

from kold_span.config import load_config  # noqa: E402
from kold_span.corpora.experiment import load_splits  # noqa: E402
from kold_span.models.backbones import build_encoder  # noqa: E402
from kold_span.models.kinds import build_tasks  # noqa: E402
from kold_span.models.network import MultiTaskModel  # noqa: E402
from kold_span.models.windows import InputEncoder  # noqa: E402
from kold_span.training import WindowsDataModule, tokenizer_texts  # noqa: E402

# The shared file of each reader, as the quality benchmark's corpus table names it.
DATA_FILES = {spec.reader: spec.path for spec in load_corpora().corpora.values()}


def experiment_model(experiment: str, data: Path, overrides: list[str], tokenizer_examples=lambda train: train):
    """An experiment's config (its train file under `data`), splits, tasks, tokenizer and encoder, as training builds
    them; the tokenizer learns from `tokenizer_examples(train)` where the encoder is trained from scratch."""
    config = load_config(EXPERIMENTS / experiment, overrides)
    config.data.train = str(data / DATA_FILES[config.data.reader])
    splits = load_splits(config)
    tasks = build_tasks(config.tasks, splits["train"])
    tokenizer, encoder = build_encoder(config.model.encoder, tokenizer_texts(tokenizer_examples(splits["train"])))
    if config.model.encoder.freeze_word_embeddings:  # as training does (kold_span.training.run)
        encoder.get_input_embeddings().weight.requires_grad_(False)
    return config, splits, tasks, tokenizer, encoder


def train_step(model: MultiTaskModel, batch: dict, optimizer: torch.optim.Optimizer, bf16: bool = False) -> None:
    """One training step: forward, weighted task losses, backward, optimizer step; with `bf16`,
    forward and loss under CPU bf16 autocast."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        losses = model.losses(logits, batch)
    sum(task.weight * losses[task.name] for task in model.tasks).backward()
    optimizer.step()
    optimizer.zero_grad()


def epoch_seconds(model: MultiTaskModel, datamodule: WindowsDataModule, lr: float,
                  bf16: bool = False) -> tuple[float, int, int]:
    """(seconds, batches, padded tokens) of one training epoch: forward, backward, AdamW step;
    with `bf16`, forward and loss under CPU bf16 autocast."""
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    steps = padded = 0
    start = time.perf_counter()
    for batch in datamodule.train_dataloader():
        train_step(model, batch, optimizer, bf16)
        steps += 1
        padded += batch["input_ids"].numel()
    return time.perf_counter() - start, steps, padded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--experiment", default="toxic_spans_minilm.yaml")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--bf16", action="store_true", help="also time a grouped epoch under bf16 autocast")
    parser.add_argument("--section", default="batching", help="section of docs/benchmarks/training-speed.md to (re)write")
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/benchmarks/training-speed.md")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    config, splits, tasks, tokenizer, encoder = experiment_model(args.experiment, args.data,
                                                                 ["data.test_fraction=0", f"data.limit={args.n}"])
    inputs = InputEncoder(tokenizer, config.model.max_length, config.model.stride, config.context.mode,
                          config.context.max_turns)
    torch.manual_seed(0)
    initial = MultiTaskModel(encoder, tasks, config.model.dropout, config.model.pooling)
    result = {"experiment": args.experiment, "n": args.n, "examples": len(splits["train"]),
              "batch_size": config.trainer.batch_size, "max_length": config.model.max_length, "encoder": config.model.encoder.name_or_path or "scratch",
              "torch_threads": torch.get_num_threads(), "machine": machine_line()}
    for mode in ("random", "grouped") + (("grouped-bf16",) if args.bf16 else ()):
        datamodule = WindowsDataModule(splits, tasks, inputs, config.trainer.batch_size,
                                       group_by_length=mode != "random", seed=config.seed)
        datamodule.setup()
        real = sum(datamodule.window_lengths("train"))
        seconds, steps, padded = epoch_seconds(copy.deepcopy(initial), datamodule, config.trainer.lr,
                                               bf16=mode == "grouped-bf16")
        result[mode] = {"seconds": round(seconds, 1), "batches": steps,
                        "padded_per_real_token": round(padded / real, 3)}
        result["windows"], result["real_tokens"] = len(datamodule.datasets["train"]), real
        print(mode, result[mode], flush=True)
    result["speedup"] = round(result["random"]["seconds"] / result["grouped"]["seconds"], 2)
    if args.bf16:
        result["bf16_speedup"] = round(result["grouped"]["seconds"] / result["grouped-bf16"]["seconds"], 2)
    save_results(args.section, result, printed=True)
    if not args.no_docs:
        write_section(args.section, render(result, ("python bench/batching.py " + " ".join(sys.argv[1:])).strip()))
    return 0


def render(r: dict, command: str) -> str:
    """The docs section of one result; a `--bf16` result gets its third row, title and speed-up line.

        >>> r = {"machine": "CPU", "torch_threads": 2, "examples": 9, "n": 10, "experiment": "x.yaml", "windows": 9,
        ...      "real_tokens": 90, "max_length": 16, "batch_size": 4, "encoder": "scratch", "speedup": 2.0,
        ...      "random": {"batches": 3, "padded_per_real_token": 2.0, "seconds": 4.0},
        ...      "grouped": {"batches": 3, "padded_per_real_token": 1.0, "seconds": 2.0}}
        >>> "bf16" in render(r, "cmd")
        False
        >>> r["grouped-bf16"] = {"batches": 3, "padded_per_real_token": 1.0, "seconds": 1.25}
        >>> r["bf16_speedup"] = 1.6
        >>> text = render(r, "cmd")
        >>> "| grouped-bf16 | 3 | 1.00 | 1.2 |" in text
        True
        >>> "bf16 autocast over float32 (grouped batches): **1.6×**" in text
        True
        >>> r["grouped-bf16"]["seconds"], r["bf16_speedup"] = 45.0, 0.04
        >>> "bf16 autocast against float32 (grouped batches): **22.5× slower**" in render(r, "cmd")
        True
    """
    modes = ("random", "grouped") + (("grouped-bf16",) if "grouped-bf16" in r else ())
    rows = "\n".join(f"| {m} | {r[m]['batches']} | {r[m]['padded_per_real_token']:.2f} | {r[m]['seconds']:.1f} |"
                     for m in modes)
    title = "random vs length-grouped batches" + (", float32 vs bf16" if "grouped-bf16" in r else "")
    bf16 = ""
    if "grouped-bf16" in r and r["grouped-bf16"]["seconds"] <= r["grouped"]["seconds"]:
        bf16 = f"\nSpeed-up of bf16 autocast over float32 (grouped batches): **{r['bf16_speedup']}×**."
    elif "grouped-bf16" in r:  # a CPU that emulates bf16
        slower = r["grouped-bf16"]["seconds"] / r["grouped"]["seconds"]
        bf16 = f"\nbf16 autocast against float32 (grouped batches): **{slower:.1f}× slower**."
    return f"""## Training speed: {title}

Command: `{command}` — {r['machine']}, {r['torch_threads']} torch thread(s).
One training epoch (forward, backward, AdamW step; no evaluation) over the {r['examples']} training examples
(the dev share carved off) of the first {r['n']} of `configs/experiment/quality/{r['experiment']}`'s corpus ({r['windows']} windows, {r['real_tokens']} real tokens, windows of
at most {r['max_length']} tokens, batch {r['batch_size']}, encoder `{r['encoder']}`), from the same initial weights.

| batches | steps | padded tokens per real token | seconds per epoch |
|---|---|---|---|
{rows}

Speed-up with `trainer.group_by_length: true`: **{r['speedup']}×**.{bf16}"""


if __name__ == "__main__":
    sys.exit(main())
