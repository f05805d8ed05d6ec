"""Sandbox entry point: validates a generated IFC and writes its semantic snapshot.

    python inspect_ifc.py IFC SNAPSHOT_JSON [--no-validate]

Exit 3 with the validation errors on stderr when the IFC is not valid. The snapshot maps each element's GlobalId to
{"class", "name", "attributes": {attr: value}} with direct non-reference attributes and PsetName.attribute values
of property and quantity sets (no geometry, no entity references); see edit_service/engine/semantic_diff.py.
"""

import json
import logging
import sys

import ifcopenshell
import ifcopenshell.validate

from snapshot import snapshot


def main(ifc_path: str, snapshot_path: str, *flags: str) -> int:
    model = ifcopenshell.open(ifc_path)
    logger = ifcopenshell.validate.json_logger()
    if "--no-validate" not in flags:
        ifcopenshell.validate.validate(model, logger)
    if logger.statements:
        for statement in logger.statements[:20]:
            print(f"IFC validation: {statement.get('message')} ({statement.get('instance')})", file=sys.stderr)
        return 3
    with open(snapshot_path, "w", encoding="utf-8") as handle:
        json.dump(snapshot(model), handle, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    sys.exit(main(*sys.argv[1:]))
