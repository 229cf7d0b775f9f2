"""Real benchmark data sets bundled with skstruct, in skstruct's sample format."""

from ._load import load_letters

__all__ = ["load_letters"]
