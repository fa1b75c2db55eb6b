"""The Python package's peer (`py-kdi`): kube_dynamic_informer's informer of
the dataset's resource with the three indexes the other peers declare
(JMESPath, as the kdi peer) and the two handlers, measuring itself as the
other peers do (bench/peers/src/lib.rs) and printing the same JSON fields.

    python py_kdi.py --kubeconfig PATH [--dataset crd|configmap]
                     [--burst-id ID --burst-count N]

Handler 1 (`on_update`) records the lag of each stamped update from its
annotations; handler 2 (`on_event`) keeps the per-namespace tally. Both are
registered before the start, so handler 2 takes the initial list's Adds.
After sync: the steady RSS (after the settle), `by_index("node", value)`
over the kdi peer's query values, each call timed alone around the call
that returns the CachedObject handles (`by_index_p50_us`, `by_index_p99_us`),
then `index_keys` the same way (`index_keys_p50_us`, `index_keys_p99_us`).
After the burst: a late handler (`on_event`), which receives an Add of every
cached object (`in_initial_list`) and reads each one's name, timed from
`on_event` to its last Add (`replay_s`, `late_handler_events_per_s`), with
the peak RSS reset before (`replay_rss_peak_mb`).

At the end, the informer's `lists_end`, `relists_after_gone_end` and
`watch_requests_end` say whether it listed or watched again during the run.

sync_s runs from the start of this script, before the package is imported
(`import_s` says how long the import took).
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

import sys  # noqa: E402
from typing import Any  # noqa: E402

from kube_dynamic_informer import Event, Factory, Informer  # noqa: E402

from bench_common import (  # noqa: E402
    Args,
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

PEER = "py-kdi"


def main() -> int:
    args = Args.parse()
    if args.strip_managed_fields:
        print("py-kdi: the package has no option to strip managedFields", file=sys.stderr)
        return 2
    handlers = Handlers(args)

    def tally(event: Event) -> None:
        if event.kind == "Add":
            handlers.tally(event.object.namespace, 1)
        elif event.kind == "Delete":
            handlers.tally(event.object.namespace, -1)
        else:
            handlers.saw_update(event.object.annotations)

    with Factory(args.kubeconfig) as factory:
        informer = factory.informer(args.dataset.resource, indexes=args.dataset.indexes)
        lag = informer.on_update(lambda event: handlers.lag_on_update(event.object.annotations), name="lag")
        count = informer.on_event(tally, name="tally")
        factory.start()
        informer.wait_for_sync(timeout=args.timeout)
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
            "storage": "compact",
            "dataset": args.dataset.name,
            "objects": objects,
            "strip": False,
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
            "list_requests": informer.stats["list_requests"],
        }
        emit({"event": "synced", "peer": PEER, "objects": objects})

        end_of_run(result, handlers, args)
        # Whether the informer listed or watched again during the run (a
        # relist after 410 Gone delays every event behind it).
        stats = informer.stats
        result["lists_end"] = stats["lists"]
        result["relists_after_gone_end"] = stats["relists_after_gone"]
        result["watch_requests_end"] = stats["watch_requests"]
        result.update(replay(informer, args.timeout))
        lag.remove()
        count.remove()
    emit(result)
    return 0


def replay(informer: Informer, timeout: float) -> dict[str, Any]:
    """A late handler: `on_event` after the run, counting each replayed Add
    and reading its name until it has had every cached object; then removed."""
    counter = ObjectCounter(len(informer))

    def late(event: Event) -> None:
        if event.kind == "Add" and event.in_initial_list:
            counter.take(event.object.name)

    reset = reset_peak_rss()
    started = time.perf_counter_ns()
    handler = informer.on_event(late, name="bench-replay")
    finished = counter.wait(timeout)
    peak = round(proc_status_mb("VmHWM"), 1) if reset else None
    handler.remove()
    out: dict[str, Any] = {
        "replay_objects": counter.count,
        "replay_name_bytes": counter.name_bytes,
        "replay_rss_peak_mb": peak,
    }
    if finished and counter.done_at is not None:
        replay_s = (counter.done_at - started) / 1e9
        out["replay_s"] = round(replay_s, 4)
        out["late_handler_events_per_s"] = round(counter.count / replay_s, 0) if replay_s > 0 else None
    else:
        out["replay_error"] = f"{counter.count} of {counter.want} objects within {timeout} s"
    return out


if __name__ == "__main__":
    sys.exit(main())
