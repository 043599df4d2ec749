#!/usr/bin/env python3
"""Plots an snsim trace (validation/traces/README.md): bandwidth against size, time against size, and the
distribution of times per record.

    plot_trace.py TRACE.jsonl [--out DIR] [--format png|svg]

`snsim traces plot` calls this script after validating the trace (and converting other formats to an snsim trace),
so the checks here are only those the drawing needs. Exit codes: 0 ok, 2 bad input, 3 matplotlib missing.
"""

import argparse
import json
import math
import os
import sys
from collections import defaultdict

MAX_BOXES = 40  # more boxes than this on one axis are unreadable


def fail(message, code=2):
    print(message, file=sys.stderr)
    sys.exit(code)


def read_trace(path):
    """Returns (header, records, complete) of a JSON Lines trace."""
    header, records, complete = None, [], False
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                if header is not None and not line.endswith("\n"):
                    break  # a capture cut short mid-line: what came before is still good
                fail(f"{path}:{number}: malformed JSON: {e.msg}")
            if header is None:
                if obj.get("schema") != "snsim-trace/1":
                    fail(f'{path}:{number}: schema: expected "snsim-trace/1", found {json.dumps(obj.get("schema"))}')
                header = obj
            elif "complete" in obj:
                complete = obj["complete"] is True
            else:
                records.append(obj)
    if header is None:
        fail(f"{path}: empty trace")
    return header, records, complete


def label(record):
    return record["test"] + ("/" + record["variant"] if record.get("variant") else "")


def size_label(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def title_of(header, complete, what):
    host = header.get("host") or header.get("source") or "unknown host"
    gpus = header.get("gpus") or []
    gpu = gpus[0]["name"] if gpus else "unknown GPU"
    suffix = "" if complete else " (INCOMPLETE)"
    return f"{what}\n{host}, {len(gpus)} x {gpu}{suffix}"


def record_rate(r):
    """The data rate a record shows, in B/s, or None: the same rule as validation::record_rate in C++."""
    if r["unit"] == "B/s":
        return r["median"]
    for key in ("bw", "sum_bw", "algbw"):
        if isinstance(r.get(key), (int, float)):
            return r[key]
    if r["family"] in ("copy", "uvm") and r["bytes"] > 0 and r["median"] > 0:
        return r["bytes"] / r["median"]
    return None


def curves(records, value):
    """Groups records by test/variant; per size, the median across records (e.g. GPU pairs) and the spread."""
    groups = defaultdict(lambda: defaultdict(list))
    for r in records:
        v = value(r)
        if v is not None:
            groups[label(r)][r["bytes"]].append(v)
    result = {}
    for name, by_size in groups.items():
        sizes = sorted(by_size)
        mids = [sorted(by_size[s])[len(by_size[s]) // 2] for s in sizes]
        lows = [min(by_size[s]) for s in sizes]
        highs = [max(by_size[s]) for s in sizes]
        result[name] = (sizes, mids, lows, highs)
    return result


def draw_against_size(plt, groups, ylabel, title, path, log_y):
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for name, (sizes, mids, lows, highs) in sorted(groups.items()):
        xs = [max(s, 1) for s in sizes]  # 0-byte records (size not applicable) sit at 1 B on a log axis
        yerr = [[m - lo for m, lo in zip(mids, lows)], [hi - m for m, hi in zip(mids, highs)]]
        ax.errorbar(xs, mids, yerr=yerr, marker="o", markersize=3, capsize=2, label=name)
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if len(groups) <= 20:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def draw_distributions(plt, records, title, path):
    """One box per record: whiskers min..max, box p01..p99, line at the median (samples overlaid when kept)."""
    shown = records[:MAX_BOXES]
    stats = []
    for r in shown:
        stats.append({"label": f"{label(r)} {size_label(r['bytes'])} {r['ranks']}", "whislo": r["min"] * 1e6,
                      "q1": r["p01"] * 1e6, "med": r["median"] * 1e6, "q3": r["p99"] * 1e6,
                      "whishi": r["max"] * 1e6, "fliers": []})
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.3 * len(shown) + 1.5)))
    ax.bxp(stats, vert=False, showfliers=False)
    for i, r in enumerate(shown, start=1):
        samples = r.get("samples") or []
        if samples:
            ax.plot([s * 1e6 for s in samples], [i] * len(samples), "|", color="tab:blue", alpha=0.3)
    ax.set_xlabel("time (us): box p01..p99, whiskers min..max")
    more = f" (first {MAX_BOXES} of {len(records)})" if len(records) > MAX_BOXES else ""
    ax.set_title(title + more)
    ax.tick_params(axis="y", labelsize=6)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--out", default="trace-plots")
    parser.add_argument("--format", choices=["png", "svg"], default="png")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("plot_trace.py needs matplotlib (Debian: apt install python3-matplotlib)", code=3)

    header, records, complete = read_trace(args.trace)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.splitext(os.path.basename(args.trace))[0]
    written = []

    by_family = defaultdict(list)
    for r in records:
        by_family[r["family"]].append(r)
    for family, recs in sorted(by_family.items()):
        rates = [r for r in recs if record_rate(r) is not None]
        times = [r for r in recs if r["unit"] == "s"]
        if rates:
            groups = curves(rates, lambda r: record_rate(r) / 1e9)
            path = os.path.join(args.out, f"{stem}_{family}_bandwidth.{args.format}")
            written.append(draw_against_size(plt, groups, "bandwidth (GB/s, from the median)",
                                             title_of(header, complete, f"{family}: bandwidth against size"), path,
                                             log_y=False))
        busbw = [r for r in recs if isinstance(r.get("busbw"), (int, float))]
        if busbw:
            groups = curves(busbw, lambda r: r["busbw"] / 1e9)
            path = os.path.join(args.out, f"{stem}_{family}_busbw.{args.format}")
            written.append(draw_against_size(plt, groups, "bus bandwidth (GB/s)",
                                             title_of(header, complete, f"{family}: bus bandwidth against size"),
                                             path, log_y=False))
        if times:
            if len({r["bytes"] for r in times}) > 1:
                groups = curves(times, lambda r: r["median"] * 1e6)
                path = os.path.join(args.out, f"{stem}_{family}_time.{args.format}")
                written.append(draw_against_size(plt, groups, "time (us, median)",
                                                 title_of(header, complete, f"{family}: time against size"), path,
                                                 log_y=True))
            # Imported records carry one number each (min = max): a distribution of those says nothing.
            spread = [r for r in times if r["max"] > r["min"] or r.get("samples")]
            if spread:
                path = os.path.join(args.out, f"{stem}_{family}_distribution.{args.format}")
                written.append(draw_distributions(plt, spread,
                                                  title_of(header, complete, f"{family}: time per record"), path))
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"{args.trace}: no records to plot")


if __name__ == "__main__":
    main()
