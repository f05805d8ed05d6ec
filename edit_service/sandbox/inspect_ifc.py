"""Sandbox entry point: validates an IFC and sends back its semantic snapshot.

    python inspect_ifc.py IFC [--no-validate] --outputs-fd N

Exit 3 with the validation errors on stderr when the IFC is not valid. The snapshot maps each element's GlobalId to
{"class", "name", "attributes": {attr: value}} with direct non-reference attributes and PsetName.attribute values
of property and quantity sets (no entity references), and the geometry facts the diff compares (world placement,
body size, volume, shape fingerprint); see edit_service/sandbox/snapshot.py and edit_service/engine/semantic_diff.py.
"""

import json
import logging
import sys

import ifcopenshell
import ifcopenshell.validate

from outputs import end_with_the_reader, send
from snapshot import snapshot

SNAPSHOT = "snapshot.json"


def main(ifc_path: str, validate: bool, outputs_fd: int) -> int:
    model = ifcopenshell.open(ifc_path)
    logger = ifcopenshell.validate.json_logger()
    if validate:
        ifcopenshell.validate.validate(model, logger)
    if logger.statements:
        for statement in logger.statements[:20]:
            print(f"IFC validation: {statement.get('message')} ({statement.get('instance')})", file=sys.stderr)
        return 3
    with open(SNAPSHOT, "w", encoding="utf-8") as handle:
        json.dump(snapshot(model), handle, separators=(",", ":"))
    send(outputs_fd, [SNAPSHOT])
    return 0


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    arguments = sys.argv[1:]
    fd = int(arguments[arguments.index("--outputs-fd") + 1])
    end_with_the_reader(fd)
    sys.exit(main(arguments[0], "--no-validate" not in arguments, fd))
