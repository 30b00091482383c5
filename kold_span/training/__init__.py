"""Layer 8, training: Lightning data module and module, callbacks, calibration, `train` and `pretrain`.

The layer's public names (`_HOMES`) are importable from here (`from kold_span.training import train`);
docs/ARCHITECTURE.md lists its modules. A name is imported when first asked for, so importing this package
does not import Lightning.

Example:
    >>> from kold_span.training import tokenizer_texts
    >>> from kold_span.data.example import Example
    >>> tokenizer_texts([Example("1", "바보", context=["A: 안녕", "B: 응"]), Example("2", "멋진 말")])
    ['바보', '멋진 말', 'A: 안녕', 'B: 응']
"""
from __future__ import annotations

import importlib
from typing import Any

# Each public name and the module that defines it.
_HOMES = {name: module for module, names in {
    "kold_span.training.run": ("train", "tokenizer_texts"),
    "kold_span.training.evaluators": ("evaluate_predictor",),
    "kold_span.training.datamodule": ("WindowsDataModule",),
    "kold_span.training.calibration": ("calibrate", "Calibration", "choose_companion", "fit_confidence_maps",
                                       "fit_temperatures", "refit_companion", "taken_extra", "with_maps"),
}.items() for name in names}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'kold_span.training' has no attribute {name!r}")
