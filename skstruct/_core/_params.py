"""Declarative parameter tables, checked by one helper.

Each estimator declares ``_parameter_constraints``: a dict from parameter
name to a list of accepted forms; :func:`validate_params` checks every
parameter at the start of ``fit`` and raises an :class:`InvalidParameterError`
(a ``ValueError`` and a ``TypeError``, as scikit-learn's) that names the
parameter, what it accepts and what it got.  (scikit-learn's own
validator is private API, so skstruct has this small one in its spirit.)

Accepted forms:

* ``None``: the value ``None``;
* :class:`Interval`: a real or integer number in a range (never a bool,
  never NaN or infinite);
* :class:`Options`: one of a set of values (strings, usually);
* ``"boolean"``: ``True`` or ``False`` (numpy bools too);
* ``"random_state"``: ``None``, an int or a ``numpy.random.RandomState``;
* ``callable``: any callable;
* a class: an instance of it.

Constraints between parameters (``surrogate='lp'`` needs
``solver='subgradient'``) stay in the estimator's own ``_check_params``, which
raises :class:`InvalidParameterError` too.
"""

import numbers

import numpy as np


class InvalidParameterError(ValueError, TypeError):
    """A parameter of an estimator or a model has a value it does not accept.

    Raised by ``fit`` (never by ``__init__`` or ``set_params``), with a message
    naming the parameter, what it accepts and what it got.  Both a
    ``ValueError`` and a ``TypeError``, like scikit-learn's own parameter
    errors, so that code catching either of them catches it.
    """


# public as skstruct.exceptions.InvalidParameterError
InvalidParameterError.__module__ = "skstruct.exceptions"


class Interval:
    """Numbers of ``kind`` (``numbers.Real`` or ``numbers.Integral``) between
    ``low`` and ``high`` (``None``: unbounded); ``closed`` is ``"left"``,
    ``"right"``, ``"both"`` or ``"neither"``."""

    def __init__(self, kind, low=None, high=None, *, closed="both"):
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def accepts(self, v):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, self.kind):
            return False
        if not np.isfinite(v):
            return False
        if self.low is not None:
            if v < self.low or (v == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if v > self.high or (v == self.high and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self):
        what = "an integer" if self.kind is numbers.Integral else "a number"
        parts = []
        if self.low is not None:
            parts.append(f"{'>=' if self.closed in ('left', 'both') else '>'} {self.low}")
        if self.high is not None:
            parts.append(f"{'<=' if self.closed in ('right', 'both') else '<'} {self.high}")
        return what + (" " + " and ".join(parts) if parts else "")


class Options:
    """One of the given values; ``hint(value)``, if given, adds to the refusal of a value
    that is not one of them (e.g. what to use instead)."""

    def __init__(self, *values, hint=None):
        self.values = values
        self.hint = hint

    def accepts(self, v):
        return isinstance(v, (str, type(None))) and v in self.values

    def __str__(self):
        return "one of " + ", ".join(repr(v) for v in self.values)


def _accepts(c, v):
    if c is None:
        return v is None
    if c == "boolean":
        return isinstance(v, (bool, np.bool_))
    if c == "random_state":
        return (v is None or isinstance(v, np.random.RandomState)
                or (isinstance(v, numbers.Integral) and not isinstance(v, bool)))
    if c is callable:
        return callable(v)
    if isinstance(c, type):
        return isinstance(v, c)
    return c.accepts(v)


def _describe(c):
    if c is None:
        return "None"
    if c == "boolean":
        return "a bool"
    if c == "random_state":
        return "None, an int or a RandomState"
    if c is callable:
        return "a callable"
    if isinstance(c, type):
        return f"an instance of {c.__name__}"
    return str(c)


def validate_params(est):
    """Check every parameter of ``est`` against ``est._parameter_constraints``.

    Raises
    ------
    InvalidParameterError
        ``"{name} must be {what it accepts}, got {value!r}"`` for the first
        parameter that fits none of its forms.
    """
    for name, constraints in type(est)._parameter_constraints.items():
        v = getattr(est, name)
        if any(_accepts(c, v) for c in constraints):
            continue
        what = " or ".join(_describe(c) for c in constraints)
        hints = [h for c in constraints if getattr(c, "hint", None) for h in (c.hint(v),) if h]
        raise InvalidParameterError(f"{name} must be {what}, got {v!r}"
                                    + "".join(f": {h}" for h in hints))


def _keyword_names(cls):
    """``(positional, keyword)``: the names of ``cls.__init__``'s parameters that may be
    given by position, and all its named parameters."""
    import inspect

    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None, [p.name for p in params]
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return positional, [p.name for p in params if p.kind is not p.VAR_KEYWORD]


def _likely_parameter(value, names):
    """The parameter a value given by position most likely meant, or None."""
    if hasattr(value, "joint_feature") and hasattr(value, "initialize"):
        wanted = ("model", "base")
    elif hasattr(value, "fit") and hasattr(value, "get_params"):
        wanted = ("estimator", "model")
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        wanted = ("C", "max_iter")
    elif isinstance(value, str):
        wanted = ("inference_method", "solver", "model")
    else:
        wanted = ()
    return next((name for name in wanted if name in names), None)


def _shown(value):
    if isinstance(value, (numbers.Number, str)) or value is None:
        return repr(value)
    return f"{type(value).__name__}(...)"


class KeywordOnly:
    """Refuse positional arguments an ``__init__`` does not take, naming the fix.

    Python's own error ("takes 1 positional argument but 2 were given") does not say
    that the parameters are keyword-only, nor which one was meant; this one does, e.g.
    ``StructuredSVM takes keyword arguments only: use StructuredSVM(model=ChainModel(...))``.
    Construction with keywords, ``clone`` and unpickling (which call ``__new__`` without
    arguments) never reach the check.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # inspect.signature(cls) reads the inherited __new__(*args, **kwargs) for a class
        # without an __init__ of its own (scikit-learn's estimator checks read it): give
        # every class the signature of the __init__ it runs
        import inspect

        init = cls.__init__
        if init is object.__init__:
            cls.__signature__ = inspect.Signature()
        else:
            sig = inspect.signature(init)
            cls.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])

    def __new__(cls, *args, **kwargs):
        if args:
            positional, names = _keyword_names(cls)
            if positional is not None and len(args) > len(positional):
                name = cls.__name__
                extra = args[len(positional):]
                by_keyword = [n for n in names if n not in positional]
                meant = _likely_parameter(extra[0], by_keyword)
                if meant is None and len(by_keyword) == 1:
                    meant = by_keyword[0]
                fix = (f"{name}({meant}={_shown(extra[0])})" if meant is not None
                       else f"{name}(<parameter>=...)")
                given = f"{len(args)} positional argument{'s' if len(args) > 1 else ''}"
                takes = ("keyword arguments only" if not positional else
                         f"at most {len(positional)} positional argument"
                         f"{'s' if len(positional) > 1 else ''} "
                         f"({', '.join(positional)}), the others by keyword")
                raise TypeError(f"{name} takes {takes}: use {fix} (got {given}; its "
                                f"parameters: {', '.join(names)})")
        return super().__new__(cls)
