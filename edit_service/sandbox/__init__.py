"""Code that runs inside the bubblewrap sandbox (script_lib, the build runner, IFC inspection).

Importable outside too (snapshot is shared with benchmarks); the sandbox puts this folder on PYTHONPATH.
"""
