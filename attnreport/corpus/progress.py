"""A rich progress column: items per second of the current stage (sentences/s)."""

from __future__ import annotations

from rich.progress import ProgressColumn, Task
from rich.text import Text


class RateColumn(ProgressColumn):
    """``12.3/s`` from rich's speed estimate; blank until there is one."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")
