"""Layer 2, data: the canonical `Example` with character-offset spans, JSONL, splits and transforms.

`example` (the data model and span arithmetic), `jsonl` (reading and writing the canonical
format, UTF-8 lines), `atomic` (output files written whole or not at all), `selection` (carving
dev/test, `data.filter`), `transforms` (speaker swap), `perspectives` (one example per annotator,
traits verbalised into the context), `bad_records` (one policy for bad records of any input file:
raise naming file and line, or skip into one report).
"""
from kold_span.data.atomic import atomic_write, partial_path, write_text_atomic
from kold_span.data.bad_records import BadRecords, BadRecordWarning, SkipReport
from kold_span.data.example import (Annotation, Context, Example, Span, context_turns, label_set, label_str,
                                    merge_spans, normalize_spans, offsets_to_spans, spans_to_offsets)
from kold_span.data.jsonl import (iter_json_lines, parse_json_line, read_jsonl, read_utf8, require_path, utf8_lines,
                                  write_jsonl)
from kold_span.errors import DataError

__all__ = ["Annotation", "BadRecordWarning", "BadRecords", "Context", "DataError", "Example", "SkipReport", "Span",
           "atomic_write", "context_turns", "iter_json_lines", "label_set", "label_str", "merge_spans",
           "normalize_spans", "offsets_to_spans", "parse_json_line", "partial_path", "read_jsonl", "read_utf8",
           "require_path", "spans_to_offsets", "utf8_lines", "write_jsonl", "write_text_atomic"]
