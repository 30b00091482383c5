"""Layer 6, evaluation: task scores of model outputs, file scoring, baselines (the metrics are `kold_span.metrics`).

`task_scores` (merged model outputs against gold, each task's kind scoring it), `prediction_files`
(`kold-span evaluate`), `baselines` (majority, TF-IDF n-grams, a span lexicon).
"""
