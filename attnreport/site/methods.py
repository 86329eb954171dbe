"""The Methods section: each measure's definition as a formula, and which figures use it.

Formulas are plain text (Unicode), so a page needs no maths renderer. ``METHODS`` is the
one list of measures; ``FIGURE_METHOD`` maps a figure key to the measure its caption
relies on, so every figure can link to its definition (``method_href``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from attnreport.analyses import sinks
from attnreport.analyses.kl import KL_CONVENTION, KL_NAME
from attnreport.analyses.role_rules import MIN_REPEATS, ROLE_THRESHOLD, worst_error
from attnreport.site.words.effects import FLOAT32_NATS, NO_POST_NORM, PostNorm
from attnreport.site.words.verdicts import min_sentences


@dataclass(frozen=True)
class Method:
    """One measure: its anchor on the index (``method-...``), name, formula and words."""

    key: str
    name: str
    formula: str
    text: str

    @property
    def anchor(self) -> str:
        return f"method-{self.key}"


METHODS = (
    Method("scores", "Scores and weights", "s_ij = q_i · k_j / √d (+ position bias);  "
           "p_ij = softmax_j(s_ij), j ≤ i",
           "q and k exactly as the model scores them (after its QK-norm and rotary "
           "rotation); i is the query token, j the key; d the head size."),
    Method("breakdown", "Score breakdown", "s_ij = position + bias + content + query-only",
           "position: the score minus the score of the same q, k without the rotation (ALiBi: "
           "the bias); bias: terms with the projection biases that depend on the key; content: "
           "(W_q a_i)·(W_k a_j)/√d; query-only: terms that depend on i alone, which softmax "
           "ignores."),
    Method("focus", "Self and first-token focus",
           "self(l,h) = mean_{i≥1} [argmax_j p_ij = i];  first(l,h) = mean_{i≥1} [argmax_j p_ij = 0]",
           "The share of queries 1..n-1 whose top key is the query itself, or the first token "
           "(ties to the earlier key). Pooled over the set, each sentence weighs by its queries."),
    Method("concentration", "Concentration", "conc(l,h) = mean_{i≥1} (p_i,top1 − p_i,top2)",
           "The top key's lead over the runner-up, a difference of probabilities in [0, 1]."),
    Method("sink-rate", "Sink rate (Gu et al.)",
           "score(l,h) = mean_{i≥1} p_i0;  sink when score > ε = 0.3;  "
           "Sink_1^ε = 100 × (sink heads / heads)",
           "The literature's probability-based measure, beside the argmax-based first focus."),
    Method("impact", "Update size and direction",
           "size = ‖u_i^{l,h}‖ / ‖x_i‖;  direction = cos(u_i^{l,h}, x_i)",
           "u is what head h adds to the residual stream at token i (its slice of the output "
           "projection applied to its weighted values); x the hidden state entering the block. "
           "A cosine is called a direction only past 3/√d_model (two random directions in "
           "d_model dimensions have cosines of about ±1/√d_model)."),
    Method("block", "Impact by position", "impact_i^l = ‖Σ_h u_i^{l,h} + b_o‖ / ‖x_i‖",
           "The whole attention block's output at token i, relative to the hidden state."),
    Method("interventions", "Interventions",
           "Q, K or V × ε;  Q, K or V ← mean over positions;  "
           "KL_i = Σ_t p_base(t) ln(p_base(t) / p_mod(t))",
           "A real forward pass with one layer's Q, K or V changed in every head; weights are "
           "observed in the same, the next and the last layer, and KL compares the next-token "
           "distributions at each position, in nats. Scaling Q or K by ε is one intervention: "
           f"s = ε q·k either way. Every KL printed for an intervention is its {KL_NAME}: "
           f"{KL_CONVENTION}."),
    Method("roles", "Head roles",
           "prev(l,h) = mean_{i≥2} p_i,i−1;  dup = Σ_i Σ_{j<i, t_j=t_i} p_ij / Σ_i 1[t_i seen before];  "
           "induction = mean over probes and i in the second copy of p_i,i−49;  "
           "entropy = mean_{i≥1} −Σ_j p_ij ln p_ij (nats; normalised: ÷ ln(i+1));  "
           "distance = mean_i Σ_j p_ij (i − j);  "
           "value share = mean_i ‖p_i0 f(x_0)‖ / Σ_j ‖p_ij f(x_j)‖, f(x_j) = W_O,h v_j",
           "The previous-token score starts at the third token: the second token's previous "
           "token is the first, where sink heads attend, so counting it would make every sink "
           "a previous-token head (a pure sink scores 0). Previous-token, duplicate-token, "
           "entropy, distance and value share are pooled over every counted query of the set; "
           "induction and a second previous-token score are read on 10 probes of 50 random "
           "token ids repeated twice (BOS first when the model adds one; their ids are in the "
           "results), and the induction scatter plots both probe scores. The value share "
           "(Kobayashi et al., 2020) says how much of what a head writes comes from the first "
           "token, not just how much weight it gets. The atlas colours a head by the largest "
           f"of its previous-token, duplicate-token and induction scores when that reaches "
           f"{ROLE_THRESHOLD:g}, else as a sink when its mean first-token weight is above "
           f"{sinks.EPS:g} (Gu et al.'s sink). The "
           "duplicate-token score reads only the queries whose token occurred earlier: it "
           f"names a role only where it rests on at least {MIN_REPEATS} of them (a mean of "
           f"values in [0, 1] over n queries has a standard error of at most 0.5 / √n, "
           f"{worst_error(MIN_REPEATS):.2f} at n = {MIN_REPEATS}), and every duplicate-token "
           "score is shown with its n."),
    Method("value-norms", "Value norms", "ratio(l, kv) = ‖v_0‖ / mean_{j≥1} ‖v_j‖",
           "v after its projection (before attention), per layer and key-value head: below 1 "
           "the first token carries shorter values than the other tokens (Gu et al., ICLR "
           "2025)."),
    Method("massive", "Massive activations",
           "ratio(l) = max_{i,c} |x_i,c| / median_{i,c} |x_i,c|",
           "x is the residual stream entering layer l; the largest activation's token i and "
           "dimension c are kept (Sun et al., 2024, call activations thousands of times the "
           "median massive)."),
    Method("spread", "Spread and verdicts",
           "range = [min_s, max_s];  95% interval of a median = [x_(k), x_(n+1−k)], k the "
           "largest with 2·P(Bin(n, ½) < k) ≤ 5%",
           "A number over the set is the median of its per-sentence values with that "
           f"distribution-free (sign-test) interval, which needs {min_sentences()} sentences "
           "(with fewer, the range). A claim is a declared test: its scope, its per-sentence effect and no effect are stated "
           "with it, and its verdict follows the rule stated in Claims tested: supported or "
           "contradicted only when the interval of the median effect excludes no effect. A "
           f"KL divergence below {FLOAT32_NATS:g} nats is float32 round-off and reads as 0."),
)  # fmt: skip

# What a post-attention norm changes in two definitions, when the sizes are taken after it
AFTER_NORM = {
    "impact": " This model normalises the block's output z = Σ_h u_h + b_o before adding it "
              "(a post-attention norm, y = g ⊙ z / rms(z)), so u here is the head's exact "
              "share of y, g ⊙ u / rms(z): the heads' shares and the scaled bias sum to y.",
    "block": " With this model's post-attention norm, the output is the norm's, ‖y_i‖.",
}  # fmt: skip


# What results written before schema 9 measured differently
OLDER_ROLES = (
    " These results (schema 8 or older) took the previous-token score over i ≥ 1, the second "
    "token included: a sink head scores up to 1/(n − 1) there on a sentence of n tokens."
)


def measures(post_norm: PostNorm = NO_POST_NORM, older_roles: bool = False) -> tuple[Method, ...]:
    """``METHODS`` as a report shows them: for a model whose update sizes are each head's
    share after its post-attention norm, the two measures they change say so; with
    ``older_roles`` (results before schema 9) the head roles say their previous-token score
    counts query 1."""
    extra = dict(AFTER_NORM) if post_norm.sizes_after else {}
    if older_roles:
        extra["roles"] = OLDER_ROLES
    return tuple(replace(m, text=m.text + extra[m.key]) if m.key in extra else m for m in METHODS)


FIGURE_METHOD = {
    "attention-map": "scores",
    "attention-breakdown": "breakdown",
    "bias-vs-position": "breakdown",
    "self-focus": "focus",
    "first-focus": "focus",
    "concentration": "concentration",
    "update-magnitude": "impact",
    "update-orientation": "impact",
    "orientation-vs-magnitude": "impact",
    "impact-by-position": "block",
    "scaling-grid": "interventions",
    "mean-grid": "interventions",
    "mean-grid-before-rotation": "interventions",
    "set-self-focus": "focus",
    "set-first-focus": "focus",
    "set-concentration": "concentration",
    "set-sink-rate": "sink-rate",
    "set-head-impact": "impact",
    "head-atlas": "roles",
    "induction-vs-previous": "roles",
    "split-updates": "impact",
    "first-token-bos": "sink-rate",
    "value-norms": "value-norms",
    "massive-activations": "massive",
}


def method_href(figure_key: str, on_index: bool) -> str | None:
    """The link from a figure to its measure's definition (None for an unknown figure)."""
    key = FIGURE_METHOD.get(figure_key)
    if key is None:
        return None
    return ("" if on_index else "index.html") + f"#method-{key}"
