"""Converting an IFC file into the viewer's files, in sandboxed stages."""

from pathlib import Path

SHIPPED_CONVERTER = Path(__file__).resolve().parents[2] / "converter" / "dist" / "convert.mjs"  # built by make setup
