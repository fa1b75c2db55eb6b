"""Type stubs of the extension module (the classes are documented in it)."""

import builtins
import os
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar, overload

from ._aio import EventStream

_T = TypeVar("_T")

Storage = Literal["compact", "objects"]
Quantifier = Literal["all", "any", "none"]

class CachedObject:
    """A handle on one object of a cache (or of an event), read in place."""

    @property
    def name(self) -> str | None:
        """`metadata.name`."""
    @property
    def namespace(self) -> str | None:
        """`metadata.namespace`; `None` for a cluster-scoped object."""
    @property
    def key(self) -> str | None:
        """The cache key: `namespace/name`, or `name` when cluster-scoped."""
    @property
    def uid(self) -> str | None:
        """`metadata.uid`."""
    @property
    def resource_version(self) -> str | None:
        """`metadata.resourceVersion`."""
    @property
    def api_version(self) -> str | None:
        """`apiVersion`."""
    @property
    def kind(self) -> str | None:
        """`kind`."""
    @property
    def labels(self) -> dict[str, str]:
        """`metadata.labels`, as a new dict."""
    @property
    def annotations(self) -> dict[str, str]:
        """`metadata.annotations`, as a new dict."""
    @overload
    def pointer(self, pointer: str) -> Any:
        """The value at a JSON pointer (`/spec/replicas`,
        `/status/conditions/0/type`), or `default` when there is none.
        """
    @overload
    def pointer(self, pointer: str, default: _T) -> Any | _T:
        """The value at a JSON pointer (`/spec/replicas`,
        `/status/conditions/0/type`), or `default` when there is none.
        """
    @overload
    def get(self, key: str) -> Any:
        """A top-level field (`"spec"`, `"status"`, `"metadata"`, ...), or
        `default` when the object has none.
        """
    @overload
    def get(self, key: str, default: _T) -> Any | _T:
        """A top-level field (`"spec"`, `"status"`, `"metadata"`, ...), or
        `default` when the object has none.
        """
    def __getitem__(self, key: str) -> Any: ...
    def __contains__(self, key: str) -> bool: ...
    def to_dict(self) -> dict[str, Any]:
        """The whole object as a dict (what `json.loads` gives for its JSON)."""
    def json(self) -> str:
        """The whole object's JSON, as the API server would write it."""

class Event:
    """One change delivered to a handler."""

    @property
    def kind(self) -> Literal["Add", "Update", "Resync", "Delete"]:
        """`"Add"`, `"Update"`, `"Resync"` or `"Delete"`."""
    @property
    def object(self) -> CachedObject:
        """The object (its new state for an update; for a delete, its final
        state, or the last state known when `final_state_unknown`).
        """
    @property
    def old(self) -> CachedObject | None:
        """For an update, the state before it; `None` otherwise."""
    @property
    def in_initial_list(self) -> bool:
        """An `Add` of the first list (or of the replay to a handler added late)."""
    @property
    def is_resync(self) -> bool:
        """A resync: nothing changed on the server."""
    @property
    def entered_filter(self) -> bool:
        """An `Add` of an object that started to meet the handler's `filter`
        (an update made it match; it was cached before).
        """
    @property
    def left_filter(self) -> bool:
        """A `Delete` of an object that stopped meeting the handler's `filter`:
        it is still cached, and `object` is its new state, the one that does
        not match.
        """
    @property
    def final_state_unknown(self) -> bool:
        """A delete inferred from a relist (the watch missed it): the object may
        be stale (client-go's `DeletedFinalStateUnknown`).
        """

class ObjectOutcome:
    @property
    def resource(self) -> str:
        """The resource of its informer (`plural.version.group`)."""
    @property
    def key(self) -> str:
        """Its cache key: `namespace/name`, or `name`."""
    @property
    def namespace(self) -> str | None:
        """Its namespace; `None` for a cluster-scoped object."""
    @property
    def name(self) -> str:
        """Its name."""
    @property
    def reason(self) -> str:
        """Where it stood, in one word: `met`, `notMet`, `null`, `notBoolean`,
        `failed` (what the condition gave), `exists` (waiting for
        deletion), `replaced` (deleted and created again) or `missing`.
        """
    @property
    def holds(self) -> bool:
        """Whether the condition was true of it."""

class WaitReport:
    @property
    def holds(self) -> bool:
        """Whether the condition held (for the quantifier) when the wait ended."""
    @property
    def objects(self) -> builtins.list[ObjectOutcome]:
        """Every object that counted, as it stood."""
    @property
    def blocking(self) -> builtins.list[ObjectOutcome]:
        """The objects that kept the condition from holding: for `all`, those
        it is not true of; for `none`, those it is true of; for `any`, all of
        them when none holds.
        """
    @property
    def not_synced(self) -> builtins.list[tuple[str, str]]:
        """The informers whose cache had not synced when the wait ended, each
        as `(resource, reason)`, `reason` in one word (`forbidden`,
        `notServed`, `timedOut`, ...).
        """
    @property
    def waited(self) -> float:
        """How long the wait took, in seconds."""
    def __bool__(self) -> bool: ...

class Handler:
    """A registered handler: `remove()` stops its events."""

    def remove(self) -> None:
        """Stops delivering events to the handler (events already queued are
        dropped). Removing twice does nothing.
        """
    @property
    def has_synced(self) -> bool:
        """Whether the handler has received every object of the first list."""
    @property
    def backlog(self) -> int:
        """How many events wait in the handler's queue."""

class Status:
    """What an informer is doing: `name` in one word, `reason` when it is not
    synced for a reason (a refusal, an error).
    """

    @property
    def name(self) -> str:
        """One word for programs: `notStarted`, `syncing`, `synced`,
        `relisting`, `stale`, `notServed` (not in discovery yet: waited
        for), `gone`, `stopped`, `waitingForShardGroup`, or why a request
        failed and is retried: `forbidden`, `unauthorized`, `serverError`,
        `unreachable`.
        """
    @property
    def words(self) -> str:
        """The state in a few words for people: `access denied`, `not served`,
        `retrying after an error`, ...
        """
    @property
    def reason(self) -> str | None:
        """Why it is not synced, when there is a reason to say."""
    @property
    def synced(self) -> bool:
        """Whether the cache is synced (and current)."""
    @property
    def refused(self) -> bool:
        """Whether the server refused the informer (403, 401, ...)."""

EventCallback = Callable[[Event], object]

class Informer:
    """One resource's informer: its cache, indexes and handlers."""

    @property
    def resource(self) -> str:
        """The resource, as kubectl writes it in full: `plural.version.group`
        (`pods.v1` for the core group).
        """
    @property
    def status(self) -> Status:
        """What the informer is doing now."""
    @property
    def has_synced(self) -> bool:
        """Whether the cache has synced (its first list is in)."""
    @property
    def stats(self) -> dict[str, Any]:
        """What the informer did so far, as counters: `lists` (complete lists,
        relists included), `list_requests` (pages), `relists_after_gone`,
        `watch_requests`, `watch_events`, `errors`, `skipped_objects`,
        `tombstones`, `snapshots_written`, `snapshot_write_errors`; and
        `snapshot_start`, how it started with snapshots (`None` without).
        """
    def add_index(self, name: str, expression: str) -> None:
        """Adds an index: `expression` (JMESPath) gives each object's values
        under `name`. Before or after start; objects already cached are
        indexed at once.
        """
    def index_names(self) -> builtins.list[str]:
        """The names of the indexes."""
    def wait_for_sync(self, timeout: float = 60.0) -> None:
        """Waits until the cache has synced, releasing the GIL; raises
        `NotSyncedError` (`SyncTimeoutError` when the time ran out) saying
        why it has not.
        """
    def wait_for_object(self, obj: object, timeout: float = 30.0) -> None:
        """Waits until the cache reflects `obj`, an object the server returned
        from a write: a dict, or what the official client returns (anything
        with `to_dict()`). Raises `WaitTimeoutError` when it does not within
        `timeout` seconds.
        """
    def get(self, key: str, namespace: str | None = None) -> CachedObject | None:
        """The object with this key (`namespace/name`, or `name` when
        cluster-scoped), or `None`. With `namespace`, `key` is a name.
        """
    def list(self, label_selector: str | None = None, namespace: str | None = None) -> builtins.list[CachedObject]:
        """The cached objects, all or those matching `label_selector`, in all
        namespaces or one.
        """
    def keys(self) -> builtins.list[str]:
        """Every cached key."""
    def by_index(self, index: str, value: str) -> builtins.list[CachedObject]:
        """The objects whose index `index` has the value `value`."""
    def index_keys(self, index: str, value: str) -> builtins.list[str]:
        """The keys of the objects whose index `index` has the value `value`."""
    def index_values(self, index: str) -> builtins.list[str]:
        """Every value of index `index`."""
    def on_event(
        self,
        handler: EventCallback,
        *,
        resync: float = 0.0,
        name: str | None = None,
        filter: str | None = None,
        changes: str | Sequence[str] | None = None,
    ) -> Handler:
        """Calls `handler(event)` for every event, on a thread of the library's
        handler pool: first an `Add` for each cached object (a handler added
        late gets the cache first), then live events, in order. A handler
        that raises has its exception reported (`sys.unraisablehook`) and
        gets the next event; others are not affected. `resync` (seconds)
        re-delivers every object that often as a `Resync`; `0` (the
        default) never. Returns the registration, to `remove()` it.

        `filter`, a JMESPath condition (`"metadata.labels.tier == 'web'"`),
        shows the handler only the objects it is true of: one that starts to
        meet it arrives as an `Add` (`entered_filter`), one that stops as a
        `Delete` (`left_filter`). `changes`, JMESPath expressions
        (`"spec"`, `["metadata.generation", "metadata.labels"]`), lets
        through only the updates that change the value of one of them. Both
        are checked here: a mistake raises `ExpressionError` with its
        position.
        """
    def on_add(self, handler: EventCallback, *, name: str | None = None, filter: str | None = None) -> Handler:
        """As `on_event`, called for `Add` events only."""
    def on_update(
        self,
        handler: EventCallback,
        *,
        resync: float = 0.0,
        name: str | None = None,
        filter: str | None = None,
        changes: str | Sequence[str] | None = None,
    ) -> Handler:
        """As `on_event`, called for `Update` events (and `Resync`s, with
        `resync`) only.
        """
    def on_delete(self, handler: EventCallback, *, name: str | None = None, filter: str | None = None) -> Handler:
        """As `on_event`, called for `Delete` events only."""
    def events(
        self,
        *,
        resync: float = 0.0,
        filter: str | None = None,
        changes: str | Sequence[str] | None = None,
    ) -> EventStream:
        """The events as an asynchronous iterator for asyncio (`async for event
        in informer.events()`), from inside a running event loop; as
        `on_event`, the cache first. Close it (or use it as an async context
        manager) to stop the events.
        `filter` and `changes` as for `on_event`.
        """
    async def synced(self, timeout: float = 60.0) -> None:
        """`wait_for_sync` as an awaitable, for asyncio."""
    def wait_until(
        self,
        goal: str,
        keys: str | Sequence[str] | None = None,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        index: tuple[str, str] | None = None,
        quantifier: Quantifier = "all",
        timeout: float = 30.0,
    ) -> WaitReport:
        """Waits, releasing the GIL, until `goal` is true of the objects picked,
        answered from the cache as events arrive (no polling, no request of
        its own), and returns how it ended. `goal` is a JMESPath condition
        (`"status.readyReplicas == spec.replicas"`), `"delete"`, `"create"`,
        or kubectl's `"condition=Ready"` / `"jsonpath={.status.phase}=Running"`.

        The objects are `keys` (one key or several: `namespace/name`, or
        names in `namespace` when it is given), whether cached yet or not;
        or else the cached objects of `namespace`, matching
        `label_selector`, filed under `index = (name, value)`, as they come
        and go. `quantifier` asks for `"all"` of them (the default), `"any"`
        or `"none"`. The resource may not be served yet: the wait goes on
        until it is.

        Raises `ConditionTimeoutError` after `timeout` seconds, its
        `report.blocking` the objects that kept the condition from holding;
        `ExpressionError` for a goal that does not parse.
        """
    async def until(
        self,
        goal: str,
        keys: str | Sequence[str] | None = None,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        index: tuple[str, str] | None = None,
        quantifier: Quantifier = "all",
        timeout: float = 30.0,
    ) -> WaitReport:
        """`wait_until` as an awaitable, for asyncio (the wait runs on a worker
        thread of the event loop's default executor).
        """
    def __len__(self) -> int: ...

class Member:
    """One member of a config file's set: its entry, the resource, the
    informer, and what the entry's handlers want.
    """

    @property
    def entry(self) -> str:
        """The config entry's name (an informer's or a pattern's)."""
    @property
    def resource(self) -> str:
        """The resource, as the entry names it or as the pattern selected it."""
    @property
    def from_pattern(self) -> bool:
        """Whether a pattern selected it."""
    @property
    def filter(self) -> str | None:
        """The entry's `filter`: the objects its handlers want (a JMESPath
        condition), or `None`.
        """
    @property
    def changes(self) -> builtins.list[str]:
        """The entry's `changes`: the expressions whose change lets an update
        through to its handlers (empty: every update).
        """
    def on_event(self, handler: EventCallback, *, resync: float = 0.0, name: str | None = None) -> Handler:
        """As `Informer.on_event`, with the entry's `filter` and `changes`: the
        handler receives what the config file says this entry's handlers
        want.
        """
    @property
    def informer(self) -> Informer:
        """The informer (shared with every entry whose options build the same
        cache).
        """

class Factory:
    """The informers of one cluster, shared by resource and options: asking
    twice for the same resource with the same options gives the same cache.

    `Factory(kubeconfig, context)` connects as the kubeconfig (a path; by
    default `$KUBECONFIG` or `~/.kube/config`, else the in-cluster service
    account) and context say. `namespace` limits every informer to one
    namespace; `storage` is `"compact"` (the default: a fraction of the
    memory) or `"objects"`; `snapshot_dir` keeps each cache on disk so that
    a restart resumes without listing. `trim_memory` (on by default) gives
    the memory glibc's malloc keeps after a list back to the system once
    each list ends (nothing is done with another C library).
    """

    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        *,
        namespace: str | None = None,
        storage: Storage = "compact",
        snapshot_dir: str | None = None,
        trim_memory: bool = True,
    ) -> None: ...
    @staticmethod
    def from_file(
        path: str | os.PathLike[str],
        kubeconfig: str | None = None,
        context: str | None = None,
        *,
        trim_memory: bool = True,
    ) -> Factory:
        """The informers a config file declares (the format of `kdi watch
        --config`: informers by name with their options and JMESPath
        indexes, patterns over discovery, defaults). Problems in the file
        raise `ConfigFileError` naming each with its line and column.
        `members` lists what it holds. `trim_memory` as for `Factory()`.
        """
    @property
    def members(self) -> builtins.list[Member]:
        """The entries of the config file (`from_file`) and the informer each
        holds: a pattern has one member per resource it selects. Empty for a
        factory made without a file.
        """
    def informer(
        self,
        resource: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexes: Mapping[str, str] | None = None,
        storage: Storage | None = None,
        metadata_only: bool = False,
    ) -> Informer:
        """The informer of `resource`: any name the cluster knows it by (plural,
        kind, short name, `plural.group`, `plural.version.group`), resolved
        through discovery; a CRD not installed yet is waited for. Options
        here narrow the factory's; `indexes` maps index names to JMESPath
        expressions (an index already there under the same expression is
        kept; another expression under its name is refused). Started at once
        when the factory is.
        """
    def matching(
        self,
        pattern: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexes: Mapping[str, str] | None = None,
        storage: Storage | None = None,
        metadata_only: bool = False,
    ) -> builtins.list[Informer]:
        """The informers of every resource a pattern selects in discovery now:
        `"*.example.com"` (a group glob), `"custom:*"` (resources defined by
        CRDs), `"group:apps"`, `"category:all"`; a plain name gives its one
        informer. Options and `indexes` as for `informer`, for each. A
        one-time selection: a config file's patterns (`from_file`) follow
        CRDs as they come and go.
        """
    def start(self) -> None:
        """Starts every informer asked for so far; those asked for later start
        at once.
        """
    def wait_for_sync(self, timeout: float = 60.0) -> None:
        """Waits until every informer has synced, releasing the GIL; raises
        `NotSyncedError` (`SyncTimeoutError` when the time ran out) for the
        first that has not, saying why.
        """
    async def synced(self, timeout: float = 60.0) -> None:
        """`wait_for_sync` as an awaitable, for asyncio."""
    def wait_for_object(self, obj: object, timeout: float = 30.0) -> int:
        """Waits until every informer caching objects like `obj` (an object
        the server returned from a write) reflects it; returns how many
        there were.
        """
    def wait_until(
        self,
        goal: str,
        informers: Sequence[Informer] | None = None,
        *,
        keys: str | Sequence[str] | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        index: tuple[str, str] | None = None,
        quantifier: Quantifier = "all",
        timeout: float = 30.0,
    ) -> WaitReport:
        """`Informer.wait_until` over several informers at once: until `goal`
        is true of the objects picked in each of `informers` (by default
        every informer of the factory), all of them, any or none. The
        report's objects name their `resource`.
        """
    async def until(
        self,
        goal: str,
        informers: Sequence[Informer] | None = None,
        *,
        keys: str | Sequence[str] | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        index: tuple[str, str] | None = None,
        quantifier: Quantifier = "all",
        timeout: float = 30.0,
    ) -> WaitReport:
        """`wait_until` as an awaitable, for asyncio (the wait runs on a worker
        thread of the event loop's default executor).
        """
    @property
    def informers(self) -> list[Informer]:
        """Every informer asked for."""
    def shutdown(self, timeout: float = 10.0) -> bool:
        """Stops every informer (writing snapshots when asked for), waiting at
        most `timeout` seconds; returns whether everything finished. The
        factory cannot be started again.
        """
    def __enter__(self) -> Factory: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]: ...

def _shutdown_all() -> None:
    """Shuts down every factory not shut down yet (at interpreter exit),
    waiting up to 10 s for each.
    """
