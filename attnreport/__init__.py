"""attnreport: capture a causal LM's attention internals exactly and publish them as a static site."""

__version__ = "0.1.0"
