"""The baseline Python peer (`py-dict-informer`): the informer a Python user
writes with the official `kubernetes` client, measuring itself as the other
peers do (bench/peers/src/lib.rs) and printing the same JSON fields.

    python py_dict_informer.py --kubeconfig PATH [--dataset crd|configmap]
                               [--strip-managed-fields]
                               [--burst-id ID --burst-count N]

`DictInformer` lists the resource page by page (limit 500 and the continue
token) into a dict keyed by namespace/name, the objects kept as the client
returns them (dicts), then watches from the list's resourceVersion with
`kubernetes.watch.Watch` (bookmarks asked for), keeping the dict and three
dict-based indexes ({value: set of keys}, the same three as the other
peers: node, app, and tag or key) up to date on each event, and calling the
handlers registered for the event's type on the watch thread. A 410 Gone
makes it list again, diffing the new list against the dict. The client's own
`kubernetes.informer.SharedInformer` lists in a single request and keeps no
index, hence this one.

Handler 1 (MODIFIED) records the lag of each stamped update; handler 2
(ADDED, MODIFIED, DELETED) keeps the per-namespace tally. After sync: the
steady RSS (after the settle), `by_index("node", value)` (the cached dicts)
and `index_keys("node", value)` over the kdi peer's query values, each
call timed alone. After the burst, the late handler: the dict's objects
iterated, a handler called for each that reads its name (`replay_s`,
`late_handler_events_per_s`).

sync_s runs from the start of this script, before the client is imported
(`import_s` says how long the import took).
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any, Optional, cast  # noqa: E402

import urllib3  # noqa: E402

from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from bench_common import (  # noqa: E402
    Args,
    Dataset,
    Handlers,
    ObjectCounter,
    cpu_seconds,
    emit,
    end_of_run,
    percentile,
    proc_status_mb,
    query_values,
    reset_peak_rss,
    time_each,
)

_IMPORT_S = time.perf_counter() - _STARTED

PEER = "py-dict-informer"
PAGE_SIZE = 500

log = logging.getLogger(PEER)

Obj = dict[str, Any]
Handler = Callable[[Obj], None]
IndexFunc = Callable[[Obj], list[str]]
# One page of a list: (items, resourceVersion, continue token).
ListPage = Callable[[Optional[str]], tuple[list[Obj], str, Optional[str]]]

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"


def key_of(obj: Obj) -> str:
    """namespace/name (name alone for a cluster-scoped object)."""
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else meta["name"]


class DictInformer:
    """List, then watch, a resource into a dict of dicts with dict indexes.

    `list_page(continue_token)` returns one page; `watch_func` is the list
    function `Watch.stream` calls with `watch=True`.
    """

    def __init__(
        self,
        list_page: ListPage,
        watch_func: Callable[..., Any],
        watch_args: tuple[Any, ...],
        indexers: dict[str, IndexFunc],
        transform: Callable[[Obj], Obj] | None = None,
        watch_return_type: type | None = None,
    ) -> None:
        self._list_page = list_page
        self._watch_func = watch_func
        self._watch_args = watch_args
        self._watch_return_type = watch_return_type
        self._indexers = indexers
        self._transform = transform
        self._store: dict[str, Obj] = {}
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in indexers}
        self._lock = threading.RLock()
        self._handlers: dict[str, list[Handler]] = {ADDED: [], MODIFIED: [], DELETED: []}
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self.synced = threading.Event()
        self.resource_version: str | None = None
        self.list_requests = 0
        self.relists_after_gone = 0

    # --- handlers and reads -------------------------------------------------

    def add_event_handler(self, event_type: str, handler: Handler) -> None:
        """Calls `handler(obj)` on the watch thread for each event of `event_type`."""
        self._handlers[event_type].append(handler)

    def _fire(self, event_type: str, obj: Obj) -> None:
        for handler in self._handlers[event_type]:
            try:
                handler(obj)
            except Exception:
                log.exception("handler of %s failed", event_type)

    def __len__(self) -> int:
        return len(self._store)

    def get(self, key: str) -> Obj | None:
        """The cached object under `key` (namespace/name)."""
        with self._lock:
            return self._store.get(key)

    def objects(self) -> list[Obj]:
        """Every cached object."""
        with self._lock:
            return list(self._store.values())

    def index_keys(self, index: str, value: str) -> list[str]:
        """The keys of the objects whose index `index` has `value`."""
        with self._lock:
            return list(self._indices[index].get(value, ()))

    def by_index(self, index: str, value: str) -> list[Obj]:
        """The objects whose index `index` has `value`."""
        with self._lock:
            return [self._store[key] for key in self._indices[index].get(value, ())]

    # --- the cache ----------------------------------------------------------

    def _index(self, key: str, obj: Obj) -> None:
        for name, index_func in self._indexers.items():
            index = self._indices[name]
            for value in index_func(obj):
                index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, index_func in self._indexers.items():
            index = self._indices[name]
            for value in index_func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def _put(self, obj: Obj) -> bool:
        """Stores `obj`; True when it was new."""
        if self._transform is not None:
            obj = self._transform(obj)
        key = key_of(obj)
        with self._lock:
            old = self._store.get(key)
            if old is not None:
                self._unindex(key, old)
            self._store[key] = obj
            self._index(key, obj)
        self._fire(ADDED if old is None else MODIFIED, obj)
        return old is None

    def _remove(self, obj: Obj) -> None:
        key = key_of(obj)
        with self._lock:
            old = self._store.pop(key, None)
            if old is not None:
                self._unindex(key, old)
        self._fire(DELETED, old if old is not None else obj)

    # --- list and watch -----------------------------------------------------

    def _pages(self) -> Iterator[list[Obj]]:
        """The list's pages; sets `resource_version` to the list's."""
        token: str | None = None
        while True:
            items, resource_version, token = self._list_page(token)
            self.list_requests += 1
            self.resource_version = resource_version
            yield items
            if not token:
                return

    def _list(self) -> None:
        """Lists everything; after a first list, diffs against the dict."""
        if not self._store:
            for items in self._pages():
                for obj in items:
                    self._put(obj)
            return
        seen: set[str] = set()
        for items in self._pages():
            for obj in items:
                key = key_of(obj)
                seen.add(key)
                old = self.get(key)
                if old is None or old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                    self._put(obj)
        for key in [k for k in self._store if k not in seen]:
            gone = self.get(key)
            if gone is not None:
                self._remove(gone)

    def _watch_once(self) -> None:
        """Watches from `resource_version` until the stream fails."""
        self._watch = watch.Watch(return_type=self._watch_return_type)  # type: ignore[no-untyped-call]
        stream = self._watch.stream(  # type: ignore[no-untyped-call]
            self._watch_func,
            *self._watch_args,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
        )
        for event in stream:
            if self._stop.is_set():
                return
            kind, obj = event["type"], event["object"]
            if kind in (ADDED, MODIFIED):
                self._put(obj)
            elif kind == DELETED:
                self._remove(obj)
            if kind != ERROR:
                self.resource_version = obj["metadata"]["resourceVersion"]

    def run(self) -> None:
        """Lists, then watches, until `stop()`: a 410 Gone lists again; other
        errors watch again from the last resourceVersion after a second."""
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                    self.synced.set()
                self._watch_once()
            except ApiException as e:
                if e.status == 410:
                    log.warning("watch expired (410 Gone): listing again")
                    self.relists_after_gone += 1
                    self.resource_version = None
                else:
                    log.warning("watch failed (%s): watching again", e.status)
                    self._stop.wait(1)
            except Exception:
                if self._stop.is_set():
                    return
                log.exception("list or watch failed: trying again")
                self._stop.wait(1)

    def start(self) -> None:
        """Runs the list and watch on a daemon thread."""
        threading.Thread(target=self.run, name="dict-informer", daemon=True).start()

    def stop(self) -> None:
        """Stops the watch."""
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]


# --- the datasets -------------------------------------------------------------


def _nested(obj: Obj, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)  # type: ignore[assignment]
    return obj


def _one(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else []


def indexers_for(dataset: Dataset) -> dict[str, IndexFunc]:
    """The three indexes of the other peers, as Python functions."""
    indexers: dict[str, IndexFunc] = {"app": lambda o: _one(_nested(o, "metadata", "labels", "app"))}
    if dataset.name == "crd":
        indexers["node"] = lambda o: _one(_nested(o, "spec", "nodeName"))
        indexers["tag"] = lambda o: [t for t in _nested(o, "spec", "tags") or () if isinstance(t, str)]
    else:
        indexers["node"] = lambda o: _one(_nested(o, "data", "nodeName"))
        indexers["key"] = lambda o: list(_nested(o, "data") or {})
    return indexers


def informer_for(args: Args) -> DictInformer:
    """The dataset's informer: Widgets through CustomObjectsApi (which
    returns dicts), ConfigMaps through CoreV1Api, read as JSON into dicts."""
    ds = args.dataset
    indexers = indexers_for(ds)

    def strip(obj: Obj) -> Obj:
        obj["metadata"].pop("managedFields", None)
        return obj

    transform = strip if args.strip_managed_fields else None
    if ds.name == "crd":
        custom = client.CustomObjectsApi()

        def list_widgets(token: str | None) -> tuple[list[Obj], str, str | None]:
            page = cast(
                Obj, custom.list_cluster_custom_object(ds.group, ds.version, ds.plural, limit=PAGE_SIZE, _continue=token)
            )
            meta = page["metadata"]
            return page["items"], meta["resourceVersion"], meta.get("continue")

        return DictInformer(
            list_widgets,
            custom.list_cluster_custom_object,
            (ds.group, ds.version, ds.plural),
            indexers,
            transform,
        )
    core = client.CoreV1Api()
    # The watch's events as dicts, not V1ConfigMap models.

    def list_config_maps(token: str | None) -> tuple[list[Obj], str, str | None]:
        # Unread (_preload_content=False): the JSON as dicts, not V1ConfigMap models.
        response = cast(
            urllib3.HTTPResponse,
            core.list_config_map_for_all_namespaces(limit=PAGE_SIZE, _continue=token, _preload_content=False),
        )
        page = json.loads(response.data)
        meta = page["metadata"]
        return page["items"], meta["resourceVersion"], meta.get("continue")

    return DictInformer(
        list_config_maps, core.list_config_map_for_all_namespaces, (), indexers, transform, watch_return_type=object
    )


# --- the run ------------------------------------------------------------------


def late_handler(informer: DictInformer) -> dict[str, Any]:
    """The late handler: every cached object handed to a handler that reads
    its name, the dict's objects taken under its lock first."""
    reset = reset_peak_rss()
    started = time.perf_counter_ns()
    objects = informer.objects()
    counter = ObjectCounter(len(objects))

    def handler(obj: Obj) -> None:
        counter.take(obj["metadata"].get("name"))

    for obj in objects:
        handler(obj)
    replay_s = ((counter.done_at or time.perf_counter_ns()) - started) / 1e9
    return {
        "replay_s": round(replay_s, 4),
        "replay_objects": counter.count,
        "replay_name_bytes": counter.name_bytes,
        "replay_rss_peak_mb": round(proc_status_mb("VmHWM"), 1) if reset else None,
        "late_handler_events_per_s": round(counter.count / replay_s, 0) if replay_s > 0 else None,
    }


def main() -> int:
    logging.basicConfig(level=logging.WARNING, format=f"{PEER}: %(message)s")
    args = Args.parse()
    config.load_kube_config(config_file=args.kubeconfig)  # type: ignore[no-untyped-call]
    handlers = Handlers(args)
    informer = informer_for(args)
    informer.add_event_handler(MODIFIED, lambda obj: handlers.lag_on_update(obj["metadata"].get("annotations")))
    informer.add_event_handler(ADDED, lambda obj: handlers.tally(obj["metadata"].get("namespace"), 1))
    informer.add_event_handler(MODIFIED, lambda obj: handlers.saw_update(obj["metadata"].get("annotations")))
    informer.add_event_handler(DELETED, lambda obj: handlers.tally(obj["metadata"].get("namespace"), -1))
    informer.start()
    if not informer.synced.wait(args.timeout):
        print(f"{PEER}: not synced within {args.timeout} s", file=sys.stderr)
        return 1
    sync_s = time.perf_counter() - _STARTED
    cpu_sync = cpu_seconds()
    rss_sync = proc_status_mb("VmRSS")
    time.sleep(args.settle)
    rss_steady = proc_status_mb("VmRSS")
    objects = len(informer)

    values = query_values(args.queries)
    by_index, hits = time_each(values, lambda value: informer.by_index("node", value))
    index_keys, _ = time_each(values, lambda value: informer.index_keys("node", value))
    result: dict[str, Any] = {
        "peer": PEER,
        "dataset": args.dataset.name,
        "objects": objects,
        "strip": args.strip_managed_fields,
        "sync_s": round(sync_s, 3),
        "import_s": round(_IMPORT_S, 3),
        "cpu_sync_s": round(cpu_sync, 3),
        "rss_sync_mb": round(rss_sync, 1),
        "rss_steady_mb": round(rss_steady, 1),
        "by_index_p50_us": round(percentile(by_index, 50), 2),
        "by_index_p99_us": round(percentile(by_index, 99), 2),
        "by_index_hits_avg": round(hits / max(len(values), 1), 1),
        "index_keys_p50_us": round(percentile(index_keys, 50), 2),
        "index_keys_p99_us": round(percentile(index_keys, 99), 2),
        "list_requests": informer.list_requests,
    }
    emit({"event": "synced", "peer": PEER, "objects": objects})

    end_of_run(result, handlers, args)
    result.update(late_handler(informer))
    result["relists_after_gone"] = informer.relists_after_gone
    informer.stop()
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
