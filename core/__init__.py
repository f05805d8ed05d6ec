"""The project's bottom layer, below every app: it may import Django, `sandboxing` and the standard library, never an
app. The Django-free modules (errors, files, limits, service_secret, host_paths, script_analysis) are shared with the
edit service. See docs/architecture/core.md."""
