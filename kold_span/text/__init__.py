"""Layer 4, text: Korean morphemes (Kiwi), Unicode words, and the alignment of character spans with tokens.

`morphemes` (Kiwi), `words` (Unicode word boundaries), `align` (BIO tags, snapping), `aligned`
(edited text that maps its spans back to the original).
"""
