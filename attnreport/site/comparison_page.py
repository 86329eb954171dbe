"""The comparison index's context: what ``templates/compare.html`` shows for several
models (cards side by side, how each split the sentences, the comparing findings, the
claims' verdicts per model). Pure: typed values in, a context out."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import attnreport
from attnreport.dates import report_date
from attnreport.multi.findings import ClaimRow, Comparison
from attnreport.multi.measures import ModelSide, depth
from attnreport.results import Manifest
from attnreport.site.context import FigureContext, PageMeta, SiteOptions
from attnreport.site.model_card import CARD as MODEL_CARD
from attnreport.site.model_card import card_value
from attnreport.text import display_token, visible

SPLIT_SENTENCES = 20  # sentences whose split into tokens the index spells out
# The model card's rows (``model_card.CARD``) set side by side, in the card's order; the
# comparison calls its dtype the "Run dtype"
SIDE_BY_SIDE = (
    "Parameters",
    "Weights from",
    "Quantisation",
    "Architecture",
    "Layers",
    "Heads",
    "KV heads",
    "Head size",
    "Positions",
    "BOS token",
    "Dtype",
    "Tokenizer",
)
CARD = tuple(
    ("Run dtype" if label == "Dtype" else label, keys)
    for label, keys in MODEL_CARD
    if label in SIDE_BY_SIDE
)
TOKENS_NOTE = (
    "The models' tokenizers split the same sentences differently, so no token of one is "
    "matched with a token of another. Every number compared here is per model and "
    "set-level (pooled over each model's own tokens of the same sentences) or a per-layer "
    "measure that does not depend on how the sentence was split; each model's sentence "
    "pages show its own tokens."
)


@dataclass(frozen=True)
class ModelColumn:
    """One model as the index lists it: name, colour, its report's link, its card."""

    name: str
    color: str
    href: str  # its own report (``SLUG/index.html``)
    card: tuple[str, ...]  # values in the order of ``CARD_LABELS``


@dataclass(frozen=True)
class SplitRow:
    """How each model split one sentence: its text, and per model the token count, the
    tokens (empty past ``SPLIT_SENTENCES``) and the link to that model's page (or None)."""

    index: int
    text: str
    splits: tuple[tuple[int, tuple[str, ...], str | None], ...]


@dataclass(frozen=True)
class ComparisonContext:
    meta: PageMeta
    lede: str
    models: tuple[ModelColumn, ...]
    card_labels: tuple[str, ...]
    findings: tuple[Comparison, ...]
    tokens_note: str
    splits: tuple[SplitRow, ...]
    splits_rest: str  # the sentences without a page, in one line ("" when every one has)
    figures: tuple[FigureContext, ...]
    claims: tuple[ClaimRow, ...]


def windows_words(manifest: Manifest) -> str:
    """``none``, or ``15 of 18 layers, 512 tokens``."""
    windows = manifest.model.layer_windows
    if not windows:
        return "none"
    sizes = ", ".join(f"{s}" for s in sorted(set(windows.values())))
    return f"{len(windows)} of {manifest.model.n_layers} layers, {sizes} tokens"


def card_values(manifest: Manifest) -> tuple[str, ...]:
    """The card's values (``CARD`` then windows, QK-norm, soft-cap, post-attention norm)."""
    values = [
        card_value(manifest, "Dtype" if label == "Run dtype" else label, keys)
        for label, keys in CARD
    ]
    shown = [f"{v:,}" if isinstance(v, int) and v >= 10_000 else str(v) for v in values]
    features = set(manifest.model.features)
    shown += [
        windows_words(manifest),
        "yes" if "qk_norm" in features else "no",
        "yes" if "softcap" in features or "soft_cap" in features else "no",
        "yes" if "post_attention_norm" in features else "no",
    ]
    return tuple(visible(v) for v in shown)


CARD_LABELS = (
    *(label for label, _ in CARD), "Sliding windows", "QK-norm", "Soft-cap", "Post-attention norm"
)  # fmt: skip


def model_columns(sides: Sequence[ModelSide], colors: Sequence[str]) -> tuple[ModelColumn, ...]:
    return tuple(
        ModelColumn(s.name, color, f"{s.slug}/index.html", card_values(s.manifest))
        for s, color in zip(sides, colors, strict=True)
    )


def lede(sides: Sequence[ModelSide]) -> str:
    """The opening sentence: which models, how many sentences, on what axis."""
    names = ", ".join(s.name for s in sides[:-1]) + f" and {sides[-1].name}"
    layers = ", ".join(f"{s.n_layers}" for s in sides)
    n = len(sides[0].manifest.sentences)
    return (
        f"{names} read the same {n} sentence{'s' if n != 1 else ''}; each has its own "
        f"report (linked below). Their depths differ ({layers} layers), so the curves here "
        "put every layer at its relative depth, layer / (L - 1): 0 is the first layer, 1 "
        f"the last (layer 1 of a 30-layer model is at depth {depth(1, 30):.2f})."
    )


def page_meta(options: SiteOptions, sides: Sequence[ModelSide]) -> PageMeta:
    """The header and footer of the comparison: dated as each model's report is
    (``dates.report_date``), by the latest of the models' analyses."""
    analysed = [s.manifest.analysed for s in sides if s.manifest.analysed]
    return PageMeta(
        site_title=options.title,
        date=report_date(options.date, max(analysed, default=None)),
        authors=options.authors,
        model_name=", ".join(s.name for s in sides),
        version=attnreport.__version__,
    )


def split_rows(
    sides: Sequence[ModelSide],
    tokens: Sequence[Sequence[Sequence[str] | None]],
    pages: Sequence[Sequence[str | None]],
) -> tuple[SplitRow, ...]:
    """Per sentence with a page (in any model), how each model split it. tokens[m][i]:
    model m's tokens of sentence i (None: not spelled out); pages[m][i]: model m's page of
    it, relative to the index. The others are one line (``split_rest``)."""
    rows = []
    for i, listed in enumerate(sides[0].manifest.sentences):
        if not any(p[i] for p in pages):
            continue
        splits = tuple(
            (
                side.manifest.sentences[i].n_tokens,
                tuple(display_token(t) for t in tokens[m][i] or ()),
                pages[m][i],
            )
            for m, side in enumerate(sides)
        )
        rows.append(SplitRow(i, visible(listed.text), splits))
    return tuple(rows)


def split_rest(sides: Sequence[ModelSide], shown: Sequence[int]) -> str:
    """The sentences ``split_rows`` leaves out, in one line: how many, and each model's
    token counts over them (range and median); "" when none is left out."""
    rest = sorted(set(range(len(sides[0].manifest.sentences))) - set(shown))
    if not rest:
        return ""
    counts = []
    for side in sides:
        n = [side.manifest.sentences[i].n_tokens for i in rest]
        counts.append(
            f"{side.name} into {min(n)} to {max(n)} tokens (median {statistics.median(n):g})"
        )
    what = f"The other {len(rest)} sentences" if len(rest) > 1 else "The other sentence"
    return (
        f"{what} have no page of their own; they count in every set-level number. "
        f"{'; '.join(counts)}. Each model's results list them with their tokens' ids "
        "(results/manifest.json)."
    )
