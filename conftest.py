"""What every test of the suite (tests, doctests, examples) starts from.

Judge responses are not cached between tests: many tests script a different answer for the
same request on one offline judge server, and none should write into the user's cache
directory. Tests of the judge cache turn it on themselves (``configure_judge(cache=...)``,
``--judge-cache``, or ``EVALTRACE_JUDGE_CACHE`` in a subprocess's environment).
"""

from __future__ import annotations

import os

os.environ["EVALTRACE_JUDGE_CACHE"] = "off"
