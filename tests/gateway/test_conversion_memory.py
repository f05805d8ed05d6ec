"""What keeps a conversion's memory down without changing what it produces: the zygote holds no optional part of
ifcopenshell a conversion never uses, node runs small inputs without its optimizing compiler, and the converter
bundle leaves out the texture code geometry records never need."""

import re
import subprocess
import sys
import time

from models_app.conversion import runner, sandbox
from sandboxing.limits import PROJECT_ROOT
from sandboxing.stage import Descriptors
from viewer_gateway.config import SHIPPED_CONVERTER

ZYGOTE_IMPORTS = """
import sys
from models_app.conversion import zygote
zygote._import_conversion_code()
import ifcopenshell.util.mvd_info
print(ifcopenshell.util.mvd_info.LARK_AVAILABLE, *(name in sys.modules for name in zygote.LEFT_OUT))
import lark, sqlite3
print("importable")
"""


def test_the_zygote_leaves_out_lark_and_sqlite_yet_a_conversion_could_still_import_them():
    done = subprocess.run([sys.executable, "-c", ZYGOTE_IMPORTS], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False", "importable"]
    assert done.stderr == "", "what ifcopenshell prints about the parts left out should not reach the zygote's stderr tail"


def _records_optimized(tmp_path, records_bytes: int) -> bool:
    (tmp_path / runner.GEOMETRY_FILE).write_bytes(bytes(records_bytes))
    (tmp_path / runner.METADATA_FILE).write_text("{}")
    conversion = runner._Conversion(tmp_path, sandbox.ConversionLimits(), time.monotonic() + 60, 60, lambda *_: None)
    with Descriptors() as passed:
        _, optimize = conversion.records_args(passed, "/proc/self/fd/1")
    return optimize


def test_node_optimizes_only_geometry_records_large_enough_to_pay_for_it(tmp_path):
    assert not _records_optimized(tmp_path, runner.OPTIMIZE_FROM_BYTES - 1)
    assert _records_optimized(tmp_path, runner.OPTIMIZE_FROM_BYTES)


def test_node_runs_without_its_optimizing_compiler_only_when_told():
    def flags(**options):
        return sandbox.node_command(sandbox.ConversionLimits(), "node", SHIPPED_CONVERTER, [], [], **options)

    assert "--no-opt" in flags(optimize=False)
    assert "--no-opt" not in flags()


def test_the_records_converter_bundles_no_texture_code_and_the_fallback_is_its_own_file():
    bundle = SHIPPED_CONVERTER.read_text()
    assert "node_modules/@loaders.gl/" not in bundle and "worker_threads" not in bundle
    assert (SHIPPED_CONVERTER.parent / "fallback.mjs").is_file()


def test_only_ifcopenshells_notes_about_the_parts_left_out_are_dropped(capsys):
    from models_app.conversion import zygote

    with zygote._unimportable(()):
        print("No SQL support: import of sqlite3 halted; None in sys.modules")
        print("DeprecationWarning: something a library really says", file=sys.stderr)
    assert capsys.readouterr().err == "DeprecationWarning: something a library really says\n"


def test_no_conversion_code_uses_what_the_zygote_leaves_out():
    conversion = PROJECT_ROOT / "models_app" / "conversion"
    for path in conversion.glob("*.py"):
        if path.name != "zygote.py":
            assert not re.search(r"\.mvd\b|ifcopenshell\.(stream|sql)|\b(import|from) (lark|sqlite3)\b", path.read_text()), path
