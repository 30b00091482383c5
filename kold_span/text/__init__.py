"""Layer 4, text: Korean morphemes (Kiwi), Unicode words, and the alignment of character spans with tokens (BIO tags, snapping)."""
