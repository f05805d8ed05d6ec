"""The parts of the edit service's Editor (edit_service/engine/workflow.py), one module per group of use cases."""
