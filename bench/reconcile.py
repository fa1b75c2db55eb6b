#!/usr/bin/env python3
"""scripts/bench --reconcile's results: from raw records to reconcile.json and its table.

    bench/reconcile.py RECORDS.jsonl ENV.json COMMAND OUTDIR [--doc BENCHMARKS.md] [--save DIR]

Reads the records of kind "reconcile" (one result line per peer run, tagged
"round-N" by the script) and the "burst" records written before each of
them (the writer's rate and request latency), and writes OUTDIR/reconcile.json
(every run, the medians per peer, the targets) and OUTDIR/reconcile.md (the
table and the targets). With --doc it replaces the text between the markers
<!-- bench:reconcile:begin --> and <!-- bench:reconcile:end --> in that file;
with --save it copies reconcile.json to DIR/reconcile-DATE.json (numbered
when that name is taken).

Targets (issue 45): this library's reconcile latency p99 at most client-go's,
its CPU per reconcile at most 0.5x client-go's, its RSS (steady and peak) at
most 0.25x client-go's.
"""
import datetime
import json
import os
import shutil
import statistics
import sys

BEGIN, END = "<!-- bench:reconcile:begin -->", "<!-- bench:reconcile:end -->"
PEERS = {"kdi-reconcile": "**kube-dynamic-informer** `reconcile::Controller`",
         "client-go-reconcile": "client-go dynamic informer + `workqueue`"}
# (field, column heading, decimals): the medians in the table.
COLUMNS = [("sync_s", "sync s", 2), ("initial_reconciled_s", "initial reconciles done s", 2),
           ("latency_p50_ms", "latency p50 ms", 1), ("latency_p99_ms", "latency p99 ms", 1),
           ("latency_max_ms", "latency max ms", 1), ("reconciled_writes", "writes reconciled", 0),
           ("reconciles", "reconciles", 0),
           ("write_latency_p99_ms", "write p99 ms", 1), ("cpu_burst_s", "CPU in burst s", 2),
           ("cpu_per_reconcile_us", "CPU µs / reconcile", 1), ("rss_steady_mb", "RSS steady MiB", 1),
           ("rss_peak_mb", "RSS peak MiB", 1)]
# (name, field, how it is judged, the bound): kdi's median against client-go's.
TARGETS = [("reconcile latency p99", "latency_p99_ms", "≤ client-go's", 1.0),
           ("CPU per reconcile", "cpu_per_reconcile_us", "≤ 0.5× client-go's", 0.5),
           ("RSS steady (after sync and the initial reconciles)", "rss_steady_mb", "≤ 0.25× client-go's", 0.25),
           ("RSS peak during the burst", "rss_peak_mb", "≤ 0.25× client-go's", 0.25)]


def runs_of(records_path: str) -> list[dict]:
    """The reconciling runs, each with the figures of the burst written during it."""
    runs, burst = [], None
    for line in open(records_path):
        rec = json.loads(line)
        if rec.get("kind") == "burst":
            burst = rec
        elif rec.get("kind") == "reconcile":
            if burst and burst.get("peer") == rec.get("run"):
                rec.update(writes_per_s=burst.get("writes_per_second"),
                           write_latency_p99_ms=burst.get("write_latency_p99_ms"))
            burst = None
            runs.append(rec)
    return runs


def medians(runs: list[dict]) -> dict:
    """Per peer run name, the median of each numeric field over its rounds."""
    out = {}
    for run in PEERS:
        mine = [r for r in runs if r.get("run") == run]
        if not mine:
            continue
        fields = {k for r in mine for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        out[run] = {k: statistics.median(r[k] for r in mine if k in r) for k in sorted(fields)}
        out[run]["rounds"] = len(mine)
    return out


def targets(med: dict) -> list[dict]:
    """Each target with both figures, kdi's over client-go's and met/missed (None: a peer is missing)."""
    kdi, go = med.get("kdi-reconcile"), med.get("client-go-reconcile")
    out = []
    for name, field, bound_text, bound in TARGETS:
        ours = kdi.get(field) if kdi else None
        theirs = go.get(field) if go else None
        ratio = ours / theirs if ours is not None and theirs else None
        out.append(dict(target=name, field=field, bound=bound_text, kdi=ours, client_go=theirs,
                        ratio=None if ratio is None else round(ratio, 3),
                        met=None if ratio is None else ratio <= bound))
    return out


def cell(v, digits: int) -> str:
    """A table cell: "–" when missing, thousands separated."""
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def markdown(doc: dict) -> str:
    """The section's text between its markers: how it was run, the table, the targets."""
    env = doc["env"]
    med = doc["medians"]
    lines = [f"{doc['widgets']:,} Widgets, a burst of {doc['burst']:,} stamped merge patches (32 in flight, "
             f"each to another Widget), 4 workers; medians of {doc['rounds']} rounds, each peer in turn "
             f"({env.get('date')}, commit {env.get('git')}, {env.get('cores')} cores, load before "
             f"{env.get('load_before')}):", "", "```sh", doc["command"], "```", "",
             "| peer | " + " | ".join(c[1] for c in COLUMNS) + " |",
             "|---|" + "--:|" * len(COLUMNS)]
    for run, name in PEERS.items():
        if run in med:
            lines.append(f"| {name} | " + " | ".join(cell(med[run].get(f), d) for f, _, d in COLUMNS) + " |")
    if len(med) == 2:
        kdi, go = med["kdi-reconcile"], med["client-go-reconcile"]
        ratios = [cell(kdi[f] / go[f], 2) + "×" if kdi.get(f) is not None and go.get(f) else ""
                  for f, _, _ in COLUMNS]
        lines.append("| kdi / client-go | " + " | ".join(ratios) + " |")
    lines += ["", "Targets (issue 45), kdi's median against client-go's:", ""]
    for t in doc["targets"]:
        verdict = "–" if t["met"] is None else ("**met**" if t["met"] else "**missed**")
        figures = (f"{cell(t['kdi'], 1)} against {cell(t['client_go'], 1)} = {cell(t['kdi'] / t['client_go'], 2)}×"
                   if t["ratio"] is not None else "not measured")
        lines.append(f"- {t['target']} {t['bound']}: {figures}: {verdict}")
    return "\n".join(lines) + "\n"


def replace_section(path: str, text: str) -> None:
    """Writes `text` between the markers of `path`."""
    doc = open(path).read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{path} has no {BEGIN} ... {END} markers")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    open(path, "w").write(f"{head}{BEGIN}\n{text}{END}{tail}")


def save(path: str, folder: str) -> str:
    """Copies the results to FOLDER/reconcile-DATE.json, numbered when taken; returns the name."""
    stem = f"reconcile-{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}"
    name, i = f"{stem}.json", 2
    while os.path.exists(os.path.join(folder, name)):
        name, i = f"{stem}-{i}.json", i + 1
    shutil.copy(path, os.path.join(folder, name))
    return name


def main() -> None:
    args = sys.argv[1:]
    options = {}
    while len(args) > 4 and args[-2] in ("--doc", "--save"):
        options[args[-2]] = args[-1]
        args = args[:-2]
    if len(args) != 4:
        sys.exit(__doc__)
    records, env_path, command, out = args
    runs = runs_of(records)
    if not runs:
        sys.exit(f"{records}: no reconciling runs")
    med = medians(runs)
    doc = {"command": command, "env": json.load(open(env_path)), "widgets": runs[0].get("objects", runs[0]["n"]),
           "burst": runs[0].get("burst_updates", 0), "rounds": max(m["rounds"] for m in med.values()),
           "runs": runs, "medians": med, "targets": targets(med)}
    json.dump(doc, open(os.path.join(out, "reconcile.json"), "w"), indent=1)
    text = markdown(doc)
    open(os.path.join(out, "reconcile.md"), "w").write(text)
    print(text)
    if "--doc" in options:
        replace_section(options["--doc"], text)
    if "--save" in options:
        print(f"saved: {save(os.path.join(out, 'reconcile.json'), options['--save'])}", file=sys.stderr)


if __name__ == "__main__":
    main()
