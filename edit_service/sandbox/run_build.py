"""Sandbox entry point: runs a build script's build(params, out_path) and writes its script map.

    python run_build.py SCRIPT PARAMS_JSON OUT_IFC OUT_MAP_JSON

Runs inside bubblewrap; the run folder is the only writable place.
"""

import importlib.util
import json
import sys

import script_lib


def main(script_path: str, params_path: str, out_path: str, map_path: str) -> int:
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
    build(params, out_path)
    script_lib.dump_map(map_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
