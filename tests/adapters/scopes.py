"""A scope rule as a function, for `--scope scopes:by_order` in the tests."""


def by_order(view):
    """One user intent per order: the order named in the call's arguments."""
    return (view.get("args") or {}).get("order")


def broken(view):
    """A scope function with a bug."""
    return view["no such field"]
