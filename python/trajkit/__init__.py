"""trajkit from Python: the bundled `trajkit` executable, and a Ray driver (`trajkit.ray`).

The wheel installs the `trajkit` command into the environment's scripts directory (beside
`python` and `pip`); `binary()` finds it, so Python code can run it with `subprocess`::

    import subprocess, trajkit
    subprocess.run([trajkit.binary(), "run", "pipeline.toml"], check=True)
"""

import os
import shutil
import sys
import sysconfig
from importlib import metadata

__all__ = ["binary", "__version__"]

try:
    __version__ = metadata.version("trajkit")
except metadata.PackageNotFoundError:  # imported from a checkout, not installed
    __version__ = "unknown"

_EXE = "trajkit.exe" if os.name == "nt" else "trajkit"


def _candidates():
    """Where an installed `trajkit` executable may be, most specific first."""
    # The scripts directory of the scheme this interpreter installs into (a virtual
    # environment's bin/, or the system's).
    yield sysconfig.get_path("scripts")
    # `pip install --user`: the user scheme's scripts directory.
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        yield sysconfig.get_path("scripts", scheme=user_scheme)
    # Beside the interpreter (some layouts put scripts there).
    yield os.path.dirname(sys.executable)


def binary() -> str:
    """The path of the `trajkit` executable installed with this package.

    Looks in the scripts directory of the current install scheme, then the user scheme's, then
    beside the interpreter, then on PATH. Raises FileNotFoundError when there is none (the
    package was imported from a source checkout without being installed, for instance).
    """
    seen = []
    for folder in _candidates():
        if not folder or folder in seen:
            continue
        seen.append(folder)
        path = os.path.join(folder, _EXE)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(_EXE)
    if found:
        return found
    raise FileNotFoundError(
        f"the trajkit executable was not found (looked in {', '.join(seen)} and on PATH); "
        "install the package with `pip install trajkit` (or `pip install .` in a checkout), "
        "or build it with `cargo install --path .`"
    )
