"""Whether the sentences were read inside the tokenizer's chat template, in words.

An instruction-tuned model is trained on text wrapped in its chat template (role markers,
often a system message); reading bare sentences shows its attention on text outside any
conversation. The pages say which reading the results hold (``settings.chat_template``)
whenever the tokenizer carries a template (``model.has_chat_template``, schema 9): the
model card's row, the index's limitation and each sentence page's line (``WORDS``).
"""

from __future__ import annotations

from attnreport.results import Manifest

# where -> (the words when the template was applied, when it was not though one exists)
WORDS = {
    "card": (
        "applied: each sentence is read as a user message in it",
        "the tokenizer has one; not applied: each sentence is read as plain text",
    ),
    "limitation": (
        "Each sentence was read as a user message in the tokenizer's chat template, so its "
        "tokens include the template's (role markers, and any system message the template "
        "adds), and every statistic counts them too.",
        "The tokenizer carries a chat template, the format an instruction-tuned model is "
        "trained to read, and the sentences were read without it, as plain text: the "
        "attention shown is the model's on text outside a conversation. The chat_template "
        "setting reads each sentence as a user message instead.",
    ),
    "sentence": (
        "This sentence was read as a user message in the tokenizer's chat template: its "
        "tokens below include the template's.",
        "This sentence was read as plain text, without the chat template this model's "
        "tokenizer carries (the index's limitations say what that means).",
    ),
}


def chat_words(manifest: Manifest, where: str) -> str | None:
    """What ``where`` (a key of ``WORDS``) says of the reading; None when the tokenizer has
    no template (or the results, older than schema 9, do not say)."""
    applied, plain = WORDS[where]
    if manifest.settings.chat_template:
        return applied
    return plain if manifest.model.has_chat_template else None
