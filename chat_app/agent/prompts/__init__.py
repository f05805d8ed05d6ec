"""The agent's prompts, one text file each beside this module: main.txt (the main agent) and persona-<name>.txt (the
sub-agents of delegate)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


@cache
def prompt(name: str) -> str:
    return (FOLDER / f"{name}.txt").read_text(encoding="utf-8").removesuffix("\n")
