"""The IDS checking engine: knows nothing of Django or HTTP.

- `ids_schema`: IDS documents validated against the IDS 1.0 XSD (line and rule of the first violation).
- `ids_engine`: IfcOpenShell's ifctester with the corrections the official test cases need, and the result shape.
- `overrides`: the model's effective property overrides applied to an in-memory IFC.
- `child` / `runner`: the check in a child process under a time and memory limit.
- `reports`: HTML report and BCF 3.0 archive of a result.
"""
