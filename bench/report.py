"""Writing benchmark results into docs/BENCHMARKS.md, one marked section per benchmark."""
from __future__ import annotations

import os
import platform
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "BENCHMARKS.md"
HEADER = """# Benchmarks

Every figure here was produced by the command printed above it, on the machine named there.
Sections are rewritten in place when their benchmark is run again.
"""


def machine_line() -> str:
    """A short description of this machine (CPU model, cores, Python)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section `name` of `doc` (docs/BENCHMARKS.md by default)."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    text = doc.read_text(encoding="utf-8") if doc.exists() else HEADER
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")
