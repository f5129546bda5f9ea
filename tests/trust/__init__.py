"""Trust boundary tests: policy from the base revision, base-only trust, signed records."""
