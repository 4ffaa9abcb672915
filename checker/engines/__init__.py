"""checker/engines."""
