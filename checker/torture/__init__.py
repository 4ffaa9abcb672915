"""toolcommit torture: a fault harness with real crashes (see harness.py)."""
