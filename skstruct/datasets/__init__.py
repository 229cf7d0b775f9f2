"""Real benchmark data sets bundled with skstruct, in skstruct's sample format."""

from ._load import conll_features, load_conll, load_letters, load_scene, load_snakes

__all__ = ["conll_features", "load_conll", "load_letters", "load_scene", "load_snakes"]
