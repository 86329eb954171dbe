"""The Methods section: each measure's definition as a formula, and which figures use it.

Formulas are plain text (Unicode), so a page needs no maths renderer. ``METHODS`` is the
one list of measures; ``FIGURE_METHOD`` maps a figure key to the measure its caption
relies on, so every figure can link to its definition (``method_href``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from attnreport.site.words.effects import NO_POST_NORM, PostNorm
from attnreport.site.words.fit import BOOTSTRAP_FROM


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
           "s = ε q·k either way."),
    Method("roles", "Head roles",
           "prev(l,h) = mean_{i≥1} p_i,i−1;  dup = Σ_i Σ_{j<i, t_j=t_i} p_ij / Σ_i 1[t_i seen before];  "
           "induction = mean over probes and i in the second copy of p_i,i−49;  "
           "entropy = mean_{i≥1} −Σ_j p_ij ln p_ij (nats; normalised: ÷ ln(i+1));  "
           "distance = mean_i Σ_j p_ij (i − j);  "
           "value share = mean_i ‖p_i0 f(x_0)‖ / Σ_j ‖p_ij f(x_j)‖, f(x_j) = W_O,h v_j",
           "Previous-token, duplicate-token, entropy, distance and value share are pooled over "
           "every counted query of the set; induction and a second previous-token score are "
           "read on 10 probes of 50 random token ids repeated twice (BOS first when the model "
           "adds one; their ids are in the results). The value share (Kobayashi et al., 2020) "
           "says how much of what a head writes comes from the first token, not just how much "
           "weight it gets. The atlas colours a head by the largest of its previous-token, "
           "duplicate-token and induction scores when that reaches 0.3, else as a sink when "
           "its mean first-token weight does."),
    Method("spread", "Spread and verdicts",
           "range = [min_s, max_s];  95% interval = 2.5th-97.5th percentile of 2,000 "
           f"bootstrap means (with {BOOTSTRAP_FROM} or more sentences)",
           "Numbers over the set give their spread across sentences; a claim's verdict follows "
           "the rule stated in Claims tested."),
)  # fmt: skip

# What a post-attention norm changes in two definitions, when the sizes are taken after it
AFTER_NORM = {
    "impact": " This model normalises the block's output z = Σ_h u_h + b_o before adding it "
              "(a post-attention norm, y = g ⊙ z / rms(z)), so u here is the head's exact "
              "share of y, g ⊙ u / rms(z): the heads' shares and the scaled bias sum to y.",
    "block": " With this model's post-attention norm, the output is the norm's, ‖y_i‖.",
}  # fmt: skip


def measures(post_norm: PostNorm = NO_POST_NORM) -> tuple[Method, ...]:
    """``METHODS`` as a report shows them: for a model whose update sizes are each head's
    share after its post-attention norm, the two measures they change say so."""
    if not post_norm.sizes_after:
        return METHODS
    return tuple(
        replace(m, text=m.text + AFTER_NORM[m.key]) if m.key in AFTER_NORM else m for m in METHODS
    )


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
}


def method_href(figure_key: str, on_index: bool) -> str | None:
    """The link from a figure to its measure's definition (None for an unknown figure)."""
    key = FIGURE_METHOD.get(figure_key)
    if key is None:
        return None
    return ("" if on_index else "index.html") + f"#method-{key}"
