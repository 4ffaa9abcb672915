"""toolcommit.runtime.wire: the key on the wire, by its public name (the module is
`toolcommit.checker.runtime.wire`; these are its objects)."""
from toolcommit.checker.runtime.wire import (SAFE, UnkeyedWrite, instrument, instrumented, stamp,
                                             unguarded, uninstrument)

__all__ = ["instrument", "uninstrument", "instrumented", "unguarded", "stamp", "UnkeyedWrite",
           "SAFE"]
