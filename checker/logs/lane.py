"""The native lane: `Conformance.feed`'s common cases compiled to C (``lane.c``), loaded as a
CPython extension built with the machine's C compiler on first use (`toolcommit.checker.
cbuild`: cached by the hash of the source, the compiler and the interpreter; no new
dependency).

It works on the core's own objects and hands every case it does not cover to the Python
stage that would have run, so a report is the same with it or without it (tests compare
the two on every fixture and on generated logs). `load` gives the module, or None and why
not (no C compiler, no Python headers, or TOOLCOMMIT_LANE=python); the Python core then
checks the log alone, only slower.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path
from typing import Optional

from toolcommit.checker.cbuild import cache_dir, compiler, verified

SOURCE = Path(__file__).with_name("lane.c")
FLAGS = ("-O2", "-shared", "-fPIC", "-w")
_loaded: dict[str, tuple] = {}


def load() -> tuple[Optional[object], str]:
    """The set-up lane module, or (None, why it is not used)."""
    want = os.environ.get("TOOLCOMMIT_LANE", "auto").strip().lower() or "auto"
    if want == "python":
        return None, "TOOLCOMMIT_LANE=python"
    if "lane" not in _loaded:
        _loaded["lane"] = _build()
    return _loaded["lane"]


def tried() -> Optional[tuple[Optional[object], str]]:
    """What `load` gave in this process, or None if nothing asked for the lane yet."""
    return _loaded.get("lane")


def _build() -> tuple[Optional[object], str]:
    cc = compiler()
    if cc is None:
        return None, "no C compiler (set CC or install cc)"
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        return None, f"no Python headers ({include}/Python.h is missing)"
    try:
        source = SOURCE.read_text(encoding="utf-8")
    except OSError as e:
        return None, f"cannot read {SOURCE}: {e.strerror or e}"
    flags = (*FLAGS, "-I" + include)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    key = hashlib.sha256(
        "\0".join([source, *cc, *flags, sys.version, suffix]).encode()
    ).hexdigest()[:32]
    target = cache_dir() / f"lane-{key}{suffix}"
    with verified(target, source, cc, flags, prefix=".lane-") as (path, why):
        if path is None:
            return None, why
        try:
            loader = importlib.machinery.ExtensionFileLoader("tc_lane", path)
            spec = importlib.util.spec_from_file_location("tc_lane", path, loader=loader)
            mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            loader.exec_module(mod)
            mod.setup(config())
            probe = b"toolcommit/canon/v1\n" * 7
            if mod.sha_check(probe) not in (None, hashlib.sha256(probe).digest()):
                mod.sha_off()
        except (ImportError, OSError, TypeError, ValueError, KeyError, AttributeError) as e:
            return None, f"cannot load {target}: {e}"
    return mod, ""


def openssl_evp() -> Optional[tuple[int, ...]]:
    """Addresses of OpenSSL's EVP_MD_CTX_new, EVP_DigestInit_ex, EVP_DigestUpdate,
    EVP_DigestFinal_ex and a SHA-256 digest (fetched once), from the libcrypto this
    interpreter's hashlib loaded; None when not found (the lane then calls hashlib). The
    lane checks them on a known input before using them (`_build`)."""
    try:
        import _hashlib  # noqa: F401 - loads libcrypto
        import ctypes

        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = sorted({line.split()[-1] for line in f if "libcrypto" in line and "/" in line})
        lib = ctypes.CDLL(paths[0])
        fetch = getattr(lib, "EVP_MD_fetch", None)
        if fetch is not None:  # OpenSSL 3: fetch the algorithm once
            fetch.restype, fetch.argtypes = ctypes.c_void_p, [ctypes.c_void_p] * 3
            md = fetch(None, b"SHA256", None)
        else:
            lib.EVP_sha256.restype = ctypes.c_void_p
            md = lib.EVP_sha256()
        fns = [
            ctypes.cast(getattr(lib, n), ctypes.c_void_p).value
            for n in (
                "EVP_MD_CTX_new",
                "EVP_DigestInit_ex",
                "EVP_DigestUpdate",
                "EVP_DigestFinal_ex",
            )
        ]
        return (*fns, md) if md and all(fns) else None
    except (ImportError, OSError, AttributeError, ValueError, IndexError):
        return None


def _immutable(v) -> bool:
    return v is None or type(v) in (int, str, bool, bytes, tuple) or v == []


def config() -> dict:
    """The core's classes, stage functions and constants, from their one home each."""
    from toolcommit.checker.logs import chains, intents, store, typed
    from toolcommit.checker.logs.findings import LINE_BITS
    from toolcommit.checker.logs.stages import STAGE
    from toolcommit.checker.logs.writers import Writer, note_seq
    from toolcommit.model.canon import _PREFIX_V1, _sha256

    key, ent = store.Key(""), store.Intent("", None, 0, 0)
    for obj in (key, ent):
        for name in type(obj).__slots__:
            if not _immutable(getattr(obj, name)):
                raise TypeError(f"{type(obj).__name__}.{name}'s default is mutable")
    order = ("proposal", "transition", "effect", "crash", "restart")
    return {
        "events": tuple(typed.CLASSES[t] for t in order),
        "types": order,
        "stages": tuple(STAGE[t] for t in order),
        "next": store.NEXT,
        "Key": store.Key,
        "Intent": store.Intent,
        "Writer": Writer,
        "key_template": key,
        "intent_template": ent,
        "code": store.CODE,
        "note_seq": note_seq,
        "close": chains.close,
        "pack": store.Store.pack,
        "sha256": _sha256,
        "prefix": _PREFIX_V1,
        "evp": openssl_evp(),
        "terminal": sum(1 << s for s in store.TERMINAL),
        "RECORDED": store.RECORDED,
        "DISPATCHED": store.DISPATCHED,
        "CANCELLED": store.CANCELLED,
        "RECONCILING": store.RECONCILING,
        "DEAD_LETTER": store.DEAD_LETTER,
        "F_RECORD": store.F_RECORD,
        "F_CANCELLED": store.F_CANCELLED,
        "F_SEALED": store.F_SEALED,
        "F_TRANSITIONS": store.F_TRANSITIONS,
        "F_CLOSED": store.F_CLOSED,
        "F_JUDGE": store.F_JUDGE,
        "F_PROPOSED": store.F_PROPOSED,
        "PACKABLE": store._PACKABLE,
        "MAX_CHAIN": chains.MAX_CHAIN,
        "MAX_PACKED_CHAIN": len(store._EDGES),
        "MEMO_MAX": intents._MEMO_MAX,
        "LINE_BITS": LINE_BITS,
        "pack_format": store._PACK.format,
        "edge_format": store._EDGES[1].format,
    }
