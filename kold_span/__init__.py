"""kold-span: offensive language, targets and spans, sarcasm and irony in context.

>>> from kold_span import Example
>>> Example(id="1", text="너 진짜 바보냐", spans={"OFF": [(5, 8)]}).span_texts("OFF")
['바보냐']
"""
from kold_span import metrics
from kold_span.data.example import Annotation, Example
from kold_span.data.jsonl import read_jsonl, write_jsonl
from kold_span.errors import DataError, KoldSpanError

__version__ = "0.1.0"
__all__ = ["Annotation", "DataError", "Example", "KoldSpanError", "Predictor", "metrics", "read_jsonl", "write_jsonl"]


def __getattr__(name: str):
    # Predictor pulls in torch and transformers; import it only when asked for.
    if name == "Predictor":
        from kold_span.inference.predictor import Predictor
        return Predictor
    raise AttributeError(f"module 'kold_span' has no attribute {name!r}")
