#!/usr/bin/env python3
"""scripts/bench's results: from raw records to results.json to markdown.

    bench/render.py assemble RECORDS.jsonl CONFIG.json ENV.json > results.json
    bench/render.py render RESULTS.json [--doc BENCHMARKS.md]
    bench/render.py svg RESULTS.json OUTDIR [--stem NAME]

`assemble` groups the JSON lines the peers, the loader and the script wrote
(each tagged with "kind", "dataset" and "n") by dataset. `render` prints one
table per dataset and the targets with where we stand; with --doc it
also replaces the text between the markers <!-- bench:results:begin --> and
<!-- bench:results:end --> in that file.

Besides the main table, each dataset gets (when the run has them) a table of
the Python peers beside the floor and kdi ("Python peers": runs named py-*, which the
other tables leave out), one of
the kdi peer's reads per storage mode, one of its phases after the run
("Reads, replay and resync": a column per kdi run), one of the runs with
other allocators (run names such as "kdi+mimalloc"), and one of the relist phase (records of
kind "relist"). The targets of the compact storage get a table of their own.

`svg` draws charts of the results into OUTDIR (bench/charts.py says which): SVG written by hand, no
package beyond Python's standard library.
"""
import json
import os
import sys

BEGIN, END = "<!-- bench:results:begin -->", "<!-- bench:results:end -->"
PEERS = ["floor", "kdi", "kdi-objects", "kdi-compact", "kdi-streaming-list", "kdi-strip-per-page", "kdi-cold-restart",
         "kdi-warm-restart", "client-go", "kube-runtime", "py-kdi", "py-dict-informer"]
PEER_NAMES = {
    "floor": "floor: paged list, bytes only",
    "kdi": "**kube-dynamic-informer**",
    "kdi-objects": "kube-dynamic-informer, objects storage",
    "kdi-compact": "**kube-dynamic-informer, compact storage**",
    "kdi-strip-per-page": "kube-dynamic-informer, strip in a wrapping ListWatch",
    "kdi-streaming-list": "kube-dynamic-informer, streaming list",
    "kdi-cold-restart": "kube-dynamic-informer, restart without a snapshot",
    "kdi-warm-restart": "kube-dynamic-informer, restart from a snapshot",
    "client-go": "client-go dynamicinformer",
    "kube-runtime": "kube-runtime watcher+reflector",
    "py-kdi": "**kube_dynamic_informer (Python)**",
    "py-dict-informer": "Python dict informer (official client)",
}


def fmt(v: object, digits: int = 1) -> str:
    """A table cell: "–" for None, yes/no for a bool, a number with `digits` decimals and thousands separated."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        if digits > 0 or isinstance(v, float):
            return f"{v:,.{digits}f}"
        return f"{v:,}"
    return str(v)


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None when either is missing or b is 0."""
    if a is None or b in (None, 0):
        return None
    return a / b


def dataset_label(ds: dict) -> str:
    """A dataset's heading: its kind and size."""
    kind = "Widget CRD (~2 KB)" if ds["dataset"] == "crd" else "ConfigMap (~4 KB)"
    return f"{kind}, {ds['n']:,} objects"


def is_allocator_run(r: dict) -> bool:
    """A run of kdi with another allocator than the default (scripts/bench --allocators)."""
    return "+" in r.get("run", "")


def is_restart_run(r: dict) -> bool:
    """A run of scripts/bench's restart runs (cold or warm)."""
    return r.get("peer") in ("kdi-cold-restart", "kdi-warm-restart")


def is_python_run(r: dict) -> bool:
    """A run of a Python peer (bench/python), which has a table of its own."""
    return r.get("peer", "").startswith("py-")


def main_runs(ds: dict) -> list[dict]:
    """A dataset's runs but those with another allocator, the restart runs and the Python peers."""
    return [r for r in ds["runs"] if not is_allocator_run(r) and not is_restart_run(r) and not is_python_run(r)]


# The target of the Python package's time to sync, over the floor (a paged list, bytes only).
PYTHON_SYNC_GOAL = 1.1


def late_handler_rate(r: dict) -> float | None:
    """Objects a second a late handler took: the Python peers' own figure, else the kdi peer's replay."""
    if r.get("late_handler_events_per_s") is not None:
        return r["late_handler_events_per_s"]
    return ratio(r.get("replay_objects"), r.get("replay_s"))


def python_table(ds: dict, judged: bool) -> list[str]:
    """The Python peers beside the floor and kdi (compact storage, the Rust peer); with `judged` (the
    largest Widget set, as for the other targets), the package's target of time to sync."""
    py = [r for r in ds["runs"] if is_python_run(r)]
    if not py:
        return []
    floor = next((r for r in main_runs(ds) if r["peer"] == "floor"), None)
    rust = [r for r in (in_storage(main_runs(ds), "compact"), in_storage(main_runs(ds), "compact", True)) if r]
    out = ["Python peers (bench/python): the package's informer (py-kdi) and a dict-based informer written with "
           "the official `kubernetes` client (py-dict-informer: a paged list into a dict, a watch, dict indexes), "
           "beside the floor and the Rust kdi peer. Their sync s runs from the script's start, before the imports "
           "(import s); by_index returns the cached objects (CachedObject handles, the dicts), index_keys their "
           "keys; late handler: a handler added after the burst taking every cached object (the package's "
           "replay through `on_event`; the dict's objects iterated for the dict informer), objects per second.\n",
           "| peer | strip managedFields | sync s | × floor | import s | RSS steady MiB | RSS peak MiB | CPU to sync s "
           "| by_index p50 µs | by_index p99 µs | index_keys p50 µs | burst updates/s | CPU µs / update "
           "| lag p50 ms | lag p99 ms | late handler objects/s |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    if floor:
        out.append(f"| {PEER_NAMES['floor']} | – | {fmt(floor['sync_s'], 2)} | 1.00 | – | – | "
                   f"{fmt(floor.get('rss_peak_mb'))} | – | – | – | – | – | – | – | – | – |")
    for r in sorted(rust + py, key=order_key):
        out.append("| " + " | ".join([
            peer_name(r["peer"]), fmt(r.get("strip")), fmt(r.get("sync_s"), 2),
            fmt(ratio(r.get("sync_s"), floor and floor["sync_s"]), 2), fmt(r.get("import_s"), 2),
            fmt(r.get("rss_steady_mb")), fmt(r.get("rss_peak_mb")), fmt(r.get("cpu_sync_s"), 2),
            fmt(r.get("by_index_p50_us"), 2), fmt(r.get("by_index_p99_us"), 2), fmt(r.get("index_keys_p50_us"), 2),
            fmt(r.get("burst_updates_per_s"), 0), fmt(per_update(r), 0), fmt(r.get("lag_p50_ms")),
            fmt(r.get("lag_p99_ms")), fmt(late_handler_rate(r), 0),
        ]) + " |")
    pk = next((r for r in py if r["peer"] == "py-kdi" and not r.get("strip")), None)
    if judged and pk and floor:
        r = ratio(pk["sync_s"], floor["sync_s"])
        mark = "met" if r is not None and r <= PYTHON_SYNC_GOAL else "**missed**"
        out.append(f"\nTarget: py-kdi's time to sync ≤ {PYTHON_SYNC_GOAL}× the floor: {fmt(pk['sync_s'], 2)} s vs "
                   f"{fmt(floor['sync_s'], 2)} s ({fmt(r, 2)}×), {mark}.")
    out.append("")
    return out


def restart_table(ds: dict) -> list[str]:
    """A restart without and with a snapshot (scripts/bench's restart runs)."""
    runs = {r["peer"]: r for r in ds["runs"] if is_restart_run(r)}
    if not runs:
        return []
    cold = runs.get("kdi-cold-restart")
    storage = (cold or next(iter(runs.values()))).get("storage", "objects")
    out = [f"A restart without and with a snapshot ({storage} storage, managedFields kept; the cold start lists and "
           "writes its snapshot when it stops, the warm one starts from it; stop s includes writing the snapshot):\n",
           "| peer | sync s | × cold | list requests | served for its lists MiB | server CPU s | RSS steady MiB "
           "| RSS peak MiB | peak × steady | stop s |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for name in ("kdi-cold-restart", "kdi-warm-restart"):
        r = runs.get(name)
        if r is None:
            continue
        out.append("| " + " | ".join([
            peer_name(name), fmt(r.get("sync_s"), 2), fmt(ratio(r.get("sync_s"), cold and cold.get("sync_s")), 2),
            fmt(r.get("list_requests"), 0), fmt(r.get("served_list_mb")), fmt(r.get("server_cpu_s"), 2),
            fmt(r.get("rss_steady_mb")), fmt(r.get("rss_peak_mb")),
            fmt(ratio(r.get("rss_peak_mb"), r.get("rss_steady_mb")), 2), fmt(r.get("stop_s"), 2),
        ]) + " |")
    out.append("")
    return out


def peer_name(peer: str) -> str:
    """A peer's name in the tables."""
    return PEER_NAMES.get(peer, peer)


def per_update(r: dict) -> float | None:
    """CPU µs per update during the burst, from the run's burst figures."""
    return r["cpu_burst_s"] * 1e6 / r["burst_updates"] if r.get("burst_updates") else None


def order_key(r: dict) -> tuple[bool, int]:
    """Rows in PEERS order, managedFields kept before stripped."""
    order = {p: i for i, p in enumerate(PEERS)}
    return (r.get("strip", False), order.get(r["peer"], 9))


def reads_table(ds: dict) -> list[str]:
    """The kdi peer's Lister reads, one row per storage mode and strip."""
    rows = [r for r in main_runs(ds) if r.get("get_p50_us") is not None]
    if not rows:
        return []
    sel = next((r.get("label_selector") for r in rows if r.get("label_selector")), None)
    out = [f"Reads of the kdi peer after its run ({fmt(rows[0].get('get_calls'), 0)} `get` of random keys; "
           f"`list_all` and `list({sel})` timed {rows[0].get('list_repeats')} times each, the median shown; "
           "`by_index` as above). Reads RSS peak is the peak RSS while they ran, reset before them.\n",
           "| peer | strip managedFields | get p50 µs | get p99 µs | list_all ms | label list ms | label list hits "
           "| by_index p50 µs | by_index p99 µs | reads RSS peak MiB |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in sorted(rows, key=order_key):
        out.append("| " + " | ".join([
            peer_name(r["peer"]), fmt(r.get("strip")), fmt(r.get("get_p50_us"), 2), fmt(r.get("get_p99_us"), 2),
            fmt(r.get("list_all_ms"), 2), fmt(r.get("label_list_ms"), 2), fmt(r.get("label_list_hits"), 0),
            fmt(r.get("by_index_p50_us"), 2), fmt(r.get("by_index_p99_us"), 2), fmt(r.get("reads_rss_peak_mb")),
        ]) + " |")
    out.append("")
    return out


# The rows of the "Reads, replay and resync" table: label, field of the kdi result, digits.
PHASE_ROWS = [
    ("storage", "storage", 0),
    ("objects", "objects", 0),
    ("RSS before the phases MiB", "rss_end_mb", 1),
    ("replay s", "replay_s", 4),
    ("replay RSS peak MiB", "replay_rss_peak_mb", 1),
    ("resync s", "resync_s", 4),
    ("resync RSS peak MiB", "resync_rss_peak_mb", 1),
    ("reads RSS peak MiB", "reads_rss_peak_mb", 1),
    ("get p50 µs", "get_p50_us", 2),
    ("get + object() p50 µs", "get_object_p50_us", 2),
    ("by_index p50 µs", "by_index_p50_us", 2),
    ("list_all ms", "list_all_ms", 2),
    ("label list ms", "label_list_ms", 2),
    ("decode (object()) p50 µs", "decode_p50_us", 3),
    ("DynamicObject::clone p50 µs", "clone_p50_us", 3),
    ("object() p50 ÷ clone p50", lambda r: ratio(r.get("decode_p50_us"), r.get("clone_p50_us")), 2),
    ("write_json MiB/s", "write_json_mb_s", 1),
    ("write_json MiB written", lambda r: r["write_json_bytes"] / 2**20 if r.get("write_json_bytes") else None, 1),
    ("CPU µs / update (burst)", lambda r: r.get("cpu_per_update_us", per_update(r)), 1),
    ("RSS after the phases MiB", "rss_after_phases_mb", 1),
    ("RSS after idle MiB", "rss_after_idle_mb", 1),
    ("malloc heap in use before the phases MiB", "heap_before_phases_mb", 1),
    ("malloc heap in use after the phases MiB", "heap_after_phases_mb", 1),
    ("malloc heap in use after idle MiB", "heap_after_idle_mb", 1),
    ("decode all s", "decode_all_s", 3),
    ("decode all RSS peak MiB", "decode_all_peak_mb", 1),
    ("RSS holding every object decoded MiB", "decode_all_rss_held_mb", 1),
    ("RSS after dropping them MiB", "decode_all_rss_after_mb", 1),
    ("RSS after dropping them ÷ RSS steady", lambda r: ratio(r.get("decode_all_rss_after_mb"), r.get("rss_steady_mb")), 2),
    ("malloc heap in use holding them / after MiB",
     lambda r: (f"{fmt(r['decode_all_heap_held_mb'])} / {fmt(r.get('decode_all_heap_after_mb'))}"
                if r.get("decode_all_heap_held_mb") is not None else None), 1),
]


def phases_table(ds: dict) -> list[str]:
    """The kdi peer's phases after its run (replay, resync, reads, decode, idle), a column per run."""
    runs = sorted((r for r in main_runs(ds) if r.get("replay_s") is not None or r.get("replay_error")),
                  key=order_key)
    if not runs:
        return []
    idle = next((r.get("idle_s") for r in runs if r.get("idle_s")), 6)
    period = next((r.get("resync_period_s") for r in runs if r.get("resync_period_s")), 1)
    after_all = next((r.get("decode_all_after_s") for r in runs if r.get("decode_all_after_s")), 10)
    out = ["Reads, replay and resync: the kdi peer after its run (and burst), one phase after the other, each "
           "with the peak RSS reset before it. Replay: a handler added late takes an Add of every cached object "
           "(reading its name), from `add_handler` to its last Add. Resync: a handler asking a resync every "
           f"{fmt(period, 0)} s takes one resync of every object, from its first to its last. Reads as in the "
           "table above, all of them handles; get + object() also takes the whole `DynamicObject`. Decode: "
           "`CachedObject::object()` on up to 2,000 objects spread over the cache, which nobody holds decoded "
           "(a decode with compact storage, a pointer copy with objects storage); clone: `DynamicObject::clone` "
           "of the same objects, decoded beforehand. write_json: `CachedObject::write_json` of every cached "
           "object into one buffer cleared before each, the bytes written over the whole pass's time "
           "(MiB = 2^20 bytes). CPU / update: the peer's CPU during the burst over the updates it "
           f"received. RSS after idle: {fmt(idle, 0)} s after the phases, once the informer has freed what "
           "dropped decoded objects keep; malloc heap in use is what glibc's malloc has handed out and not had "
           "back (`mallinfo2`), which, unlike the RSS, goes down when memory is freed but kept by malloc. "
           "Decode all, last: `object()` of every cached object, all held at once (peak reset before), then "
           f"dropped; the RSS after is read {fmt(after_all, 0)} s after the drop.\n",
           "| | " + " | ".join(peer_name(r["peer"]) + (", managedFields stripped" if r.get("strip") else "")
                               for r in runs) + " |",
           "|---|" + "--:|" * len(runs)]
    for label, field, digits in PHASE_ROWS:
        cells = []
        for r in runs:
            v = field(r) if callable(field) else r.get(field)
            if v is None and field == "replay_s" and r.get("replay_error"):
                v = r["replay_error"]
            if v is None and field == "resync_s" and r.get("resync_error"):
                v = r["resync_error"]
            cells.append(fmt(v, digits))
        if all(c == "–" for c in cells):
            continue
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def allocators_table(ds: dict) -> list[str]:
    """kdi with each allocator, beside the default (glibc) runs of the same storage mode."""
    alloc = [r for r in ds["runs"] if is_allocator_run(r)]
    if not alloc:
        return []
    modes = {r["peer"] for r in alloc}
    base = [r for r in main_runs(ds) if r["peer"] in modes and not r.get("strip")]
    out = ["Allocators (kdi, managedFields kept; RSS after burst is read once the burst's updates were "
           "handled and the settle time passed):\n",
           "| peer | allocator | sync s | RSS steady MiB | RSS after burst MiB | RSS peak MiB | CPU to sync s "
           "| CPU µs / update | lag p99 ms |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for r in sorted(base + alloc, key=lambda r: (order_key(r), r.get("run", ""))):
        out.append("| " + " | ".join([
            peer_name(r["peer"]), r.get("allocator", "glibc"), fmt(r.get("sync_s"), 2), fmt(r.get("rss_steady_mb")),
            fmt(r.get("rss_end_mb")), fmt(r.get("rss_peak_mb")), fmt(r.get("cpu_sync_s"), 2),
            fmt(per_update(r), 0), fmt(r.get("lag_p99_ms")),
        ]) + " |")
    out.append("")
    return out


def relist_table(ds: dict) -> list[str]:
    """The relist phase: a row per kdi storage mode and strip."""
    rel = ds.get("relists") or []
    if not rel:
        return []
    out = ["Relist after 410 Gone (the API server restarted under a synced kdi peer; relist s is from the "
           "410 to the watch that follows the list; wait s from the restart's start to the 410):\n",
           "| peer | strip managedFields | RSS before MiB | relist peak MiB | × before | RSS after MiB "
           "| relist s | CPU s | wait s | objects |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in sorted(rel, key=order_key):
        if r.get("relist_error"):
            out.append(f"| {peer_name(r['peer'])} | {fmt(r.get('strip'))} | {fmt(r.get('relist_rss_before_mb'))} "
                       f"| – | – | – | – | – | – | {r['relist_error']} |")
            continue
        out.append("| " + " | ".join([
            peer_name(r["peer"]), fmt(r.get("strip")), fmt(r.get("relist_rss_before_mb")),
            fmt(r.get("relist_peak_mb")), fmt(ratio(r.get("relist_peak_mb"), r.get("relist_rss_before_mb")), 2),
            fmt(r.get("relist_rss_after_mb")), fmt(r.get("relist_s"), 2), fmt(r.get("relist_cpu_s"), 2),
            fmt(r.get("relist_wait_s"), 1), fmt(r.get("relist_objects"), 0),
        ]) + " |")
    out.append("")
    return out


def tables(results: dict) -> list[str]:
    """Every dataset's tables, in the order of the run."""
    out = []
    crd = [d for d in results["datasets"] if d["dataset"] == "crd"]
    judged = max(crd, key=lambda d: d["n"]) if crd else None
    for ds in results["datasets"]:
        runs = main_runs(ds)
        floor = next((r for r in runs if r["peer"] == "floor"), None)
        out.append(f"### {dataset_label(ds)}\n")
        if ds.get("load"):
            ld = ds["load"]
            out.append(
                f"Loaded (create, {results['config'].get('load_concurrency', 16)} in flight) at {fmt(ld.get('per_second'))} objects/s; "
                f"one object is ~{fmt(ds.get('object_bytes'), 0)} bytes of JSON"
                + (f"; a full list is {fmt(floor['list_bytes'] / 2**20)} MiB" if floor else "")
                + ".\n"
            )
        out.append(
            "| peer | strip managedFields | sync s | × floor | RSS steady MiB | RSS peak MiB "
            "| CPU to sync s | CPU total s | burst updates/s | CPU µs / update | lag p50 ms | lag p99 ms "
            "| by_index p50 µs | by_index p99 µs |"
        )
        out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in sorted(runs, key=order_key):
            peer = r["peer"]
            scan = " (scan)" if r.get("by_index_scan") else ""
            rss_steady = r.get("rss_steady_mb")
            if peer == "floor":
                row = [PEER_NAMES[peer], "–", fmt(r["sync_s"], 2), "1.00", "–", fmt(r.get("rss_peak_mb")),
                       "–", fmt(r.get("cpu_s"), 2), "–", "–", "–", "–", "–", "–"]
            else:
                row = [
                    peer_name(peer),
                    fmt(r.get("strip")),
                    fmt(r.get("sync_s"), 2),
                    fmt(ratio(r.get("sync_s"), floor and floor["sync_s"]), 2),
                    fmt(rss_steady),
                    fmt(r.get("rss_peak_mb")),
                    fmt(r.get("cpu_sync_s"), 2),
                    fmt(r.get("cpu_total_s"), 2),
                    fmt(r.get("burst_updates_per_s"), 0),
                    fmt(r["cpu_burst_s"] * 1e6 / r["burst_updates"], 0) if r.get("burst_updates") else "–",
                    fmt(r.get("lag_p50_ms")),
                    fmt(r.get("lag_p99_ms")),
                    fmt(r.get("by_index_p50_us"), 2) + scan,
                    fmt(r.get("by_index_p99_us"), 2) + scan,
                ]
            out.append("| " + " | ".join(row) + " |")
        if ds.get("bursts"):
            rates = "; ".join(
                f"during {b['peer']}'s run {fmt(b.get('writes_per_second'), 0)} writes/s, request latency "
                f"p50 {fmt(b.get('write_latency_p50_ms'))} ms / p99 {fmt(b.get('write_latency_p99_ms'))} ms"
                for b in ds["bursts"])
            out.append(f"\nThe burst writer ({ds['burst_count']:,} stamped merge patches, "
                       f"{results['config']['burst_concurrency']} in flight) achieved: {rates}. "
                       "Lag is counted from just before the write request is sent, so it includes the "
                       "request latency; CPU µs / update is the peer's CPU time from its synced line to "
                       "the end of the burst divided by the updates it handled.")
        out.append("")
        out.extend(python_table(ds, ds is judged))
        out.extend(reads_table(ds))
        out.extend(phases_table(ds))
        out.extend(allocators_table(ds))
        out.extend(relist_table(ds))
        out.extend(restart_table(ds))
    return out


def find(ds: dict, peer: str, strip: bool = False) -> dict | None:
    """The main run of `peer` with or without managedFields."""
    return next((r for r in main_runs(ds) if r["peer"] == peer and r.get("strip", False) == strip), None)


# kdi's runs in one storage or the other: named kdi and kdi-objects since compact storage is the
# default, kdi and kdi-compact before (each result says its storage).
KDI_STORAGE_RUNS = ("kdi", "kdi-objects", "kdi-compact")


def in_storage(runs: list[dict], storage: str, strip: bool = False) -> dict | None:
    """The kdi run in `storage` (either name it had), without a relist error."""
    return next((r for r in runs if r["peer"] in KDI_STORAGE_RUNS and r.get("storage", "objects") == storage
                 and r.get("strip", False) == strip and not r.get("relist_error")), None)


# The goal of `write_json`'s throughput, in bytes a second (500 MB/s; the peer reports MiB/s).
WRITE_JSON_GOAL_BYTES_S = 500e6


def compact_targets(results: dict) -> list[str]:
    """The compact storage's targets: memory against client-go (largest Widget set and the
    ConfigMaps), sync, burst CPU against objects mode, lag, relist; reads beside objects mode."""
    crd = [d for d in results["datasets"] if d["dataset"] == "crd"]
    cms = [d for d in results["datasets"] if d["dataset"] == "configmap"]
    sets = ([max(crd, key=lambda d: d["n"])] if crd else []) + ([max(cms, key=lambda d: d["n"])] if cms else [])
    if not any(in_storage(main_runs(d), "compact") or in_storage(main_runs(d), "compact", True) for d in sets):
        return []
    rows = []

    def row(name, target, ours, ok):
        mark = "–" if ok is None else ("met" if ok else "**missed**")
        rows.append(f"| {name} | {target} | {ours} | {mark} |")

    for ds in sets:
        short = f"{ds['n']:,} {'Widgets' if ds['dataset'] == 'crd' else 'ConfigMaps'}"
        for strip, label in ((False, "managedFields kept"), (True, "managedFields stripped")):
            c, g = in_storage(main_runs(ds), "compact", strip), find(ds, "client-go", strip)
            if not (c and g):
                continue
            for field, what in (("rss_steady_mb", "Steady RSS"), ("rss_peak_mb", "Peak RSS")):
                r = ratio(c.get(field), g.get(field))
                row(f"{what}, {label} ({short})", "≤ 0.5× client-go",
                    f"{fmt(c.get(field))} vs {fmt(g.get(field))} MiB ({fmt(r, 2)}×)", None if r is None else r <= 0.5)
    if crd:
        ds = sets[0]
        short = f"{ds['n']:,} Widgets"
        c, o = in_storage(main_runs(ds), "compact"), in_storage(main_runs(ds), "objects")
        g, fl = find(ds, "client-go"), find(ds, "floor")
        if c and g:
            row(f"Time to sync vs client-go ({short})", "≤ client-go",
                f"{fmt(c['sync_s'], 2)} s vs {fmt(g['sync_s'], 2)} s ({fmt(ratio(c['sync_s'], g['sync_s']), 2)}×)",
                c["sync_s"] <= g["sync_s"])
        if c and fl:
            r = ratio(c["sync_s"], fl["sync_s"])
            row(f"Time to sync vs raw list ({short})", "≤ 1.2× floor", f"{fmt(r, 2)}× ({fmt(fl['sync_s'], 2)} s floor)",
                r <= 1.2)
        if c and o and per_update(c) is not None and per_update(o) is not None:
            r = ratio(per_update(c), per_update(o))
            row(f"CPU per update during the burst ({short})", "≤ 1.2× objects mode",
                f"{fmt(per_update(c), 0)} vs {fmt(per_update(o), 0)} µs ({fmt(r, 2)}×)", r <= 1.2)
        if c and g and c.get("lag_p99_ms") is not None and g.get("lag_p99_ms") is not None:
            row(f"Lag p99 during the burst ({short})", "≤ client-go",
                f"{fmt(c['lag_p99_ms'])} vs {fmt(g['lag_p99_ms'])} ms", c["lag_p99_ms"] <= g["lag_p99_ms"])
        for strip, label in ((False, "managedFields kept"), (True, "managedFields stripped")):
            rc = in_storage(ds.get("relists") or [], "compact", strip)
            if rc:
                r = ratio(rc.get("relist_peak_mb"), rc.get("relist_rss_before_mb"))
                ro = in_storage(ds.get("relists") or [], "objects", strip)
                beside = (f"; objects mode {fmt(ratio(ro.get('relist_peak_mb'), ro.get('relist_rss_before_mb')), 2)}×"
                          if ro else "")
                row(f"Peak RSS during a 410 relist, {label} ({short})", "≤ 1.3× steady before",
                    f"{fmt(rc['relist_peak_mb'])} vs {fmt(rc['relist_rss_before_mb'])} MiB ({fmt(r, 2)}×){beside}",
                    None if r is None else r <= 1.3)
        if c and c.get("decode_p50_us") is not None and c.get("clone_p50_us") is not None:
            r = ratio(c["decode_p50_us"], c["clone_p50_us"])
            row(f"`object()` p50 of an object nobody holds ({short})", "≤ 1.2× `DynamicObject::clone` p50",
                f"{fmt(c['decode_p50_us'], 2)} vs {fmt(c['clone_p50_us'], 2)} µs ({fmt(r, 2)}×)",
                None if r is None else r <= 1.2)
        if c and c.get("write_json_mb_s") is not None:
            ours_mb_s, theirs = c["write_json_mb_s"], o and o.get("write_json_mb_s")
            fast = ours_mb_s * 2**20 >= WRITE_JSON_GOAL_BYTES_S
            text = f"{fmt(ours_mb_s * 2**20 / 1e6)} MB/s ({fmt(ours_mb_s)} MiB/s)"
            if theirs:
                text += f" vs {fmt(theirs * 2**20 / 1e6)} MB/s in objects mode ({fmt(ratio(ours_mb_s, theirs), 2)}×)"
            row(f"`write_json` of every object ({short})",
                f"≥ {WRITE_JSON_GOAL_BYTES_S / 1e6:.0f} MB/s and faster than objects mode", text,
                False if not fast else (ours_mb_s > theirs if theirs else None))
        if c and c.get("decode_all_rss_after_mb") is not None:
            r = ratio(c["decode_all_rss_after_mb"], c.get("rss_steady_mb"))
            after = fmt(c.get("decode_all_after_s", 10), 0)
            row(f"RSS {after} s after dropping every object decoded at once ({short})", "≤ 2× steady RSS",
                f"{fmt(c['decode_all_rss_after_mb'])} vs {fmt(c.get('rss_steady_mb'))} MiB ({fmt(r, 2)}×); "
                f"{fmt(c.get('decode_all_rss_held_mb'))} MiB while held",
                None if r is None else r <= 2)
        if c and o:
            def beside(field, unit, digits=2):
                a, b = c.get(field), o.get(field)
                if a is None or b is None:
                    return None
                return f"{fmt(a, digits)} vs {fmt(b, digits)} {unit} ({fmt(ratio(a, b), 2)}×)"
            for name, p50, p99, unit in (("get", "get_p50_us", "get_p99_us", "µs"),
                                          ("by_index", "by_index_p50_us", "by_index_p99_us", "µs")):
                a, b = beside(p50, unit), beside(p99, unit)
                if a and b:
                    row(f"{name} p50 / p99 ({short})", "beside objects mode", f"p50 {a}; p99 {b}", None)
            a = beside("list_all_ms", "ms")
            if a:
                row(f"list_all ({short})", "beside objects mode", a, None)
            a = beside("label_list_ms", "ms")
            if a:
                row(f"label-selector list, {fmt(c.get('label_list_hits'), 0)} hits ({short})", "beside objects mode",
                    f"`{c.get('label_selector')}`: {a}", None)
    if not rows:
        return []
    return ["### Targets of the compact storage\n", "| target | goal | this run | |",
            "|---|---|---|---|", *rows, ""]


def targets(results: dict) -> list[str]:
    """The targets, judged on the largest CRD dataset of the run."""
    crd = [d for d in results["datasets"] if d["dataset"] == "crd"]
    if not crd:
        return []
    ds = max(crd, key=lambda d: d["n"])
    kdi, cg, fl = find(ds, "kdi"), find(ds, "client-go"), find(ds, "floor")
    kdi_s, cg_s = find(ds, "kdi", True), find(ds, "client-go", True)
    rows = []

    def row(name, target, ours, ok):
        mark = "–" if ok is None else ("met" if ok else "**missed**")
        rows.append(f"| {name} | {target} | {ours} | {mark} |")

    if kdi and cg:
        row("Time to sync vs client-go", "≤ client-go",
            f"{fmt(kdi['sync_s'], 2)} s vs {fmt(cg['sync_s'], 2)} s ({fmt(ratio(kdi['sync_s'], cg['sync_s']), 2)}×)",
            kdi["sync_s"] <= cg["sync_s"])
    if kdi and fl:
        r = ratio(kdi["sync_s"], fl["sync_s"])
        row("Time to sync vs raw list", "≤ 1.5× floor", f"{fmt(r, 2)}× ({fmt(fl['sync_s'], 2)} s floor)", r <= 1.5)
    for a, b, label in ((kdi, cg, "with managedFields"), (kdi_s, cg_s, "managedFields stripped")):
        if a and b:
            r = ratio(a["rss_peak_mb"], b["rss_peak_mb"])
            row(f"Peak RSS, {label}", "≤ 0.5× client-go",
                f"{fmt(a['rss_peak_mb'])} vs {fmt(b['rss_peak_mb'])} MiB ({fmt(r, 2)}×)", r <= 0.5)
    if kdi and cg and kdi.get("burst_updates_per_s") and cg.get("burst_updates_per_s"):
        a, b = kdi["burst_updates_per_s"], cg["burst_updates_per_s"]
        # The writer, not the informer, sets the pace; within 3% is the same pace.
        cpu = lambda r: r["cpu_burst_s"] * 1e6 / r["burst_updates"]
        row("Update throughput", "≥ client-go",
            f"{fmt(a, 0)} vs {fmt(b, 0)} updates/s (the writer's pace, see below); "
            f"{fmt(cpu(kdi), 0)} vs {fmt(cpu(cg), 0)} CPU µs per update; "
            f"lag p50 {fmt(kdi['lag_p50_ms'])} vs {fmt(cg['lag_p50_ms'])} ms, "
            f"p99 {fmt(kdi['lag_p99_ms'])} vs {fmt(cg['lag_p99_ms'])} ms",
            a >= 0.97 * b)
    if kdi and kdi.get("by_index_p99_us") is not None:
        row(f"by_index p99 at {ds['n']:,} objects", "< 10 µs",
            f"{fmt(kdi['by_index_p99_us'], 2)} µs (p50 {fmt(kdi['by_index_p50_us'], 2)} µs, "
            f"{fmt(kdi.get('by_index_hits_avg'))} objects a call)",
            kdi["by_index_p99_us"] < 10)
    restarts = {r["peer"]: r for r in ds["runs"] if is_restart_run(r)}
    cold, warm = restarts.get("kdi-cold-restart"), restarts.get("kdi-warm-restart")
    if cold and warm:
        r = ratio(warm["sync_s"], cold["sync_s"])
        row("Warm restart: time to sync", "≤ 0.1× a cold start",
            f"{fmt(warm['sync_s'], 2)} s vs {fmt(cold['sync_s'], 2)} s ({fmt(r, 2)}×)", r <= 0.1)
        row("Warm restart: list requests", "0",
            f"{fmt(warm.get('list_requests'), 0)} (cold: {fmt(cold.get('list_requests'), 0)}); "
            f"{fmt(warm.get('served_list_mb'))} MiB listed (cold: {fmt(cold.get('served_list_mb'))})",
            warm.get("list_requests") == 0)
        r = ratio(warm.get("rss_peak_mb"), warm.get("rss_steady_mb"))
        row("Warm restart: peak RSS", "≤ 1.3× steady",
            f"{fmt(warm.get('rss_peak_mb'))} vs {fmt(warm.get('rss_steady_mb'))} MiB ({fmt(r, 2)}×)",
            r is not None and r <= 1.3)
    if not rows:
        return []
    return [f"### Targets ({dataset_label(ds)})\n", "| target | goal | this run | |", "|---|---|---|---|", *rows, ""]


def environment(results: dict) -> list[str]:
    """The run's command and machine."""
    env = results.get("env", {})
    cfg = results.get("config", {})
    lines = ["### Run\n"]
    lines.append(f"- Command: `{cfg.get('command', 'scripts/bench')}`")
    for key, label in (("date", "Date"), ("git", "Commit"), ("cpu", "CPU"), ("cores", "Cores"),
                       ("memory", "Memory"), ("kernel", "Kernel"), ("go", "Go"), ("rustc", "rustc"),
                       ("load_before", "Load average before"), ("load_after", "Load average after")):
        if env.get(key):
            lines.append(f"- {label}: {env[key]}")
    lines.append("")
    return lines


def render(results: dict) -> str:
    """The markdown of the results: run, targets, tables."""
    return "\n".join([*environment(results), *targets(results), *compact_targets(results), *tables(results)])


def assemble(records_path: str, config_path: str, env_path: str) -> dict:
    """results.json from the records, the run's config and its machine."""
    with open(config_path) as f:
        config = json.load(f)
    with open(env_path) as f:
        env = json.load(f)
    datasets = {}
    with open(records_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            key = (rec["dataset"], rec["n"])
            ds = datasets.setdefault(key, {"dataset": rec["dataset"], "n": rec["n"], "runs": [], "bursts": [],
                                           "relists": []})
            kind = rec.pop("kind")
            if kind == "load":
                ds["load"] = rec
            elif kind == "burst":
                ds["bursts"].append(rec)
                ds["burst_count"] = rec["count"]
            elif kind == "relist":
                ds["relists"].append(rec)
            elif kind == "run":
                ds["runs"].append(rec)
                if rec["peer"] == "floor" and rec.get("list_bytes"):
                    ds["object_bytes"] = rec["list_bytes"] / rec["n"]
    return {"config": config, "env": env, "datasets": list(datasets.values())}


def svg_main(argv: list[str]) -> None:
    """`svg RESULTS.json OUTDIR [--stem NAME]`: the charts of bench/charts.py, each path printed."""
    sys.dont_write_bytecode = True  # no __pycache__ left in bench/ by a run
    import charts

    path, outdir = argv[0], argv[1]
    stem = argv[3] if len(argv) >= 4 and argv[2] == "--stem" else os.path.basename(path).removesuffix(".json")
    with open(path) as f:
        results = json.load(f)
    for written in charts.write_charts(results, outdir, stem):
        print(written)


def main() -> None:
    """The command line (see the module docs)."""
    if len(sys.argv) >= 5 and sys.argv[1] == "assemble":
        json.dump(assemble(*sys.argv[2:5]), sys.stdout, indent=1)
        print()
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "svg":
        svg_main(sys.argv[2:])
        return
    if len(sys.argv) < 3 or sys.argv[1] != "render":
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[2]) as f:
        results = json.load(f)
    md = render(results)
    print(md)
    if len(sys.argv) >= 5 and sys.argv[3] == "--doc":
        path = sys.argv[4]
        with open(path) as f:
            doc = f.read()
        if BEGIN not in doc or END not in doc:
            sys.exit(f"{path} has no {BEGIN} ... {END} markers")
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(path, "w") as f:
            f.write(head + BEGIN + "\n" + md + "\n" + END + tail)


if __name__ == "__main__":
    main()
