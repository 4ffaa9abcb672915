"""checker/engines/smt."""
