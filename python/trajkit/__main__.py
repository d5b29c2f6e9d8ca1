"""`python -m trajkit ARGS...` runs the bundled `trajkit ARGS...`."""

import os
import subprocess
import sys

from trajkit import binary


def main() -> int:
    """Runs the executable with this process's arguments; returns its exit code."""
    exe = binary()
    if os.name != "nt":
        os.execv(exe, [exe, *sys.argv[1:]])
    return subprocess.call([exe, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
