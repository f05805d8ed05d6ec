"""Coordination: a project's models seen together, clash tests, their runs, and clashes tracked across versions."""
