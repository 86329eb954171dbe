"""The sentence set: read a user's file (one sentence per line) or the built-in set, and tokenize it.

Rules, chosen so a report never silently changes what the user wrote:
- UTF-8 only (a leading BOM is accepted and dropped); CRLF and CR endings are accepted.
- A file that does not decode and holds NUL bytes, or is mostly control characters, is
  refused as binary; a sentence may still contain a few control characters (even NUL).
- Blank lines are skipped; surrounding whitespace is stripped.
- Duplicate sentences are dropped after the first, with a warning naming them, so every
  page of the report is a different sentence.
- A sentence longer than the model's context is an error naming it and both lengths,
  unless ``truncate`` is set: then it is cut to the context, with a warning.
- A sentence the tokenizer turns into zero tokens is an error naming it.
- A ``.jsonl`` file holds one JSON object per line with a string ``text`` field (other
  fields are ignored); a line that is not such an object is an error naming its line.
  The texts then follow the rules above (stripped, blanks skipped, duplicates dropped).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from attnreport.errors import AttnReportError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sentence:
    index: int
    text: str
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]  # each token decoded alone, as the report shows it


def default_sentence_text() -> str:
    return resources.files("attnreport").joinpath("data/sentences.txt").read_text(encoding="utf-8")


def parse_sentences(raw: bytes, origin: str) -> list[str]:
    """Sentences of a file's bytes, following the module's rules (``origin`` names it in errors)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if b"\x00" in raw:
            raise AttnReportError(
                f"{origin} looks binary (NUL bytes, not UTF-8); give a UTF-8 text file"
            ) from err
        raise AttnReportError(
            f"{origin} is not UTF-8 (byte {err.start}); save it as UTF-8 and try again"
        ) from err
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r")
    if controls > max(8, len(text) // 10):
        raise AttnReportError(
            f"{origin} looks binary ({controls} control characters); give a UTF-8 text file"
        )
    return clean_sentences(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), origin)


def clean_sentences(lines: list[str], origin: str) -> list[str]:
    """The sentences of ``lines`` by the module's rules: stripped, blanks skipped,
    duplicates dropped after the first (with a warning); an error when none is left."""
    lines = [line.strip() for line in lines]
    sentences, seen, dropped = [], set(), []
    for line in lines:
        if not line:
            continue
        if line in seen:
            dropped.append(line)
            continue
        seen.add(line)
        sentences.append(line)
    if not sentences:
        raise AttnReportError(f"{origin} has no sentences (it is empty or only blank lines)")
    if dropped:
        log.warning(
            "dropped %d duplicate sentence(s) from %s: %s", len(dropped), origin, _quote(dropped[0])
        )
    return sentences


def listed_sentences(texts: object, origin: str = "the sentence list") -> list[str]:
    """Sentences given as a list of strings (the Python API), by the same rules as a file's
    lines; a sentence holding line breaks is one line, its lines joined with spaces (as a
    ``.jsonl`` text is)."""
    if isinstance(texts, str | bytes) or not hasattr(texts, "__iter__"):
        raise AttnReportError(
            f"{origin} must be a list of strings, one sentence each; got {type(texts).__name__}"
        )
    texts = list(texts)  # type: ignore[call-overload]
    bad = [t for t in texts if not isinstance(t, str)]
    if bad:
        raise AttnReportError(
            f"{origin} must hold strings, one sentence each; got {type(bad[0]).__name__} {bad[0]!r}"
        )
    return clean_sentences([" ".join(t.splitlines()) for t in texts], origin)


def read_sentences(path: str | Path | None) -> list[str]:
    """Sentences from ``path``, or the built-in set when ``path`` is None."""
    if path is None:
        return parse_sentences(default_sentence_text().encode(), "the built-in sentence set")
    path = Path(path)
    if not path.exists():
        raise AttnReportError(f"sentence file {path} does not exist")
    if path.is_dir():
        raise AttnReportError(
            f"sentence file {path} is a directory; give a text file, one sentence per line"
        )
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise AttnReportError(f"cannot read sentence file {path}: {err.strerror}") from err
    if path.suffix.lower() == ".jsonl":
        raw = jsonl_texts(raw, str(path))
    return parse_sentences(raw, str(path))


def jsonl_texts(raw: bytes, origin: str) -> bytes:
    """The ``text`` fields of a JSON Lines file, one per line, as UTF-8 for ``parse_sentences``."""
    try:
        lines = raw.decode("utf-8-sig").replace("\r\n", "\n").split("\n")
    except UnicodeDecodeError as err:
        raise AttnReportError(
            f"{origin} is not UTF-8 (byte {err.start}); save it as UTF-8"
        ) from err
    texts = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as err:
            raise AttnReportError(f"{origin} line {number} is not JSON: {err.msg}") from err
        if not isinstance(value, dict) or not isinstance(value.get("text"), str):
            raise AttnReportError(f'{origin} line {number} has no "text" string field')
        texts.append(" ".join(value["text"].splitlines()))  # one sentence stays one line
    return "\n".join(texts).encode("utf-8")


def sentence_notes(path: str | Path | None) -> dict[str, str]:
    """{sentence text: note} from the ``note`` string fields of a ``.jsonl`` sentence file
    (the author's words for that sentence's page, Markdown); {} for other files. The text
    is the sentence as ``read_sentences`` gives it (one line, stripped)."""
    if path is None or Path(path).suffix.lower() != ".jsonl" or not Path(path).is_file():
        return {}
    notes = {}
    for number, line in enumerate(Path(path).read_text("utf-8-sig").splitlines(), start=1):
        value = json.loads(line) if line.strip() else {}
        note = value.get("note") if isinstance(value, dict) else None
        if note is None:
            continue
        if not isinstance(note, str):
            raise AttnReportError(f'{path} line {number}: "note" must be a string')
        notes[" ".join(str(value.get("text", "")).splitlines()).strip()] = note
    return notes


def sentence_ids(text: str, tokenizer, chat_template: bool = False) -> list[int]:
    """The token ids of ``text``: as the tokenizer encodes plain text (its default special
    tokens), or with ``chat_template`` the whole chat the tokenizer's template writes for
    one user message holding ``text`` (no generation prompt; a template that adds a
    default system message adds it). AttnReportError when the tokenizer has no template."""
    if not chat_template:
        return list(tokenizer(text).input_ids)
    if not getattr(tokenizer, "chat_template", None):
        raise AttnReportError(
            "the chat_template setting reads each sentence as a chat message, but this "
            "model's tokenizer has no chat template; set chat_template = false"
        )
    message = [{"role": "user", "content": text}]
    out = tokenizer.apply_chat_template(message, tokenize=True, add_generation_prompt=False)
    ids = out["input_ids"] if hasattr(out, "keys") else out  # a BatchEncoding, or ids
    return [int(i) for i in ids]


def has_chat_template(tokenizer) -> bool:
    """Whether the tokenizer carries a chat template (the format instruction-tuned models
    are trained to read)."""
    return bool(getattr(tokenizer, "chat_template", None))


BOS_MODES = ("auto", "always", "never")


def with_bos(ids: list[int], tokenizer, bos: str) -> list[int]:
    """``auto``: the tokenizer's own default; ``always``: a leading BOS is ensured;
    ``never``: a leading BOS the tokenizer added is removed."""
    if bos not in BOS_MODES:
        raise AttnReportError(f"unknown bos mode '{bos}' (use {', '.join(BOS_MODES)})")
    bos_id = getattr(tokenizer, "bos_token_id", None)
    if bos == "auto":
        return ids
    if bos_id is None:
        if bos == "always":
            raise AttnReportError("--bos always: the tokenizer has no BOS token")
        return ids
    starts = bool(ids) and ids[0] == bos_id
    if bos == "always":
        return ids if starts else [bos_id, *ids]
    return ids[1:] if starts else ids


def bos_added(sentences: list[Sentence], tokenizer) -> bool:
    """Whether every sentence starts with the tokenizer's BOS token."""
    bos_id = getattr(tokenizer, "bos_token_id", None)
    return bos_id is not None and all(s.token_ids[:1] == (bos_id,) for s in sentences)


def tokenize_sentences(
    texts: list[str],
    tokenizer,
    context: int,
    truncate: bool = False,
    bos: str = "auto",
    chat_template: bool = False,
) -> list[Sentence]:
    """Token ids and per-token text for each sentence, with the model's default special
    tokens (or, with ``chat_template``, as a user message in the tokenizer's chat
    template: ``sentence_ids``), and a leading BOS as ``bos`` asks (see ``with_bos``)."""
    result = []
    for index, text in enumerate(texts):
        ids = with_bos(sentence_ids(text, tokenizer, chat_template), tokenizer, bos)
        if not ids:
            raise AttnReportError(
                f"the tokenizer produced no tokens for sentence {index + 1} {_quote(text)}"
            )
        if len(ids) > context:
            if not truncate:
                raise AttnReportError(
                    f"sentence {index + 1} {_quote(text)} has {len(ids)} tokens but the model's context is "
                    f"{context}; shorten it or pass --truncate"
                )
            log.warning("sentence %d truncated from %d to %d tokens", index + 1, len(ids), context)
            ids = ids[:context]
        tokens = tuple(tokenizer.decode([i]) for i in ids)
        result.append(Sentence(index, text, tuple(int(i) for i in ids), tokens))
    return result


def _quote(text: str, limit: int = 40) -> str:
    short = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(short)
