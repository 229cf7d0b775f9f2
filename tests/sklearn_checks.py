"""The scikit-learn estimator checks every skstruct estimator runs (those that do
not feed it tabular data, which structured estimators do not take)."""

import warnings

from sklearn.utils.estimator_checks import (
    check_do_not_raise_errors_in_init_or_set_params,
    check_estimator_repr,
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
)

PARAMETER_CHECKS = (check_get_params_invariance, check_set_params,
                    check_parameters_default_constructible, check_no_attributes_set_in_init,
                    check_estimator_repr, check_do_not_raise_errors_in_init_or_set_params)


def run_check(check, *estimators):
    """Run ``check`` on each estimator with warnings turned into errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for est in estimators:
            check(type(est).__name__, est)
