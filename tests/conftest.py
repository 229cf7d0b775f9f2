"""Test configuration: deterministic hypothesis runs on CI, random ones elsewhere."""

import os

from hypothesis import settings

# CI must not turn red on a case no one has seen before: there the examples are
# derived from the test itself.  Locally every run explores new cases.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
