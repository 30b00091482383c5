"""What a reader skipped or found suspicious, reported instead of hidden."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field


@dataclass
class ReadReport:
    """Skipped records and gold/stated disagreements found while reading one file."""

    source: str
    skipped: list[str] = field(default_factory=list)
    disagreements: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, message: str) -> None:
        """Record one skipped record with the reason."""
        self.skipped.append(message)

    def disagree(self, field_name: str, example_id: str) -> None:
        """Record that an example's derived `field_name` differs from the file's own."""
        self.disagreements.setdefault(field_name, []).append(example_id)

    def summary(self) -> str:
        """A readable multi-line summary (empty when nothing happened)."""
        lines = []
        if self.skipped:
            lines.append(f"{self.source}: skipped {len(self.skipped)} bad record(s):")
            lines += [f"  {m}" for m in self.skipped]
        for name, ids in sorted(self.disagreements.items()):
            shown = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
            lines.append(f"{self.source}: {len(ids)} record(s) whose derived {name} span differs "
                         f"from the file's {name}_span: {shown}")
        return "\n".join(lines)

    def warn(self) -> None:
        """Emit the summary as a warning when there is anything to say."""
        text = self.summary()
        if text:
            warnings.warn(text, stacklevel=3)
