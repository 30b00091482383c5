"""Layer 5, models: task kinds, encoder backbones, input windows, the multi-task network, decoding, the n-gram.

`tasks` (each task's labels, weights and thresholds), `kinds` (what each task kind does: targets,
loss, probabilities, merging and decoding; one module per kind, and `kinds.problems` for a
sequence task's single-, multi- or soft-label problem), `backbones` (hub id, local directory or
scratch encoder), `packed` (a 4-bit packed encoder imported as a directory), `windows` (examples →
token windows with targets), `network` (the shared encoder and its heads), `decoding` (window
outputs → labels and character spans), `ngram` (the TF-IDF n-gram fused into a sequence task),
`model_dir` (a trained model's directory: config.json checked, files read and written), `manifest`.
"""
