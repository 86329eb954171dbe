"""The figure builders: typed results -> ``Figure`` (one module per figure family)."""
