import os
import sys

try:
    import jinja2  # noqa: F401
    import yaml  # noqa: F401
except ImportError:
    # A python3 earlier on PATH (pyenv, a venv) may lack Debian's python3-jinja2 and
    # python3-yaml: run under the system interpreter, which the build installs them for.
    system = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK):
        os.execv(system, [system, "-m", "ingot"] + sys.argv[1:])
    raise

from ingot.cli import main  # noqa: E402

sys.exit(main())
