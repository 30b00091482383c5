"""`python -m kold_span.cli`: the same as the `kold-span` command."""
import sys

from kold_span.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
