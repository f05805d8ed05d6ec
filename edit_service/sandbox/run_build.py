"""Sandbox entry point: runs a build script's build(params, out_path) and sends back the IFC and its script map.

    python run_build.py SCRIPT PARAMS_JSON --outputs-fd N

Runs inside bubblewrap with the working directory a private tmpfs; out.ifc and map.json leave through fd N.
"""

import importlib.util
import json
import sys

import script_lib
from outputs import send

OUT_IFC = "out.ifc"
OUT_MAP = "map.json"


def main(script_path: str, params_path: str, outputs_fd: int) -> int:
    with open(params_path, encoding="utf-8") as handle:
        params = json.load(handle)
    script_lib.set_script_path(script_path)
    spec = importlib.util.spec_from_file_location("build_script", script_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_script"] = module
    spec.loader.exec_module(module)
    build = getattr(module, "build", None)
    if not callable(build):
        print("the build script defines no build(params, out_path) function", file=sys.stderr)
        return 2
    build(params, OUT_IFC)
    script_lib.dump_map(OUT_MAP)
    send(outputs_fd, [OUT_IFC, OUT_MAP])
    return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    fd = int(arguments[arguments.index("--outputs-fd") + 1])
    sys.exit(main(arguments[0], arguments[1], fd))
