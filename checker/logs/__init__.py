"""checker/logs."""
