"""What the Python peers of scripts/bench share: their command line, the
datasets' resources and indexes, the two handlers and their burst
bookkeeping, and self-measurement (RSS from /proc/self/status, CPU from
getrusage).

Each peer prints JSON lines on stdout, as the Rust and Go peers do:
`{"event": "synced", ...}` once its cache has synced (the script then starts
the update burst) and one result line at the end, with the same field names
(bench/peers/src/lib.rs).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

# The annotation the writer stamps on each update: "<burst id>:<unix nanos>".
STAMP_ANNOTATION = "bench.kdi.dev/stamp"
# Distinct node-N values in both datasets (by_index queries pick among them).
NODES = 1000

_T = TypeVar("_T")


@dataclass(frozen=True)
class Dataset:
    """A dataset's resource and the three indexes every peer declares."""

    name: str
    group: str
    version: str
    plural: str
    # Index name -> JMESPath expression (the kdi peers' form).
    indexes: dict[str, str]

    @property
    def resource(self) -> str:
        """The resource as `kubectl get` names it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


DATASETS = {
    "crd": Dataset(
        "crd",
        "bench.kdi.dev",
        "v1",
        "widgets",
        {"app": "metadata.labels.app", "node": "spec.nodeName", "tag": "spec.tags"},
    ),
    "configmap": Dataset(
        "configmap",
        "",
        "v1",
        "configmaps",
        {"app": "metadata.labels.app", "node": "data.nodeName", "key": "keys(data)"},
    ),
}


def _duration(text: str) -> float:
    """Seconds from "3s", "500ms" or "3"."""
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    return float(text.removesuffix("s"))


@dataclass(frozen=True)
class Args:
    """The command line every peer takes (the Rust peers' flags)."""

    kubeconfig: str
    dataset: Dataset
    strip_managed_fields: bool
    burst_id: str
    burst_count: int
    queries: int
    settle: float
    timeout: float

    @classmethod
    def parse(cls, argv: Sequence[str] | None = None) -> Args:
        """Parses the flags scripts/bench passes."""
        p = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__)
        p.add_argument("--kubeconfig", required=True, help="kubeconfig of the test server")
        p.add_argument("--dataset", choices=sorted(DATASETS), default="crd")
        p.add_argument("--strip-managed-fields", action="store_true", help="drop metadata.managedFields")
        p.add_argument("--burst-id", default="", help="count updates stamped by this burst (empty: no burst)")
        p.add_argument("--burst-count", type=int, default=0, help="updates the burst writes")
        p.add_argument("--queries", type=int, default=20_000, help="by_index calls to time")
        p.add_argument("--settle", type=_duration, default=3.0, help="wait after sync before reading steady RSS")
        p.add_argument("--timeout", type=_duration, default=900.0, help="give up after this long")
        a = p.parse_args(argv)
        return cls(
            kubeconfig=a.kubeconfig,
            dataset=DATASETS[a.dataset],
            strip_managed_fields=a.strip_managed_fields,
            burst_id=a.burst_id,
            burst_count=a.burst_count,
            queries=a.queries,
            settle=a.settle,
            timeout=a.timeout,
        )

    @property
    def with_burst(self) -> bool:
        """Whether the script sends a burst during this run."""
        return bool(self.burst_id) and self.burst_count > 0


def query_values(queries: int) -> list[str]:
    """The by_index query values: the kdi peer's sequence of random node-N
    (the same fixed-seed xorshift as `query_values` in bench/peers/src/lib.rs)."""
    mask = (1 << 64) - 1
    x = 0x9E37_79B9_7F4A_7C15
    values = []
    for _ in range(queries):
        x ^= (x << 13) & mask
        x ^= x >> 7
        x ^= (x << 17) & mask
        values.append(f"node-{x % NODES}")
    return values


def proc_status_mb(field: str) -> float:
    """A line of /proc/self/status such as VmHWM or VmRSS, in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return -1.0


def reset_peak_rss() -> bool:
    """Resets VmHWM to the current RSS (/proc/self/clear_refs); False when refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def cpu_seconds() -> float:
    """User + system CPU seconds of this process, every thread."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of sorted values (as the other peers compute it)."""
    if not sorted_values:
        return 0.0
    rank = min(max(int(p / 100 * len(sorted_values) + 0.5), 1), len(sorted_values))
    return sorted_values[rank - 1]


def time_each(values: Sequence[str], call: Callable[[str], Sequence[_T]]) -> tuple[list[float], int]:
    """Times `call` on each value, one call at a time, after one untimed pass
    (as every peer does); returns the sorted durations in microseconds and
    the hits (the lengths of the results), counted outside the timing."""
    for value in values:
        call(value)
    durations: list[float] = []
    hits = 0
    clock = time.perf_counter_ns
    for value in values:
        t = clock()
        result = call(value)
        d = clock() - t
        hits += len(result)
        del result
        durations.append(d / 1000)
    durations.sort()
    return durations, hits


def stamp_of(annotations: dict[str, str] | None, burst_id: str) -> int | None:
    """The write time that burst `burst_id` stamped, if the annotations carry it."""
    if not annotations:
        return None
    value = annotations.get(STAMP_ANNOTATION)
    prefix = burst_id + ":"
    if value is None or not value.startswith(prefix):
        return None
    try:
        return int(value[len(prefix):])
    except ValueError:
        return None


class Handlers:
    """The two handlers every peer runs, and the burst bookkeeping they share.

    Handler 1 records the lag (handler time - write stamp) of each stamped
    update; handler 2 keeps a per-namespace tally of objects, the kind of
    bookkeeping a controller does, and notes when it saw each stamped update.
    They may run on different threads: a lock guards what they share.
    """

    def __init__(self, args: Args) -> None:
        self.burst_id = args.burst_id
        self.want = args.burst_count
        self.lags_ms: list[float] = []
        self.per_namespace: Counter[str] = Counter()
        self.seen1 = 0
        self.seen2 = 0
        self.first_stamp: int | None = None
        self.last_seen = 0
        self._lock = threading.Lock()
        self._done = threading.Event()

    def _check_done(self) -> None:
        if self.seen1 >= self.want and self.seen2 >= self.want:
            self._done.set()

    def lag_on_update(self, annotations: dict[str, str] | None) -> None:
        """Handler 1: an object was updated; `annotations` are its new annotations."""
        if not self.burst_id:
            return
        stamp = stamp_of(annotations, self.burst_id)
        if stamp is None:
            return
        now = time.time_ns()
        with self._lock:
            self.lags_ms.append((now - stamp) / 1e6)
            if self.first_stamp is None or stamp < self.first_stamp:
                self.first_stamp = stamp
            self.last_seen = max(self.last_seen, now)
            self.seen1 += 1
            self._check_done()

    def tally(self, namespace: str | None, delta: int) -> None:
        """Handler 2, an object added (`delta` 1) or deleted (-1)."""
        with self._lock:
            self.per_namespace[namespace or ""] += delta

    def saw_update(self, annotations: dict[str, str] | None) -> None:
        """Handler 2, an object updated: notes a stamped update."""
        if not self.burst_id or stamp_of(annotations, self.burst_id) is None:
            return
        now = time.time_ns()
        with self._lock:
            self.last_seen = max(self.last_seen, now)
            self.seen2 += 1
            self._check_done()

    def wait_burst(self, timeout: float) -> None:
        """Waits until both handlers saw the whole burst; raises TimeoutError otherwise."""
        if not self._done.wait(timeout):
            raise TimeoutError(
                f"burst: saw {self.seen1} and {self.seen2} of {self.want} updates before the deadline"
            )

    def burst_result(self) -> dict[str, Any]:
        """Throughput and lag of the burst, as result fields."""
        with self._lock:
            lags = sorted(self.lags_ms)
            span = (self.last_seen - (self.first_stamp or self.last_seen)) / 1e9
        return {
            "burst_updates": self.want,
            "burst_updates_per_s": round(self.want / span, 1) if span > 0 else None,
            "lag_p50_ms": round(percentile(lags, 50), 2),
            "lag_p99_ms": round(percentile(lags, 99), 2),
            "lag_max_ms": round(lags[-1] if lags else 0.0, 2),
        }


class ObjectCounter:
    """What a late handler counts: the objects it took (reading each one's
    name, so that each is really used) and when it took the `want`-th."""

    def __init__(self, want: int) -> None:
        self.want = want
        self.count = 0
        self.name_bytes = 0
        self.done_at: int | None = None
        self._done = threading.Event()
        if want == 0:
            self._done.set()

    def take(self, name: str | None) -> None:
        """Counts one object, whose name is `name`."""
        self.name_bytes += len(name or "")
        self.count += 1
        if self.count == self.want:
            self.done_at = time.perf_counter_ns()
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """Waits until `want` objects were counted; False when `timeout` ran out first."""
        return self._done.wait(timeout)


def end_of_run(result: dict[str, Any], handlers: Handlers, args: Args) -> None:
    """Waits for the update burst (when there is one), then adds the burst
    figures, end and peak RSS and CPU to `result`; burst CPU counts from
    the call, after the by_index queries (as `end_of_run` of the Rust peers)."""
    cpu_before_burst = cpu_seconds()
    if args.with_burst:
        handlers.wait_burst(args.timeout)
        result.update(handlers.burst_result())
        time.sleep(args.settle)
    result["rss_end_mb"] = round(proc_status_mb("VmRSS"), 1)
    result["rss_peak_mb"] = round(proc_status_mb("VmHWM"), 1)
    result["cpu_total_s"] = round(cpu_seconds(), 3)
    result["cpu_burst_s"] = round(cpu_seconds() - cpu_before_burst, 3)
    if args.with_burst and handlers.seen1 > 0:
        result["cpu_per_update_us"] = round(result["cpu_burst_s"] * 1e6 / handlers.seen1, 1)
        result["burst_updates_received"] = handlers.seen1
    result["python"] = sys.version.split()[0]


def emit(value: dict[str, Any]) -> None:
    """Prints one JSON line on stdout."""
    print(json.dumps(value), flush=True)
