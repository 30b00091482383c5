"""Layer 8, training: Lightning data module and module, callbacks, calibration, `train` and `pretrain`.

The layer's public names are importable from here (`from kold_span.training import train`), each
from the module that defines it: `run` (`train`, `tokenizer_texts`), `evaluators`
(`evaluate_predictor`), `datamodule` (`WindowsDataModule`), `calibration` (`calibrate` and the
`Calibration` it returns; the n-gram companion: `choose_companion`, `refit_companion`, `taken_extra`).
The other modules: `run_folder` (where a run lives, its lock), `module` (the LightningModule), `optim`
(AdamW groups and the warm-up schedule), `sampling` (length-grouped and epoch-seeded orders), `averaging`
(EMA), `resume`, `pretrain`. A name is imported when first asked for, so importing this package does not
import Lightning.

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
_HOMES = {
    "train": "kold_span.training.run",
    "evaluate_predictor": "kold_span.training.evaluators",
    "tokenizer_texts": "kold_span.training.run",
    "WindowsDataModule": "kold_span.training.datamodule",
    "calibrate": "kold_span.training.calibration",
    "Calibration": "kold_span.training.calibration",
    "choose_companion": "kold_span.training.calibration",
    "refit_companion": "kold_span.training.calibration",
    "taken_extra": "kold_span.training.calibration",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'kold_span.training' has no attribute {name!r}")
