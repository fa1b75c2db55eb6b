"""The library's errors. Every exception it raises is a
:class:`KubeDynamicInformerError`; the message is the library's own, naming
what failed and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._native import WaitReport

__all__ = [
    "CacheError",
    "ConditionTimeoutError",
    "ConfigError",
    "ConfigFileError",
    "ExpressionError",
    "FactoryError",
    "IndexDefinitionError",
    "InformerError",
    "KubeDynamicInformerError",
    "NotSyncedError",
    "SelectorError",
    "SyncTimeoutError",
    "UnknownIndexError",
    "UnknownResourceError",
    "WaitTimeoutError",
]


class KubeDynamicInformerError(Exception):
    """Base of every exception of this package."""


class ConfigError(KubeDynamicInformerError):
    """No client could be built: a kubeconfig that cannot be read, a context
    it does not have, no in-cluster service account."""


class ConfigFileError(KubeDynamicInformerError, ValueError):
    """A config file (``Factory.from_file``) with problems: the message names
    each with its file, line and column."""


class FactoryError(KubeDynamicInformerError):
    """A factory refused a request (the factory layer's ``FactoryError``)."""


class UnknownResourceError(FactoryError, LookupError):
    """A resource name the cluster does not serve, or that is ambiguous (the
    message lists suggestions or the choices)."""


class InformerError(KubeDynamicInformerError):
    """An informer refused a request (the informer layer's ``InformerError``)."""


class NotSyncedError(InformerError, FactoryError):
    """A cache did not sync. ``reason`` says why in one word: ``forbidden``,
    ``unauthorized``, ``notServed``, ``gone``, ``serverError``,
    ``unreachable``, ``stopped``, ``notStarted`` or ``timedOut``."""

    reason: str = "unknown"


class SyncTimeoutError(NotSyncedError, TimeoutError):
    """A cache did not sync in the time given (``reason`` is ``timedOut``)."""


class WaitTimeoutError(InformerError, TimeoutError):
    """A cache did not reach a resourceVersion (``wait_for_object``), or a
    condition did not hold (``wait_until``: :class:`ConditionTimeoutError`),
    in the time given."""


class ConditionTimeoutError(WaitTimeoutError):
    """A condition (``Informer.wait_until``) did not hold in the time given.
    ``report`` says where each object stood then: ``report.blocking`` are
    the objects that kept it from holding."""

    report: WaitReport


class CacheError(KubeDynamicInformerError):
    """A cache refused a read or an index (the cache layer's ``CacheError``)."""


class SelectorError(CacheError, ValueError):
    """A label or field selector that does not parse."""


class UnknownIndexError(CacheError, KeyError):
    """A read of an index the cache does not have."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message
        return str(self.args[0]) if self.args else ""


class IndexDefinitionError(CacheError, ValueError):
    """An index that cannot be added: a JMESPath expression that does not
    parse or is too complex, a name taken or reserved."""


class ExpressionError(CacheError, ValueError):
    """A condition (a handler's ``filter``, ``wait_until``'s goal) or a change
    expression (a handler's ``changes``) that does not parse, is too complex,
    or is a kubectl form with no JMESPath equivalent: the message gives the
    position of the mistake."""
