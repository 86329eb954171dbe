"""Whether the sentences were read inside the tokenizer's chat template, in words.

An instruction-tuned model is trained on text wrapped in its chat template (role markers,
often a system message); reading bare sentences shows its attention on text outside any
conversation. The pages say which reading the results hold (``settings.chat_template``)
whenever the tokenizer carries a template (``model.has_chat_template``, schema 9).
"""

from __future__ import annotations

from attnreport.results import Manifest


def chat_card(manifest: Manifest) -> str | None:
    """The model card's "Chat template" row (None: the tokenizer has none, or older results)."""
    if manifest.settings.chat_template:
        return "applied: each sentence is read as a user message in it"
    if manifest.model.has_chat_template:
        return "the tokenizer has one; not applied: each sentence is read as plain text"
    return None


def chat_limitation(manifest: Manifest) -> str | None:
    """The index's limitation about the reading (None when there is nothing to say)."""
    if manifest.settings.chat_template:
        return (
            "Each sentence was read as a user message in the tokenizer's chat template, so "
            "its tokens include the template's (role markers, and any system message the "
            "template adds), and every statistic counts them too."
        )
    if manifest.model.has_chat_template:
        return (
            "The tokenizer carries a chat template, the format an instruction-tuned model is "
            "trained to read, and the sentences were read without it, as plain text: the "
            "attention shown is the model's on text outside a conversation. The chat_template "
            "setting reads each sentence as a user message instead."
        )
    return None


def chat_sentence_note(manifest: Manifest) -> str | None:
    """The sentence page's line about how the sentence was read (None: nothing to say)."""
    if manifest.settings.chat_template:
        return (
            "This sentence was read as a user message in the tokenizer's chat template: its "
            "tokens below include the template's."
        )
    if manifest.model.has_chat_template:
        return (
            "This sentence was read as plain text, without the chat template this model's "
            "tokenizer carries (the index's limitations say what that means)."
        )
    return None
