"""A grid's results written: results.csv (every run), results.md and results.png, each whole or not at all.

Example:
    >>> import tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> rows = [{"cell": "context=auto", "context": "auto", "seed": 13, "T/macro_f1": 0.5, "seconds": 3.0}]
    >>> [p.name for p in write_results(rows, ["context"], folder.name, command="kold-span ablate ...")]
    ['results.csv', 'results.md', 'results.png']
    >>> folder.cleanup()
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from kold_span.data.atomic import atomic_write, write_text_atomic
from kold_span.experiments.markdown import render_markdown
from kold_span.experiments.plot import plot_main_metric
from kold_span.experiments.summary import choose_metrics, metric_names, summarize

FILES = ("results.csv", "results.md", "results.png")


def write_results(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], out_dir: Union[str, Path],
                  metrics: Optional[Sequence[str]] = None, command: str = "") -> list[Path]:
    """Write results.csv (every run, every test metric), results.md and results.png into `out_dir`.

    All three are rendered before the first is written, and each is written whole or not at all
    (`atomic_write`): a failure leaves the previous results as they were.
    """
    out = Path(out_dir)
    names = metric_names(rows)
    chosen = choose_metrics(names, metrics)
    paths = [out / name for name in FILES]
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=["cell", *keys, "seed", *names, "seconds"], restval="")
    writer.writeheader()
    writer.writerows(rows)
    summary = summarize(rows, keys, chosen)
    markdown = render_markdown(summary, keys, chosen, command)
    plot = io.BytesIO()
    plot_main_metric(summary, keys, chosen[0], plot)
    with atomic_write(paths[0], newline="") as f:
        f.write(table.getvalue())
    write_text_atomic(paths[1], markdown)
    with atomic_write(paths[2], "wb") as f:
        f.write(plot.getvalue())
    return paths
