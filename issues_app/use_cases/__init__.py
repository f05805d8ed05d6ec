"""Multi-step use cases of the review records, one module each with one public function."""
