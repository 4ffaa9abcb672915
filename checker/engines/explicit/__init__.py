"""checker/engines/explicit."""
