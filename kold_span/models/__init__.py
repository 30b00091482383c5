"""Layer 5, models: task kinds, encoder backbones, input windows, the multi-task network, decoding, the n-gram.

`tasks` (what each head predicts), `backbones` (hub id, local directory or scratch encoder),
`packed` (a 4-bit packed encoder imported as a directory), `windows` (examples → token windows
with targets), `network` (the shared encoder and its heads), `decoding` (window outputs →
labels and character spans), `ngram` (the TF-IDF n-gram fused into a sequence task).
"""
