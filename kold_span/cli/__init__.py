"""Layer 10, the `kold-span` command line: the only layer that prints.

`main` (parsing, logging set-up, error reporting) and one module per command: `train`,
`predict`, `evaluate`, `convert`, `agreement`, `pretrain`, `import_encoder`, `ablate`.
"""
from kold_span.cli.main import main

__all__ = ["main"]
