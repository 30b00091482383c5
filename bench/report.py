"""Writing benchmark results into docs/benchmarks/<topic>.md, one marked section per benchmark run.

docs/BENCHMARKS.md holds the headline table and links; each topic's page holds its sections, each
rewritten in place between `<!-- begin NAME -->` and `<!-- end NAME -->` when its benchmark runs again.
"""
from __future__ import annotations

import json
import os
import platform
import re
from contextlib import suppress
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "benchmarks"
# Where the real corpora are: $KOLD_SPAN_DATA, else ../shared/data beside the project.
DATA = Path(os.environ.get("KOLD_SPAN_DATA") or ROOT.parent / "shared" / "data")
# A section's page, by the start of its name (`throughput-gpu-64` is a throughput section).
TOPICS = (("throughput", "throughput.md"), ("batching", "training-speed.md"), ("precision", "training-speed.md"),
          ("baselines", "baselines.md"), ("quality", "quality.md"), ("memory", "memory.md"),
          ("int8-vs-fp32", "int8-vs-fp32.md"), ("int8-variants", "throughput.md"))
HEADER = """# {title}

Every figure here was produced by the command printed above it, on the machine named there.
Sections are rewritten in place when their benchmark is run again.
"""


def topic_page(name: str) -> Path:
    """The docs page a section belongs to.

    Example:
        >>> topic_page("throughput-gpu-256").name, topic_page("precision-no-avx512").name
        ('throughput.md', 'training-speed.md')
        >>> topic_page("serve-load").name
        'serve-load.md'
    """
    return next((DOCS / page for prefix, page in TOPICS if name == prefix or name.startswith(prefix + "-")),
                DOCS / f"{name}.md")


def vector_extensions(flags: str) -> str:
    """The widest vector extension in a /proc/cpuinfo `flags` line ("" when none of these).

    Machines sold under one name differ here, and bf16 autocast is native only with AVX512-BF16 or AMX.

    Example:
        >>> vector_extensions("fpu sse2 avx avx2 avx512f avx512_bf16")
        'AVX512-BF16'
        >>> vector_extensions("fpu sse2 fma avx f16c avx2")
        'AVX2'
    """
    names = set(flags.split())
    widest_first = (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"), ("avx512f", "AVX-512"), ("avx2", "AVX2"))
    return next((name for flag, name in widest_first if flag in names), "")


ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def isa_flags(flags: Optional[str] = None) -> str:
    """The vector and matrix extensions int8 and bf16 speed depends on, as /proc/cpuinfo names them.

    VNNI (AVX512-VNNI or AVX-VNNI) multiplies int8 in one instruction, AMX in tiles; without either,
    int8 goes through AVX2's slower sequence.

    Example:
        >>> isa_flags("fpu sse2 avx2 avx512f avx512_vnni")
        'avx2 avx512f avx512_vnni'
        >>> isa_flags("fpu sse2")
        'none of avx2, avx512f, avx512_vnni, avx_vnni, avx512_bf16, amx_bf16, amx_int8'
    """
    flags = cpu_info().get("flags", "") if flags is None else flags
    present = [flag for flag in ISA_FLAGS if flag in flags.split()]
    return " ".join(present) if present else "none of " + ", ".join(ISA_FLAGS)


def cpu_info() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (none where it cannot be read)."""
    fields: dict[str, str] = {}
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return fields


def machine_line() -> str:
    """A short description of this machine (CPU model and vector extension, cores, Python)."""
    fields = cpu_info()
    cpu = fields.get("model name") or platform.processor() or platform.machine()
    extensions = vector_extensions(fields.get("flags", ""))
    cpu = f"{cpu} ({extensions})" if extensions else cpu
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_section(name: str, body: str, doc: Optional[Path] = None) -> None:
    """Replace (or append) the section `name` of `doc` (by default its topic's page, see `topic_page`)."""
    doc = doc or topic_page(name)
    doc.parent.mkdir(parents=True, exist_ok=True)
    text = doc.read_text(encoding="utf-8") if doc.exists() else HEADER.format(title=name.replace("-", " ").capitalize())
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")


def save_results(name: str, result, printed: bool = False, indent: int = 1, ascii_only: bool = False) -> None:
    """Write `result` as JSON into bench/results/NAME.json (and print it when `printed`)."""
    text = json.dumps(result, indent=indent, ensure_ascii=ascii_only)
    out = ROOT / "bench" / "results" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    if printed:
        print(text)


def run_splits(run: Path):
    """A trained run folder's saved config and the train / dev / test splits it carves (as training did)."""
    from kold_span.config import config_from_dict
    from kold_span.corpora.experiment import load_splits

    config = config_from_dict(json.loads((run / "config.json").read_text(encoding="utf-8")), str(run / "config.json"))
    return config, load_splits(config)
