"""The clash engine: Django-free geometry work on the meshes a conversion keeps (coordination_app.engine.*)."""
