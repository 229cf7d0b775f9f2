"""Graph tests."""

from ..inference.maxprod import is_chain, is_forest

__all__ = ["is_chain", "is_forest"]
