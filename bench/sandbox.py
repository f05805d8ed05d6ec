"""Sandbox overhead: the same build script run plainly (python run_build.py) and inside bubblewrap with all limits,
in the same run, alternating, median of N.

    .venv/bin/python bench/sandbox.py [--repeat 5] [--storeys 20 --bays 6]
    .venv/bin/python bench/sandbox.py --smoke     # a 2-storey tower, once: seconds

Prints JSON with both medians and the ratio sandbox/plain (target: overhead under 15%, ratio < 1.15).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edit_service.engine.sandbox import SANDBOX_CODE_DIR, Sandbox, SandboxLimits  # noqa: E402
from edit_service.engine.scripts import read_params  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--storeys", type=int, default=20)
    parser.add_argument("--bays", type=int, default=6)
    parser.add_argument("--smoke", action="store_true", help="a 2-storey tower, once")
    args = parser.parse_args()
    if args.smoke:
        args.repeat, args.storeys, args.bays = 1, 2, 2
    script = (ROOT / "edit_service" / "examples" / "tower.py").read_text()
    params = {**read_params(script), "storeys": args.storeys, "bays_x": args.bays, "bays_y": args.bays}
    sandbox = Sandbox(SandboxLimits())
    sandbox.ensure_available()  # the one-time probe is not part of a run
    plain, sandboxed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(args.repeat):
            folder = Path(tmp) / f"plain{index}"
            folder.mkdir()
            (folder / "script.py").write_text(script)
            (folder / "params.json").write_text(json.dumps(params))
            started = time.perf_counter()
            with open(folder / "outputs.bin", "wb") as outputs:  # the results stream, as the sandbox sends it
                subprocess.run(
                    [sys.executable, str(SANDBOX_CODE_DIR / "run_build.py"), "script.py", "params.json", "out.ifc", "--outputs-fd", str(outputs.fileno())],
                    cwd=folder, env={"PYTHONPATH": str(SANDBOX_CODE_DIR), "PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"}, check=True,
                    pass_fds=(outputs.fileno(),),
                )
            plain.append(time.perf_counter() - started)
            plain_size = (folder / "out.ifc").stat().st_size

            folder = Path(tmp) / f"sandbox{index}"
            folder.mkdir()
            started = time.perf_counter()
            ifc, recorded, _ = sandbox.build(script, params, folder)
            sandboxed.append(time.perf_counter() - started)
            assert ifc.stat().st_size == plain_size
            elements = len(recorded)
            shutil.rmtree(folder)
    plain_median, sandbox_median = statistics.median(plain), statistics.median(sandboxed)
    print(json.dumps({
        "script": "edit_service/examples/tower.py",
        "params": {"storeys": args.storeys, "bays_x": args.bays, "bays_y": args.bays},
        "elements": elements,
        "repeat": args.repeat,
        "plainSeconds": round(plain_median, 3),
        "sandboxSeconds": round(sandbox_median, 3),
        "ratio": round(sandbox_median / plain_median, 3),
        "overheadPercent": round((sandbox_median / plain_median - 1) * 100, 1),
    }, indent=2))


if __name__ == "__main__":
    main()
