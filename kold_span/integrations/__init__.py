"""Layer 8, integrations: the toolkit inside other libraries' pipelines.

`spacy_component` (the `kold_span` pipeline component: labels as `doc.cats`, spans as
`doc.spans`), `kiwi_tokenizer` (`kold_span.KiwiTokenizer.v1`, Korean morphemes as spaCy
tokens). An installed package registers both through spaCy's entry points; from a source
checkout, import the two modules. See docs/SPACY.md.
"""
