"""skstruct's warnings."""


class ConvergenceWarning(UserWarning):
    """An iterative method stopped at its iteration budget before meeting its tolerance."""


class InfeasibilityWarning(UserWarning):
    """Inference returned a labelling (or marginals) for a sample that has no
    labelling of finite score, or could not find one."""
