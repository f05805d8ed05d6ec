"""The BCF API 3.0 and the Foundation API 1.0 (buildingSMART OpenCDE) over this service's projects and issues."""
