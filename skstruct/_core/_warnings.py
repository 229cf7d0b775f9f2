"""skstruct's warnings."""


class ConvergenceWarning(UserWarning):
    """An iterative method stopped at its iteration budget before meeting its tolerance."""
