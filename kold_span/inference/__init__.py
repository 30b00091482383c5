"""Layer 7, inference: a trained model directory predicting labels and spans, alone or as an ensemble.

`predictor` (load, predict, save), `ensemble` (several models' mean probabilities),
`inputs` (the files `kold-span predict` reads), `html` (highlighted predictions).
"""
