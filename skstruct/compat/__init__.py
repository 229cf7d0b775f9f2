"""Drop-in replacements for other structured-prediction libraries.

Each subpackage reproduces the public interface of one library over skstruct's own
estimators, so that code written for it runs by changing its import line.  They are
not imported by ``import skstruct``; import the one you need explicitly::

    from skstruct.compat import sklearn_crfsuite   # instead of: import sklearn_crfsuite
"""
