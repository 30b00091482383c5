"""The project's errors: one root, `KoldSpanError`, that the command line reports without a traceback.

Each subclass also derives from the built-in error it refines (`ValueError` for bad
values, `RuntimeError` for a model that cannot be loaded), so callers that caught
those before still do.

Which to raise: a mistake the user can fix is one of these, named by where it was made
(`ConfigError` a config file or override, `DataError` an input file, `ModelFormatError`
a trained model directory, `EncoderLoadError` an encoder, `ArgumentError` a value passed
to a function or a command-line option, `OutputInUseError` an output another run is writing).
A path that does not exist is the built-in
`FileNotFoundError`, which the command line reports with its path. What only a bug
can cause (a model used before `fit`, two parallel sequences of different lengths)
stays a built-in error, so that it shows its traceback.

>>> issubclass(DataError, KoldSpanError) and issubclass(DataError, ValueError)
True
"""
from __future__ import annotations


class KoldSpanError(Exception):
    """Something the user can fix: a bad file, config value, model directory or argument."""


class ConfigError(KoldSpanError, ValueError):
    """A config file or override is invalid; the message names the key and the file."""


class DataError(KoldSpanError, ValueError):
    """Malformed input data; the message names the file, line (or record) and field."""


class EncoderLoadError(KoldSpanError, RuntimeError):
    """An encoder or tokenizer could not be loaded (offline without a cache, a bad directory)."""


class ModelFormatError(KoldSpanError, ValueError):
    """A trained model directory this version cannot read: a missing file or key, an unknown format."""


class ArgumentError(KoldSpanError, ValueError):
    """A bad argument to the Python API (a wrong type, an empty batch size); names the argument."""


class OutputInUseError(KoldSpanError, RuntimeError):
    """An output file another run is writing now (its lock is taken): refused instead of mixing the two runs."""
