"""Layer 7, inference: a trained model directory predicting labels and spans, alone or as an ensemble.

`predictor` (`Predicts`, what predicts; `Predictor`: load, predict, save), `pipeline` (the stages
encode → prepare → run_network → merge, typed, and their overlap; `RunOptions`), `runtimes` (torch or
ONNX Runtime, precision), `ensemble` (several models' mean probabilities; `load_predictor`), `inputs`
(the files `kold-span predict` reads), `outputs` (JSONL or Parquet), `ray_engine` (shards over a Ray
cluster), `html` (highlighted predictions).
"""
