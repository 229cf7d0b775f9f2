"""Real benchmark data sets bundled with skstruct, in skstruct's sample format."""

from ._denoising import grid_edges, make_binary_denoising
from ._load import conll_features, load_conll, load_letters, load_scene, load_snakes

__all__ = ["conll_features", "grid_edges", "load_conll", "load_letters", "load_scene",
           "load_snakes", "make_binary_denoising"]
