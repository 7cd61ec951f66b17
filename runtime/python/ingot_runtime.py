"""The ctypes binding of libingot now lives in the `ingot` package
(generator/ingot/runtime.py; installed with `pip install .`, as ingot.runtime).
This module keeps `from ingot_runtime import Runtime` working for scripts that
put runtime/python on sys.path: it is the source tree's ingot.runtime."""

import os
import sys

_GENERATOR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "generator"))
if _GENERATOR not in sys.path:
    sys.path.insert(0, _GENERATOR)

from ingot.runtime import *  # noqa: E402,F401,F403
from ingot.runtime import _text, check_device, describe  # noqa: E402,F401
