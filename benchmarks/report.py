"""BENCHMARKS.md: sections of Markdown tables, the target summary and the kept notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

KEEP_MARKER = "<!-- bench: everything below this line is hand-written and kept when the file is regenerated -->"


@dataclass(frozen=True)
class Target:
    """One target of the brief: what was measured against which limit."""

    what: str
    measured: str
    limit: str
    met: bool | None  # None: not judged (quick mode, or nothing to judge)
    miss: str = ""  # by how much it was missed, when it was

    def status(self) -> str:
        if self.met is None:
            return "not judged"
        return "met" if self.met else f"**missed** {self.miss}".rstrip()


@dataclass
class Section:
    """One ``##`` section: its heading, body lines and the targets it judged."""

    title: str
    lines: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        self.lines.append("| " + " | ".join(header) + " |")
        self.lines.append("|" + "|".join(" --- " for _ in header) + "|")
        for row in rows:
            self.lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
        self.lines.append("")

    def judge(self, target: Target) -> None:
        self.targets.append(target)

    def markdown(self) -> str:
        return "\n".join([f"## {self.title}", "", *self.lines]).rstrip() + "\n"


def ratio_target(
    what: str, value: float, limit: float, unit: str, judged: bool, digits: int = 2
) -> Target:
    """A "value <= limit" target, with the miss as a multiple of the limit."""
    measured = f"{value:.{digits}f} {unit}".strip()
    met = value <= limit if judged else None
    miss = f"by {value - limit:.{digits}f} {unit} ({value / limit:.1f}x the limit)".replace(
        "  ", " "
    )
    return Target(what, measured, f"<= {limit:g} {unit}".strip(), met, "" if met else miss)


def targets_section(sections: Sequence[Section], quick: bool) -> Section:
    """The summary of every target, first in the file."""
    summary = Section("Targets")
    if quick:
        summary.add("Quick mode: small inputs, targets are not judged.", "")
    rows = [(t.what, t.measured, t.limit, t.status()) for s in sections for t in s.targets]
    summary.table(("Target", "Measured", "Limit", "Status"), rows)
    return summary


def kept_notes(path: Path) -> str:
    """The hand-written part of an existing BENCHMARKS.md (after the marker), or ""."""
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8")
    return text.split(KEEP_MARKER, 1)[1].lstrip("\n") if KEEP_MARKER in text else ""


def render(
    title: str, intro: Sequence[str], sections: Sequence[Section], notes: str, quick: bool
) -> str:
    """The whole file: title, intro, target summary, sections, then the kept notes."""
    parts = [f"# {title}", "", *intro, ""]
    parts.append(targets_section(sections, quick).markdown())
    parts.extend(section.markdown() for section in sections)
    parts.append(KEEP_MARKER + "\n")
    if notes:
        parts.append(notes.rstrip() + "\n")
    return "\n".join(parts)


def seconds(value: float) -> str:
    return f"{value:.2f} s"


def mib(value: float) -> str:
    return f"{value:.0f} MiB"


def kib(value: float) -> str:
    return f"{value / 1024:.1f} KiB"
