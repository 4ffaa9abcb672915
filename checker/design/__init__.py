"""checker/design."""
