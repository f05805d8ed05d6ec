"""Sandbox self-test: the imports a run needs work, the run is uid 65534 with a read-only /dev, and results come back
to the host."""

import os
import sys

import ezdxf  # noqa: F401
import ifcopenshell  # noqa: F401

import dxf_lib  # noqa: F401
import script_lib  # noqa: F401

from outputs import send

if os.getuid() != 65534:
    sys.exit(f"the sandbox runs as uid {os.getuid()}, not 65534")
try:
    open("/dev/probe", "w").close()
    sys.exit("/dev is writable inside the sandbox")
except OSError:
    pass

with open("probe", "w") as handle:
    handle.write("ok")
send(int(sys.argv[sys.argv.index("--outputs-fd") + 1]), ["probe"])
