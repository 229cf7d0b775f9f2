"""pystruct's inference functions, on skstruct's inference methods.

:func:`inference_dispatch` maximises a pairwise score by a method named as in
pystruct (``'max-product'``, ``'ad3'``, ``'lp'``, ``'qpbo'``, ``'ogm'``,
``'unary'``); :mod:`.inference_methods` lists the skstruct method each runs.
"""

from .common import compute_energy
from .inference_methods import (
    InferenceException,
    get_installed,
    inference_ad3,
    inference_ad3plus,
    inference_dispatch,
    inference_lp,
    inference_ogm,
    inference_qpbo,
    inference_unaries,
)
from .maxprod import inference_max_product

__all__ = ["InferenceException", "compute_energy", "get_installed", "inference_ad3",
           "inference_ad3plus", "inference_dispatch", "inference_lp", "inference_max_product",
           "inference_ogm", "inference_qpbo", "inference_unaries"]
