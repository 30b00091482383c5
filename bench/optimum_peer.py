"""The Optimum peer rows of `bench/throughput.py --runtimes`, run inside the peer's own virtualenv.

optimum-onnx pins transformers < 4.58, which this project's environment does not have, so
`bench/throughput.py` makes a separate virtualenv (`peer_venv`) and runs this file there as a
subprocess. Input: a folder with a Hugging Face sequence classifier (`classifier/`) and token
classifier (`tagger/`) saved from the same weights as the joint model, and `texts.jsonl`. Each is
exported by Optimum (`ORTModelFor…Classification.from_pretrained(export=True)`), then quantized by
Optimum's `ORTQuantizer` with its AVX-512 VNNI dynamic int8 configuration; the two pipelines
(text- and token-classification) run over the texts per format, median of `repeats` passes.
Output: one JSON object on the last line of stdout.

This file imports nothing from kold_span: it runs under another transformers.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path


def main(folder: str, threads: int, repeats: int, batch_size: int, stride: int) -> int:
    import onnxruntime as ort
    import transformers
    from optimum.onnxruntime import (ORTModelForSequenceClassification, ORTModelForTokenClassification,
                                     ORTQuantizer)
    from optimum.onnxruntime.configuration import AutoQuantizationConfig
    from transformers import AutoTokenizer, pipeline

    root = Path(folder)
    texts = [json.loads(line)["text"] for line in (root / "texts.jsonl").read_text(encoding="utf-8").splitlines()]
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    tokenizer = AutoTokenizer.from_pretrained(root / "classifier")
    pipes = {}
    for kind, cls, task in (("classifier", ORTModelForSequenceClassification, "text-classification"),
                            ("tagger", ORTModelForTokenClassification, "token-classification")):
        exported = root / f"optimum-{kind}"
        cls.from_pretrained(root / kind, export=True).save_pretrained(exported)
        quantized = root / f"optimum-{kind}-int8"
        quantizer = ORTQuantizer.from_pretrained(exported)
        quantizer.quantize(save_dir=quantized,
                           quantization_config=AutoQuantizationConfig.avx512_vnni(is_static=False, per_channel=True))
        for fmt, path, file in (("fp32", exported, None), ("int8", quantized, "model_quantized.onnx")):
            model = cls.from_pretrained(path, file_name=file, session_options=options)
            extra = {"aggregation_strategy": "simple"} if kind == "tagger" else {}
            pipes[(fmt, kind)] = pipeline(task, model=model, tokenizer=tokenizer, **extra)

    def run(fmt: str, texts: list[str]) -> float:
        start = time.perf_counter()
        for out in pipes[(fmt, "classifier")](texts, batch_size=batch_size, truncation=True):
            json.dumps(out)
        for out in pipes[(fmt, "tagger")](texts, batch_size=batch_size, stride=stride):
            json.dumps([{**o, "score": float(o["score"])} for o in out])
        return time.perf_counter() - start

    for fmt in ("fp32", "int8"):  # warm-up
        run(fmt, texts[:32])
    passes: dict[str, list[float]] = {"fp32": [], "int8": []}
    for _ in range(repeats):
        for fmt in passes:
            passes[fmt].append(run(fmt, texts))
    import optimum.version

    result = {fmt: {"s": round(statistics.median(p), 2), "passes_s": [round(x, 2) for x in p]}
              for fmt, p in passes.items()}
    result["versions"] = (f"optimum {optimum.version.__version__}, transformers {transformers.__version__}, "
                          f"onnxruntime {ort.__version__}")
    result["threads"] = threads
    result["omp_num_threads"] = os.environ.get("OMP_NUM_THREADS")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
