"""The article's apparatus on the index: the model line under the title, the Limitations
computed from the run, and the "Cite this report" block with its BibTeX.

Everything is computed from the manifest (model, settings, sentences) and the
interventions; nothing names one model or one run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from attnreport.results import Interventions, Manifest
from attnreport.results.pooling import POOL_WIDTH
from attnreport.site.words.chat import chat_words
from attnreport.site.words.effects import NO_POST_NORM, PostNorm
from attnreport.site.words.verdicts import min_sentences
from attnreport.site.words.wording import count, index_set

QUANT_IN_NAME = re.compile(r"\b(I?Q\d\w*|BF16|F16)\b")


def quantisation(manifest: Manifest) -> str | None:
    """The stored weights' quantisation: the manifest's (since it records one), else for a
    GGUF the type in the model's name (``Q4_1``); None when unquantised or unknown."""
    m = manifest.model
    recorded = m.extra.get("quantisation")
    if recorded is not None:
        return None if recorded == "none" else str(recorded)
    match = QUANT_IN_NAME.search(m.name or "") if m.source == "gguf" else None
    return f"{match.group(1)} (GGUF), dequantised to {m.dtype}" if match else None


def model_line(manifest: Manifest) -> str:
    """``SmolLM2-135M-Instruct (Q4_1 GGUF, embedded) · Q4_1 (GGUF), dequantised to float32 ·
    134.5 million parameters · run in float32 on cpu``: the exact model, under the title."""
    m = manifest.model
    parts = [m.name or "the model"]
    if quantisation(manifest):
        parts.append(f"weights {quantisation(manifest)}")
    if isinstance(m.extra.get("parameters"), int):
        parts.append(f"{m.extra['parameters'] / 1e6:.1f} million parameters")
    if m.extra.get("weights"):
        parts.append(f"from {m.extra['weights']}")
    parts.append(f"run in {m.dtype} on {m.device}")
    return " · ".join(parts)


def _bos(manifest: Manifest, recaptured: bool) -> str:
    """The BOS limitation; ``recaptured``: the sentences were also captured in the other
    BOS condition (the ``bos_contrast`` table), which StreamingLLM's claim reads."""
    added = bool(manifest.settings.extra.get("bos_added", False))
    if added:
        start = (
            "Every sentence starts with the tokenizer's BOS token, so the first token is the "
            "same in every sentence"
        )
        other = "without it"
    else:
        start = (
            f"No BOS token was put first (--bos {manifest.settings.bos}), so the first token is "
            "each sentence's own first word and any sink sits on a content token"
        )
        other = "with the tokenizer's BOS first"
    if recaptured:
        return (
            f"{start}. The sentences were captured a second time {other}, but only to test "
            "where the sink goes (StreamingLLM's claim); every other number and figure is "
            f"from the run {'with' if added else 'without'} it."
        )
    return (
        f"{start}; the same sentences were not captured again {other}, so the report cannot "
        "say whether the sink follows the position or the token."
    )


def post_norm(manifest: Manifest) -> PostNorm:
    """Whether the model normalises each attention block's output before adding it to the
    hidden state (Gemma 2 and 3, OLMo 2: the feature ``post_attention_norm``), and whether
    its update sizes were taken before that norm: every attention layer of results of
    schema 8 or later that has one says it measured each head's share after it
    (``LayerFacts.post_norm``); older results measured before it."""
    if "post_attention_norm" not in manifest.model.features:
        return NO_POST_NORM
    attending = [f for f in manifest.model.layers if f.attention]
    after = bool(attending) and all(f.post_norm for f in attending)
    return PostNorm(present=True, sizes_before=not after)


def update_sizes(manifest: Manifest) -> str:
    """How the model's update sizes ||u|| / ||x|| are taken, in a few words (a comparison
    says so when its models take them differently)."""
    norm = post_norm(manifest)
    if not norm.present:
        return "each head's update as added (no post-attention norm)"
    if norm.sizes_after:
        return "each head's share of what its post-attention norm adds"
    return "before the post-attention norm (not what is added)"


def _post_norm(manifest: Manifest) -> str | None:
    if not post_norm(manifest).sizes_before:
        return None
    return (
        "The model normalises each attention block's output before adding it to the hidden "
        "state (a post-attention norm). A head's update u is its slice of the output "
        "projection before that norm, so ||u|| / ||x|| compares heads with each other but is "
        "not the share the block adds; the claim that sink heads change the hidden state "
        "little is tested on that measure."
    )


def _sentences(n: int) -> str:
    text = f"The set has {count(n, 'sentence')}."
    if n < min_sentences():
        return (
            text + f" A 95% interval of a median across sentences needs {min_sentences()}: numbers "
            "over the set give their range, and the claims are inconclusive here."
        )
    return (
        text + " Medians across sentences and their 95% intervals describe these sentences, not "
        "language at large."
    )


# The index while ``serve --watch`` runs the grids again after putting the site up
# (``SiteOptions.updating``): the results it is drawn from hold none for a moment.
GRIDS_UPDATING = (
    "The intervention grids are being computed from the current sentences: what they show "
    "(their figures, and the findings, claims and checks they decide) appears here when they "
    "are done."
)


def _interventions(iv: Interventions | None, updating: bool = False) -> str | None:
    if iv is None:
        return "The interventions are being run." if updating else "No interventions were run."
    mean = index_set(iv.mean.sentences, "sentence")
    second = (
        "; Q and K were also averaged before the rotation and rotated again per position"
        if iv.mean.before_rotation
        else "; the reading with the mean taken before the rotation was not run"
    )
    scaled = iv.scaling.inputs
    scaling = (
        f"sentence {scaled[0]}"
        if len(scaled) == 1
        else f"{len(scaled)} sentences ({index_set(scaled, 'sentence')}; the maps drawn are "
        f"sentence {iv.scaling.sentence}'s)"
    )
    return (
        f"Interventions run in one layer ({iv.layer}), scaling on {scaling} and mean "
        f"replacement on {mean}; other layers may respond differently. The "
        "mean is taken on Q, K and V as the attention function receives them (after any rotary "
        f"rotation){second}."
    )


def limitations(
    manifest: Manifest, iv: Interventions | None, recaptured: bool = False, updating: bool = False
) -> list[str]:
    """What this run cannot show, computed from it (one sentence or two each);
    ``recaptured``: the set holds the sentences captured again with a BOS first;
    ``updating``: the interventions are being run (``GRIDS_UPDATING``)."""
    s = manifest.settings
    out = [_sentences(len(manifest.sentences))]
    quant = quantisation(manifest)
    if quant:
        out.append(
            f"The weights are quantised ({quant}): the numbers describe this quantised model, "
            "not the original floating-point weights."
        )
    out.append(_bos(manifest, recaptured))
    out.append(chat_words(manifest, "limitation") or "")
    out.append(_interventions(iv, updating) or "")
    out.append(_post_norm(manifest) or "")
    longest = max((x.n_tokens for x in manifest.sentences), default=0)
    if longest > s.map_tokens:
        out.append(
            f"Full attention maps are kept for sentences of up to {s.map_tokens} tokens (the "
            f"longest has {longest}); longer ones show every figure but the map. Past "
            f"{s.map_tokens} tokens the per-query tables (the breakdown, the top keys, each "
            f"head's update size) are kept as means over bins of {POOL_WIDTH} positions, "
            "which the figures draw; every statistic over a sentence's queries (focus, "
            "sink rates, head roles) is computed from every query."
        )
    return [t for t in out if t]


def _bib_key(title: str, year: str) -> str:
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "attnreport" + year + "".join(w for w in words[:3])


def _bib_escape(text: str) -> str:
    return re.sub(r"([{}%&#$_])", r"\\\1", text)


def citation(
    title: str, authors: Sequence[str], date: str | None, manifest: Manifest, version: str
) -> str:
    """A BibTeX ``@misc`` entry for the report (no URL: the site does not know its own)."""
    year = (date or "")[:4]
    fields: list[tuple[str, Any]] = [
        ("title", title),
        ("author", " and ".join(authors)),  # left out without authors: never the tool's name
        ("year", year),
        ("note", f"Attention report on {manifest.model.name or 'a causal language model'}, "
                 f"{count(len(manifest.sentences), 'sentence')}, made with attnreport {version}"),
    ]  # fmt: skip
    body = ",\n".join(f"  {k} = {{{_bib_escape(str(v))}}}" for k, v in fields if v)
    return f"@misc{{{_bib_key(title, year)},\n{body}\n}}"
