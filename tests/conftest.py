"""One Hypothesis profile for the whole suite: no check of how fast an example runs.

Speed is the benchmarks' business (``nox -s bench``), never a test's: a per-example
deadline or a data-generation health check fails on a loaded CI machine while the
code is right.  Every other health check stays on.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("flakecore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("flakecore")
