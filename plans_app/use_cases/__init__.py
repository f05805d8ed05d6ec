"""Multi-step use cases of the plans app, one module each with one public function."""
