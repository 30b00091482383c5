"""Layer 7, inference: a trained model directory predicting labels and spans, alone or as an ensemble.

`predictor` (load, predict, save; its three stages prepare → run_network → merge), `pipeline`
(those stages overlapped in threads, autocast, one host copy per batch), `ensemble` (several
models' mean probabilities; `load_predictor`), `inputs` (the files `kold-span predict` reads),
`outputs` (JSONL or Parquet), `ray_engine` (shards over a Ray cluster), `html` (highlighted
predictions).
"""
