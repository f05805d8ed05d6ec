"""The federation of a project: where each of its IFC models lies in one shared frame, the project frame, so that
models exported separately (architecture, structure, services) are seen and clash-checked together.

Each model's map placement is its georeference (models_app.conversion.georeference): read from the model's
georeference.json, which the conversion writes, or, for a model converted before that file existed, computed from
its model.ifc (remembered per process while the file is the same). The project frame is the map frame shifted by the
project origin: the map position of the first model (in the order models were added) that has a map conversion,
rounded to whole metres, so that coordinates stay small enough for the viewer's float32 and clash points stay
readable. A model with a map conversion is placed by it; a model without one (site placement only) keeps its own
IFC world frame at the project origin (identity), as every model does in a project without any map conversion.
Drawings (DXF) have no 3D geometry and are not part of the federation.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache

import numpy as np

from models_app.conversion.georeference import GEOREFERENCE_FILE, GEOREFERENCED, NONE, column_major, georeference, matrix_of
from models_app.models import IfcModel
from models_app.selectors import model_current_version, project_get, project_links
from models_app.storage import IFC_FILE, file_signature, model_file

logger = logging.getLogger(__name__)

_IDENTITY = {"source": NONE, "matrix": column_major(np.eye(4)), "crs": None}


def model_georeference(model_id: str) -> dict:
    """The model's georeference() answer ({source, matrix, crs}): its georeference.json, else computed from its
    model.ifc; {"source": "none", identity} when neither can be read (no IFC yet, a schema ifcopenshell cannot open)."""
    try:
        answer = json.loads(model_file(model_id, GEOREFERENCE_FILE).read_text(encoding="utf-8"))
        matrix_of(answer)
        return answer
    except FileNotFoundError:
        pass
    except (ValueError, KeyError, TypeError):
        logger.warning("georeference.json of %s is unreadable; computing it from model.ifc", model_id)
    path = model_file(model_id, IFC_FILE)
    try:
        return _computed(str(path), file_signature(path))
    except FileNotFoundError:
        return _IDENTITY
    except Exception:  # ifcopenshell refuses the file (schema it cannot read, broken STEP)
        logger.warning("no georeference for %s: ifcopenshell could not read its model.ifc", model_id, exc_info=True)
        return _IDENTITY


@lru_cache(maxsize=64)
def _computed(path: str, signature: str) -> dict:
    """georeference() of one exact file (its signature changes whenever model.ifc is replaced)."""
    return georeference(path)


def _federated(project_id: str) -> tuple[list[tuple], np.ndarray, str | None]:
    """[(membership row, georeference answer, 4x4 model -> project frame)] of the project's IFC models in order,
    the project origin in map coordinates and the CRS of the model that fixed it."""
    links = [link for link in project_links(project_get(project_id)) if link.model.format == IfcModel.Format.IFC]
    answers = [model_georeference(link.model_id) for link in links]
    first = next((answer for answer in answers if answer["source"] in GEOREFERENCED), None)
    origin = np.round(matrix_of(first)[:3, 3]) if first is not None else np.zeros(3)
    shift = np.eye(4)
    shift[:3, 3] = -origin
    placed = [(link, answer, shift @ matrix_of(answer) if answer["source"] in GEOREFERENCED else np.eye(4))
              for link, answer in zip(links, answers)]
    return placed, origin, first["crs"] if first is not None else None


def project_placements(project_id: str) -> dict[str, np.ndarray]:
    """{model id: 4x4 numpy matrix} placing each IFC model of the project (its IFC world frame, metres) in the
    project frame (metres, Z up)."""
    placed, _, _ = _federated(project_id)
    return {link.model_id: matrix for link, _, matrix in placed}


def project_federation(project_id: str) -> dict:
    """GET /projects/{pid}/federation: {models: [{modelId, discipline, version, status, matrix (16 numbers,
    column-major, model -> project frame, metres), georeference, crs}], origin: the project frame's origin in map
    coordinates, crs}."""
    placed, origin, crs = _federated(project_id)
    return {
        "models": [
            {"modelId": link.model_id, "discipline": link.discipline, "version": model_current_version(link.model_id),
             "status": link.model.status, "matrix": column_major(matrix),
             "georeference": answer["source"], "crs": answer.get("crs")}
            for link, answer, matrix in placed
        ],
        "origin": [float(value) for value in origin],
        "crs": crs,
    }
