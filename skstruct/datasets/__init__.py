"""Real benchmark data sets bundled with skstruct, in skstruct's sample format, and
synthetic tasks (``make_*``).

Data sets that cannot be bundled are downloaded once by ``fetch_*`` functions and
cached in :func:`get_data_home`.
"""

from ._alignment import make_letter_alignment
from ._denoising import grid_edges, make_binary_denoising
from ._fetch import clear_data_home, fetch_conll2000, get_data_home
from ._grids import (
    make_bars,
    make_blocks,
    make_blocks_multinomial,
    make_checker,
    make_checker_multinomial,
    make_crosses,
    make_easy,
    make_simple_2x2,
    make_square_with_hole,
)
from ._load import conll_features, load_conll, load_letters, load_scene, load_snakes

__all__ = ["clear_data_home", "conll_features", "fetch_conll2000", "get_data_home", "grid_edges",
           "load_conll", "load_letters", "load_scene", "load_snakes", "make_bars",
           "make_binary_denoising", "make_blocks", "make_blocks_multinomial", "make_checker",
           "make_checker_multinomial", "make_crosses", "make_easy", "make_letter_alignment",
           "make_simple_2x2", "make_square_with_hole"]
