#!/usr/bin/env python3
"""Plots BSP against PGAS (compare.json of `snsim compare ... --out DIR`) into one figure.

    plot_compare.py compare.json [--out compare.png] [--quiet]

Left: the step time of both schedules (mean and last step), MFU above the bars. Right: per GPU, where its time went
over the run under each schedule, stacked: compute, communication, waiting on other ranks (not hidden behind
compute), idle; the four add up to the run's length.

`snsim compare --out DIR` runs this script into DIR/compare.png. Exit codes: 0 ok, 2 bad input, 3 matplotlib
missing.
"""

import json

from plot_common import draw_with_pyplot, fail, is_number, load_json, parse_args, save

SCHEDULES = ("bsp", "pgas")
PARTS = (("compute_ms", "compute", "tab:blue"), ("communication_ms", "communication", "tab:orange"),
         ("waiting_ms", "waiting on other GPUs", "tab:red"), ("idle_ms", "idle", "lightgrey"))




def read_compare(path):
    """compare.json checked for everything the drawing reads: {schedule: (summary metrics, per-GPU rows)}."""
    result = load_json(path)
    if not isinstance(result, dict) or any(not isinstance(result.get(s), dict) for s in SCHEDULES):
        fail(f"{path}: not a compare.json of `snsim compare --out` (no \"bsp\" and \"pgas\" objects at the top)")
    sides = {}
    for s in SCHEDULES:
        summary = result[s].get("summary")
        if not isinstance(summary, list) or any(not isinstance(r, dict) or "metric" not in r for r in summary):
            fail(f"{path}: {s}.summary: expected a list of {{metric, value}}, found {json.dumps(summary)}")
        metrics = {r["metric"]: r.get("value") for r in summary}
        if not is_number(metrics.get("step_mean_ms")):
            fail(f"{path}: {s}.summary: no step_mean_ms number")
        rows = result[s].get("per_gpu")
        if not isinstance(rows, list) or not rows:
            fail(f"{path}: {s}.per_gpu: expected a non-empty list, found {json.dumps(rows)}")
        for i, row in enumerate(rows):
            for key in ("rank",) + tuple(p[0] for p in PARTS):
                if not isinstance(row, dict) or key not in row:
                    fail(f"{path}: {s}.per_gpu[{i}]: missing \"{key}\"")
                if not is_number(row[key]):
                    fail(f"{path}: {s}.per_gpu[{i}].{key}: expected a number, found {json.dumps(row[key])}")
        sides[s] = (metrics, rows)
    return result.get("scenario", "?"), sides


def draw(plt, scenario, sides, path):
    gpus = max(len(rows) for _, rows in sides.values())
    fig, (steps, split) = plt.subplots(1, 2, figsize=(15, 4.8), gridspec_kw={"width_ratios": [1, 3.2]})

    width = 0.38
    for k, (key, label, color) in enumerate((("step_mean_ms", "mean step", "tab:blue"),
                                             ("step_last_ms", "last step", "tab:cyan"))):
        xs = [i + (k - 0.5) * width for i in range(len(SCHEDULES))]
        values = [sides[s][0].get(key) if is_number(sides[s][0].get(key)) else 0 for s in SCHEDULES]
        bars = steps.bar(xs, values, width, color=color, label=label)
        if key == "step_mean_ms":
            for bar, s in zip(bars, SCHEDULES):
                mfu = sides[s][0].get("mfu_pct")
                if is_number(mfu):
                    steps.annotate(f"MFU {mfu:.1f} %", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                   ha="center", va="bottom", fontsize=7)
    steps.set_xticks(range(len(SCHEDULES)), [s.upper() for s in SCHEDULES])
    steps.set_ylabel("step time (ms)")
    steps.set_title("step time")
    steps.grid(True, axis="y", alpha=0.3)
    steps.set_ylim(0, steps.get_ylim()[1] * 1.15)
    steps.legend(fontsize=7, loc="upper right")

    bar = 0.4
    for k, s in enumerate(SCHEDULES):
        rows = sorted(sides[s][1], key=lambda r: r["rank"])
        xs = [r["rank"] + (k - 0.5) * bar for r in rows]
        bottom = [0.0] * len(rows)
        for key, label, color in PARTS:
            heights = [r[key] for r in rows]
            split.bar(xs, heights, bar * 0.95, bottom=bottom, color=color, edgecolor="black" if k else "none",
                      linewidth=0.3, label=label if k == 0 else None, hatch=None if k == 0 else "//")
            bottom = [b + h for b, h in zip(bottom, heights)]
    step = max(1, gpus // 24)
    split.set_xticks(range(0, gpus, step))
    split.set_xlabel("GPU (left bar BSP, right bar PGAS, hatched)")
    split.set_ylabel("time over the run (ms)")
    split.set_title("per GPU: where the time went")
    split.grid(True, axis="y", alpha=0.3)
    split.set_ylim(0, split.get_ylim()[1] * 1.12)  # room for the legend above the bars
    split.legend(fontsize=7, loc="upper center", ncols=4)

    fig.suptitle(f"BSP vs PGAS: {scenario}, {gpus} GPUs")
    save(plt, fig, path)


def main():
    args = parse_args(__doc__, "compare", "compare.json written by `snsim compare --out DIR`", "compare.png")
    scenario, sides = read_compare(args.compare)  # bad input is reported even where matplotlib is missing
    draw_with_pyplot("plot_compare.py", lambda plt: draw(plt, scenario, sides, args.out), args.out, args.quiet)

if __name__ == "__main__":
    main()
