"""Sandbox self-test: the imports a run needs work, and results come back to the host."""

import sys

import ezdxf  # noqa: F401
import ifcopenshell  # noqa: F401

import dxf_lib  # noqa: F401
import script_lib  # noqa: F401

from outputs import send

with open("probe", "w") as handle:
    handle.write("ok")
send(int(sys.argv[sys.argv.index("--outputs-fd") + 1]), ["probe"])
