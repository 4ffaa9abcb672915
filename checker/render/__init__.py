"""checker/render."""
