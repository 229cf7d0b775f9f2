"""Helpers on lists of sequences."""

from itertools import chain

__all__ = ["chain", "flatten"]


def flatten(sequences):
    """The items of a list of sequences, concatenated into one list.

    Parameters
    ----------
    sequences : iterable of iterables
        For example the label sequences ``y`` of several sentences.

    Returns
    -------
    list
        ``[item for seq in sequences for item in seq]``.

    Examples
    --------
    >>> flatten([["B-NP", "I-NP"], ["O"]])
    ['B-NP', 'I-NP', 'O']
    """
    return list(chain.from_iterable(sequences))
