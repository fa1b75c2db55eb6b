"""Shared, indexed informers for any Kubernetes resource, chosen at run time.

An informer lists a resource once, then watches it, and keeps every object in
an in-memory cache that answers ``get``, label-selector lists and index
lookups without asking the API server. Resources are named as ``kubectl``
names them (``"deployments.apps"``, ``"widgets"``, ``"wdg"``) and resolved
through discovery; indexes are JMESPath expressions.

>>> from kube_dynamic_informer import Factory
>>> with Factory() as factory:                               # doctest: +SKIP
...     pods = factory.informer("pods", indexes={"node": "spec.nodeName"})
...     factory.start()
...     pods.wait_for_sync(timeout=60)
...     print([p.name for p in pods.by_index("node", "worker-1")])
"""

from __future__ import annotations

import atexit

from . import errors
from ._native import (
    CachedObject,
    Event,
    Factory,
    Handler,
    Informer,
    Member,
    ObjectOutcome,
    Status,
    WaitReport,
    _shutdown_all,
)
from .errors import (
    CacheError,
    ConditionTimeoutError,
    ConfigError,
    ConfigFileError,
    ExpressionError,
    FactoryError,
    IndexDefinitionError,
    InformerError,
    KubeDynamicInformerError,
    NotSyncedError,
    SelectorError,
    SyncTimeoutError,
    UnknownIndexError,
    UnknownResourceError,
    WaitTimeoutError,
)

__all__ = [
    "CacheError",
    "CachedObject",
    "ConditionTimeoutError",
    "ConfigError",
    "ConfigFileError",
    "Event",
    "ExpressionError",
    "Factory",
    "FactoryError",
    "Handler",
    "IndexDefinitionError",
    "Informer",
    "InformerError",
    "KubeDynamicInformerError",
    "Member",
    "NotSyncedError",
    "ObjectOutcome",
    "SelectorError",
    "Status",
    "SyncTimeoutError",
    "UnknownIndexError",
    "UnknownResourceError",
    "WaitReport",
    "WaitTimeoutError",
    "errors",
]

# Factories not shut down when the interpreter exits are shut down (their
# snapshots written) before it does.
atexit.register(_shutdown_all)
