#!/usr/bin/env python3
"""Draws an overview of a timeline (timeline.json of `snsim run --timeline --out DIR`) as one picture.

    plot_timeline.py timeline.json [--out timeline.png] [--gpus N] [--quiet]

One row per GPU (the first N, default 16), time across: compute, copies, collectives, PGAS ops, UVM and waiting on
other GPUs in their own colours, each kind on its own band of the row so that concurrent streams stay visible. For
the details (every op's args, flows from puts to the signal waits they satisfied), open timeline.json in
ui.perfetto.dev. Exit codes: 0 ok, 2 bad input, 3 matplotlib missing.
"""

import json
import math

from plot_common import draw_with_pyplot, fail, load_json, parse_args, save

# The timeline's thread kinds (sim/report.cpp), the band each takes in a GPU's row, and its colour.
KINDS = (("compute", "tab:blue"), ("copies", "tab:green"), ("collectives", "tab:orange"), ("pgas", "tab:purple"),
         ("uvm", "tab:brown"), ("waiting", "tab:red"))



def read_timeline(path):
    """{gpu: {kind: [(start_us, dur_us)]}} and the scenario name, from the trace's process and thread names."""
    trace = load_json(path)
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        fail(f"{path}: not a Chrome trace (no \"traceEvents\" list at the top)")
    gpus, threads, slices = {}, {}, []
    for i, e in enumerate(trace["traceEvents"]):
        if not isinstance(e, dict) or "ph" not in e:
            fail(f"{path}: traceEvents[{i}]: expected an event with \"ph\", found {json.dumps(e)[:80]}")
        name = (e.get("args") or {}).get("name")
        if e["ph"] == "M" and e.get("name") == "process_name" and isinstance(name, str) and name.startswith("gpu"):
            gpus[e.get("pid")] = int(name[3:]) if name[3:].isdigit() else len(gpus)
        elif e["ph"] == "M" and e.get("name") == "thread_name" and isinstance(name, str):
            threads[(e.get("pid"), e.get("tid"))] = name.split(" ")[0] if not name.startswith("uvm") else "uvm"
        elif e["ph"] == "X":
            for key in ("ts", "dur"):
                if not isinstance(e.get(key), (int, float)) or not math.isfinite(e[key]) or e[key] < 0:
                    fail(f"{path}: traceEvents[{i}].{key}: expected a number >= 0, found {json.dumps(e.get(key))}")
            slices.append(e)
    rows = {}
    for e in slices:
        if e.get("pid") not in gpus:
            continue
        kind = threads.get((e["pid"], e.get("tid")), "other")
        rows.setdefault(gpus[e["pid"]], {}).setdefault(kind, []).append((e["ts"], e["dur"]))
    return rows, (trace.get("otherData") or {}).get("scenario", "")


def draw(plt, rows, scenario, shown, path):
    gpus = sorted(rows)[:shown]
    end = max((s + d for g in gpus for spans in rows[g].values() for s, d in spans), default=1)
    factor, unit = next(((f, u) for f, u in ((1, "us"), (1e-3, "ms")) if end * f < 5000), (1e-6, "s"))
    fig, ax = plt.subplots(figsize=(14, 1.6 + 0.42 * len(gpus)))
    band = 0.8 / len(KINDS)
    for row, g in enumerate(gpus):
        for k, (kind, color) in enumerate(KINDS):
            spans = [(s * factor, d * factor) for s, d in rows[g].get(kind, [])]  # true widths: short is thin
            if spans:
                ax.broken_barh(spans, (row - 0.4 + k * band, band * 0.9), facecolors=color, linewidth=0)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for _, c in KINDS]
    ax.legend(handles, [k for k, _ in KINDS], fontsize=7, loc="lower center", ncols=len(KINDS),
              bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.set_yticks(range(len(gpus)), [f"gpu{g}" for g in gpus])
    ax.invert_yaxis()
    ax.set_xlim(0, end * factor)
    ax.set_xlabel(f"simulated time ({unit})")
    more = f" (first {len(gpus)} of {len(rows)} GPUs)" if len(rows) > len(gpus) else ""
    ax.set_title(f"timeline of {scenario}{more}", pad=22)
    ax.grid(True, axis="x", alpha=0.3)
    save(plt, fig, path)


def main():
    args = parse_args(__doc__, "timeline", "timeline.json written by `snsim run --timeline --out DIR`", "timeline.png",
                      lambda p: p.add_argument("--gpus", type=int, default=16, help="draw the first N GPUs"))
    rows, scenario = read_timeline(args.timeline)  # bad input is reported even where matplotlib is missing
    if not rows:
        fail(f"{args.timeline}: no GPU has a slice to draw")
    draw_with_pyplot("plot_timeline.py", lambda plt: draw(plt, rows, scenario, max(1, args.gpus), args.out), args.out,
                     args.quiet)

if __name__ == "__main__":
    main()
