"""Section 8 of BENCHMARKS.md: how much a site weighs, against the budgets of issue 42.

Three sites, each measured on disk (every file, apparent size) and split by part, and
as sent by a server that gzip-compresses what is not compressed already (``sent``):

- the newcomer's project: four sentences, one of them a 163-token paragraph (the
  benchmark prose), built with the default model and the default settings (images on),
  as ``attnreport build --sentences four.txt`` would: budget 12 MB on disk and 5 MB
  sent;
- one 5,000-token input, built with ``--no-images`` on a tiny random-weight Llama made
  here from a config (``TINY_LONG``: 4 layers of 3 heads, a word-level tokenizer over the
  prose's words), so a routine bench run can afford it: budget 25 MB, no file over
  10 MB. The default model has 30 layers of 9 heads, 22.5 times as many: every table
  kept per (layer, head, query) grows with that ratio, so the section also extrapolates
  the same input to the default model file by file (``default_model_estimate``) and
  judges the estimate against the same budgets;
- the example (section 4's build): budget 15 MB.

Quick mode: no newcomer's project (it is a default-model build of its own) and a
40-token long input; nothing is judged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.report import Section, Target, ratio_target
from benchmarks.sections import TITLES, Context
from benchmarks.workers import run_worker

MB = 1e6
NEWCOMER_BUDGET_MB = 12.0
NEWCOMER_SENT_BUDGET_MB = 5.0  # every page and its files, gzip-compressed as served
LONG_BUDGET_MB = 25.0
LONG_FILE_BUDGET_MB = 10.0
EXAMPLE_BUDGET_MB = 15.0
COMPRESSED = (".gz", ".png")  # sent as they are; every other file gzip-compressed
PARAGRAPH_TOKENS = 163
LONG_TOKENS = 5000
QUICK_LONG_TOKENS = 40
NEWCOMER_SHORT = (
    "The cat sat on the mat and looked out of the window.",
    "Where did I leave my keys this morning?",
    "Attention heads often attend to the first token of a sentence.",
)
TINY_LONG = {"layers": 4, "heads": 3, "kv_heads": 1, "head_dim": 8}  # the long input's model
DEFAULT_SHAPE = {"layers": 30, "heads": 9}  # the default model (SmolLM2-135M)
PARTS = ("results", "data", "figures")  # the rest: pages and shared assets


def sent_bytes(path: Path) -> int:
    """Bytes a server that gzip-compresses sends for the file (``COMPRESSED`` ones as they are)."""
    import gzip

    data = path.read_bytes()
    return len(data) if path.name.endswith(COMPRESSED) else len(gzip.compress(data, 6, mtime=0))


def site_weight(site: Path) -> dict[str, Any]:
    """Bytes of a built site: ``total``, one entry per folder of ``PARTS``, ``pages`` (the
    rest: HTML, assets), ``files``, the ``largest`` file (its path in the site, bytes) and
    ``sent`` (every file as a gzip-compressing server sends it: ``sent_bytes``)."""
    files = [p for p in site.rglob("*") if p.is_file()]
    sizes = {p.relative_to(site).as_posix(): p.stat().st_size for p in files}
    out: dict[str, Any] = {part: 0 for part in PARTS}
    for name, size in sizes.items():
        top = name.split("/", 1)[0]
        key = top if top in PARTS else "pages"
        out[key] = out.get(key, 0) + size
    out["total"] = sum(sizes.values())
    out["sent"] = sum(sent_bytes(p) for p in files)
    out["files"] = len(sizes)
    out["largest"] = max(sizes.items(), key=lambda item: item[1], default=("", 0))
    return out


def save_tiny_long_model(directory: Path, words: list[str]) -> Path:
    """A random-weight Llama of ``TINY_LONG``'s shape with a word-level tokenizer over
    ``words`` (whitespace split), saved like a user's local model."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {word: i for i, word in enumerate(["<unk>", "<s>", *sorted(set(words))])}
    heads, head_dim = TINY_LONG["heads"], TINY_LONG["head_dim"]
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=heads * head_dim,
        intermediate_size=2 * heads * head_dim,
        num_hidden_layers=TINY_LONG["layers"],
        num_attention_heads=heads,
        num_key_value_heads=TINY_LONG["kv_heads"],
        head_dim=head_dim,
        max_position_embeddings=2 * LONG_TOKENS,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).eval().save_pretrained(directory)
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>")
    fast.save_pretrained(directory)
    return directory


def growth_factors() -> dict[str, float]:
    """How each part of the long input's site grows from the tiny model to the default
    one: ``heads`` (every (layer, head) row: the results' tables, the figures' data files,
    22.5x), ``layer_heads`` (what holds one layer's heads: the interventions and their
    grids' data files observe every head of three layers, the pages inline one layer,
    3x) and 1 for the rest (the shared assets). An upper bound: ``block_impact`` and the
    manifest grow less."""
    tiny = TINY_LONG["layers"] * TINY_LONG["heads"]
    default = DEFAULT_SHAPE["layers"] * DEFAULT_SHAPE["heads"]
    return {"heads": default / tiny, "layer_heads": DEFAULT_SHAPE["heads"] / TINY_LONG["heads"]}


def default_model_estimate(site: Path) -> dict[str, Any]:
    """The long input's site on the default model, extrapolated file by file from
    ``site`` (built on the tiny model) with ``growth_factors``: ``total`` and
    ``largest`` (path, bytes), as ``site_weight`` gives them."""
    factors = growth_factors()
    sizes = {}
    for path in (p for p in site.rglob("*") if p.is_file()):
        name = path.relative_to(site).as_posix()
        grid = name.startswith("data/") and "-grid/" in name  # all heads of one layer
        if grid or name.endswith(("interventions.json.gz", ".html")):
            factor = factors["layer_heads"]
        elif name.split("/", 1)[0] in ("results", "data"):
            factor = factors["heads"]
        else:
            factor = 1.0
        sizes[name] = path.stat().st_size * factor
    largest = max(sizes.items(), key=lambda item: item[1], default=("", 0.0))
    return {"total": sum(sizes.values()), "largest": largest}


def _build(ctx: Context, name: str, sentences: list[str], overrides: dict[str, Any]) -> Path:
    """Build a site of ``sentences`` (one per line) in a fresh process; its folder."""
    file = ctx.work / f"{name}.txt"
    file.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    out = ctx.work / f"site-{name}"
    settings = {"out": str(out), "sentences": str(file), **overrides}
    env = {"ATTNREPORT_CACHE": str(ctx.work / f"cache-{name}")}
    run_worker("build", {"config": None, "overrides": settings}, env=env)
    return out


def newcomer_site(ctx: Context) -> Path:
    """The newcomer's four sentences (the paragraph second), default model and settings."""
    from benchmarks.inputs import text_of_tokens

    paragraph = text_of_tokens(ctx.loaded().loaded.tokenizer, PARAGRAPH_TOKENS)
    sentences = [NEWCOMER_SHORT[0], paragraph, *NEWCOMER_SHORT[1:]]
    return _build(ctx, "newcomer", sentences, {"model": ctx.model})


def long_tokens(ctx: Context) -> int:
    return QUICK_LONG_TOKENS if ctx.quick else LONG_TOKENS


def long_site(ctx: Context) -> Path:
    """One input of ``long_tokens`` words of the prose on the tiny model, ``--no-images``."""
    from benchmarks.inputs import PROSE

    words = PROSE.split()
    model = save_tiny_long_model(ctx.work / "tiny-long-model", words)
    text = " ".join(words[i % len(words)] for i in range(long_tokens(ctx)))
    return _build(ctx, "long", [text], {"model": str(model), "images": False})


def _row(name: str, weight: dict[str, Any]) -> tuple:
    largest, size = weight["largest"]
    parts = [f"{weight[p] / MB:.2f} MB" for p in (*PARTS, "pages")]
    total = f"{weight['total'] / MB:.2f} MB"
    sent = f"{weight['sent'] / MB:.2f} MB"
    return (name, total, sent, *parts, weight["files"], f"`{largest}` ({size / MB:.2f} MB)")


HEADER = (
    "Site",
    "Total",
    "Sent (gzip)",
    "results/",
    "data/",
    "figures/",
    "pages, assets",
    "Files",
    "Largest file",
)


def _about(ctx: Context) -> str:
    newcomer = (
        "Quick mode builds no newcomer's project (a default-model build of its own). "
        if ctx.quick
        else f"The newcomer's project: four sentences, the second a {PARAGRAPH_TOKENS}-token "
        f"paragraph, {ctx.model_words()}, default settings (images on). "
    )
    return (
        "Each site measured on disk, every file at its apparent size (MB = 10^6 bytes). "
        f"{newcomer}The long input: {long_tokens(ctx)} tokens on a tiny random-weight Llama "
        f"({TINY_LONG['layers']} layers of {TINY_LONG['heads']} heads; the default model has "
        "30 of 9), `--no-images`. The example: section 4's build."
    )


def _targets(weights: dict[str, dict[str, Any]], long: str, judged: bool) -> list[Target]:
    """The budgets of the sites measured (``long``: the long input's row name)."""
    budgets = [
        ("newcomer's project", "Newcomer's project site", "total", NEWCOMER_BUDGET_MB),
        (
            "newcomer's project",
            "Newcomer's project, sent gzip-compressed",
            "sent",
            NEWCOMER_SENT_BUDGET_MB,
        ),
        (long, f"{long} site (tiny model)", "total", LONG_BUDGET_MB),
        (long, f"{long}, largest file (tiny model)", "largest", LONG_FILE_BUDGET_MB),
        ("example", "Example site", "total", EXAMPLE_BUDGET_MB),
    ]
    if "estimate" in weights:  # the long input on the default model, extrapolated
        budgets += [
            ("estimate", f"{long} site (default model, extrapolated)", "total", LONG_BUDGET_MB),
            ("estimate", f"{long}, largest file (default model, extrapolated)", "largest",
             LONG_FILE_BUDGET_MB),
        ]  # fmt: skip
    out = []
    for site, what, measure, limit in budgets:
        if site in weights:
            value = weights[site][measure]
            size = value[1] if measure == "largest" else value
            out.append(ratio_target(what, size / MB, limit, "MB", judged))
    return out


def weight_section(ctx: Context) -> Section:
    """8. Site weight of the newcomer's project, a 5,000-token input and the example."""
    section = Section(TITLES["weight"])
    long = f"{long_tokens(ctx):,}-token input"
    sites = {} if ctx.quick else {"newcomer's project": newcomer_site(ctx)}
    sites[long] = long_site(ctx)
    if "example" in ctx.sites:
        sites["example"] = ctx.sites["example"]
    weights = {name: site_weight(site) for name, site in sites.items()}
    section.add(_about(ctx), "")
    section.table(HEADER, [_row(name, w) for name, w in weights.items()])
    estimate = default_model_estimate(sites[long])
    largest, size = estimate["largest"]
    factors = growth_factors()
    section.add(
        f"The {long} on the default model, extrapolated file by file (no default-model "
        f"build: too long for a routine run): {estimate['total'] / MB:.2f} MB, the largest "
        f"file `{largest}` {size / MB:.2f} MB. Per-head parts (results/ and data/) grow "
        f"{factors['heads']:.1f}x (270 heads against {TINY_LONG['layers']} x "
        f"{TINY_LONG['heads']}), the interventions and the pages {factors['layer_heads']:.0f}x "
        "(one layer's heads), the rest not at all.",
        "",
    )
    weights["estimate"] = estimate
    for target in _targets(weights, long, not ctx.quick):
        section.judge(target)
    return section
