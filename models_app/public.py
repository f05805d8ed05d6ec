"""The public surface of models_app for the other apps: where a model's files are, the edit service calls they make,
and the limits of sandboxed work on a model's IFC. Other apps import these names (or models_app's selectors and
services), never models_app.storage, models_app.edit_client or models_app.conversion (the import contract says so).
"""

from models_app.conversion.sandbox import ConversionLimits
from models_app.edit_client import call as edit_service_call
from models_app.edit_client import version_ifc_download
from models_app.revision_services import saved_versions, version_ifc_fetch, version_product_key
from models_app.storage import (
    CLASH_GEOMETRY_FILE,
    ELEMENT_BOUNDS_FILE,
    ELEMENT_VALUES_FILE,
    IFC_FILE,
    METADATA_FILE,
    file_signature,
    model_dir,
    model_file,
)

__all__ = [
    "CLASH_GEOMETRY_FILE",
    "ConversionLimits",
    "ELEMENT_BOUNDS_FILE",
    "ELEMENT_VALUES_FILE",
    "IFC_FILE",
    "METADATA_FILE",
    "edit_service_call",
    "file_signature",
    "model_dir",
    "model_file",
    "saved_versions",
    "version_ifc_download",
    "version_ifc_fetch",
    "version_product_key",
]
