"""Layer 10, the `kold-span` command line: the only layer that prints."""
from kold_span.cli.main import main

__all__ = ["main"]
