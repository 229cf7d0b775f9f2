"""One compiled pass over a score array: what its validation needs, read once.

Scores are checked on every oracle call, and on a long chain the checks used
to cost as much as a third of the decoding itself (a NaN pass, three passes
for ``+inf``, and two reductions for the magnitude).  The pass here reads the
IEEE-754 bit patterns as integers: the magnitude of a double orders like its
bits with the sign cleared, so the largest finite magnitude is an integer
maximum, and NaN, ``+inf`` and ``-inf`` are integer comparisons.  Integer
reductions vectorise without the fastmath flags that ``-inf`` scores rule out.
"""

import numpy as np

from ._jit import jit

_ABS = np.int64(0x7FFFFFFFFFFFFFFF)
_POSINF = np.int64(0x7FF0000000000000)
_NEGINF = np.int64(-0x10000000000000)  # bits of -inf as a signed integer


@jit
def scan_bits(bits):
    """``(n_bad, n_neginf, largest)`` of the doubles whose bits ``bits`` holds.

    ``n_bad`` counts NaN and ``+inf`` entries, ``n_neginf`` the ``-inf`` ones,
    and ``largest`` is the largest finite magnitude (0.0 when there is none).
    """
    n_bad = 0
    n_neg = 0
    largest = 0
    for i in range(bits.shape[0]):
        b = bits[i]
        u = b & _ABS
        finite = u < _POSINF
        # +inf has the bits of the infinity exponent exactly; NaNs have more
        n_bad += (b == _POSINF) | (u > _POSINF)
        n_neg += b == _NEGINF
        v = u if finite else 0
        largest = v if v > largest else largest
    out = np.empty(1, np.int64)
    out[0] = largest
    return n_bad, n_neg, out.view(np.float64)[0]
