"""Sandbox entry point: runs a build script's build(params, out_path) and sends back its product and script map.

    python run_build.py SCRIPT PARAMS_JSON OUTPUT_NAME --outputs-fd N

OUTPUT_NAME is out.ifc (script_lib) or out.dxf (dxf_lib). Runs inside bubblewrap with the working directory a private
tmpfs; the product and map.json leave through fd N.
"""

import importlib.util
import json
import sys

import callsites
from outputs import end_with_the_reader, send

OUT_MAP = "map.json"


def main(script_path: str, params_path: str, output_name: str, outputs_fd: int) -> int:
    with open(params_path, encoding="utf-8") as handle:
        params = json.load(handle)
    if output_name.endswith(".dxf"):
        import ezdxf

        ezdxf.options.write_fixed_meta_data_for_testing = True  # fixed header stamps and GUIDs: same script, same bytes
    callsites.set_script_path(script_path)
    spec = importlib.util.spec_from_file_location("build_script", script_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_script"] = module
    spec.loader.exec_module(module)
    build = getattr(module, "build", None)
    if not callable(build):
        print("the build script defines no build(params, out_path) function", file=sys.stderr)
        return 2
    build(params, output_name)
    callsites.dump_map(OUT_MAP)
    send(outputs_fd, [output_name, OUT_MAP])
    return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    fd = int(arguments[arguments.index("--outputs-fd") + 1])
    end_with_the_reader(fd)
    sys.exit(main(arguments[0], arguments[1], arguments[2], fd))
