"""Benchmark inputs: sentences of an exact token count and the machine they ran on."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from attnreport.sentences import Sentence

# Plain prose, long enough for 512 tokens of the default tokenizer without repeating.
PROSE = (
    "The harbour town woke slowly on winter mornings, when the fishing boats had already "
    "gone out and the only sound on the quay was the wind in the rigging of the boats that "
    "stayed behind. Mara ran the bakery at the corner of the square, and every day at five "
    "she lit the oven, weighed the flour and listened to the radio read the weather for the "
    "coast. Her brother Tomas repaired nets in the shed behind the church; he said the sea "
    "was kinder than people and told anyone who asked that he would never leave. Their "
    "mother had kept the lighthouse for thirty years before the light became automatic, and "
    "she still climbed the hill on clear evenings to watch the beam turn over the water. "
    "In spring the ferry brought visitors who photographed the painted doors, bought "
    "postcards and asked where the old road to the cliffs began. The children of the town "
    "learned to swim in the cold bay, to read the tide tables and to mend a sail before "
    "they could ride a bicycle. When the storm of that November broke the sea wall, "
    "everyone carried sandbags through the night, and in the morning Mara gave away every "
    "loaf she had baked. The council promised a new wall, then a study of a new wall, and "
    "then nothing at all, so the fishermen built it themselves from the stones of the old "
    "pier. Years later, a student from the university came to measure the currents and "
    "stayed for a whole summer, writing down the names of the rocks, the songs the old men "
    "sang in the tavern and the recipes for the fish stew that every family made a little "
    "differently. She wrote that the town was poor in money and rich in patience, that it "
    "remembered every drowned sailor by name, and that its people measured time not in "
    "years but in winters survived. Her notebook is kept in the library now, beside the "
    "ledger of the lighthouse and a map of the bay drawn by a captain who never returned. "
    "On the last page she drew the bakery, the church and the hill, and wrote underneath "
    "that a place is a set of habits that people keep alive together, one morning at a time. "
    "The next winter was mild. The boats stayed out longer, the catch was good, and for the "
    "first time in a decade the school had more children than desks. Tomas took on an "
    "apprentice, a quiet boy from the valley who had never seen the sea before he was twelve "
    "and who now could not be kept away from it. Mara painted the bakery door blue, the "
    "colour of the bay on a calm day in June, and the visitors photographed that too. In the "
    "evenings the old men still argued in the tavern about the best bait for cod, about the "
    "year the ice came into the harbour, and about whether the student would ever come "
    "back. She did, ten years later, with a daughter of her own and a book with the town's "
    "name on the cover, and the library gave her notebook a glass case of its own."
)


def _ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text).input_ids)


def text_of_tokens(tokenizer, n_tokens: int) -> str:
    """A one-line prefix of ``PROSE`` that the tokenizer turns into exactly ``n_tokens`` tokens.

    ValueError when no prefix lands exactly (then the prose is too short for ``n_tokens``).
    """
    ids = _ids(tokenizer, PROSE)
    for k in range(min(n_tokens, len(ids)), 0, -1):
        for extra in range(0, 4):
            text = tokenizer.decode(ids[: k + extra]).strip()
            count = len(_ids(tokenizer, text))
            if count == n_tokens:
                return text
            if count > n_tokens:
                break
    raise ValueError(f"cannot make a sentence of exactly {n_tokens} tokens from the prose")


def exact_sentence(tokenizer, n_tokens: int, repeat: bool = False) -> Sentence:
    """A ``Sentence`` of exactly ``n_tokens`` ids: the prose's ids (repeated when asked)."""
    ids = _ids(tokenizer, PROSE)
    if repeat:
        ids = ids * (n_tokens // len(ids) + 1)
    if len(ids) < n_tokens:
        raise ValueError(f"the prose has {len(ids)} tokens, fewer than {n_tokens}")
    chosen = tuple(int(i) for i in ids[:n_tokens])
    tokens = tuple(tokenizer.decode([i]) for i in chosen)
    return Sentence(0, tokenizer.decode(list(chosen)), chosen, tokens)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return float("nan")


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def machine_info() -> dict[str, str]:
    """CPU model, cores, RAM, OS, Python/torch/transformers versions, commit, load average."""
    import torch
    import transformers

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "CPU": _cpu_model(),
        "Cores (os.cpu_count)": str(os.cpu_count()),
        "torch threads": str(torch.get_num_threads()),
        "RAM": f"{_ram_gib():.1f} GiB",
        "OS": platform.platform(),
        "Python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "attnreport commit": _git_commit(),
        "Load average at start (1/5/15 min)": " / ".join(f"{v:.2f}" for v in load),
    }
