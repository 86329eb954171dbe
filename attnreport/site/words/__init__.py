"""The wording stage: sentences computed from the typed results (prose, key findings, tested claims, alt text) and the rules they are written by."""
