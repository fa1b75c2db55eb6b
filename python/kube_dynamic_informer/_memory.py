"""Giving back to the system the memory glibc's malloc keeps after a list.

A list decodes every object of a resource; the cache keeps its own compact
form and frees the decoded objects. glibc's malloc keeps most of the pages
they took (tens of MiB at 50,000 objects) for later allocations that never
come. ``malloc_trim(0)`` returns the free pages; the package calls it once an
informer's list has ended (see ``Factory``'s ``trim_memory``). Elsewhere
(musl, macOS, Windows) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import platform
from typing import Callable, Optional


def _malloc_trim() -> Optional[Callable[[int], int]]:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    result: Callable[[int], int] = function
    return result


_MALLOC_TRIM = _malloc_trim()


def trim() -> bool:
    """Returns free heap pages to the system; whether any were returned.

    ctypes releases the GIL for the call (about a millisecond per 100 MiB of
    heap)."""
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(0))
