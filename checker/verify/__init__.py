"""checker/verify."""
