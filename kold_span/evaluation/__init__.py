"""Layer 6, evaluation: metrics as plain functions, task scores of model outputs, file scoring, baselines.

`metrics` (character F1, seqeval, label and distribution scores), `task_scores` (merged model
outputs against gold, per task), `prediction_files` (`kold-span evaluate`), `baselines` (majority,
TF-IDF n-grams, a span lexicon).
"""
