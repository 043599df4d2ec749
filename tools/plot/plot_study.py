#!/usr/bin/env python3
"""Plots a slow-node study (study.json of `snsim study slow-node ... --out DIR`) into one figure.

    plot_study.py study.json [--out study.png] [--quiet]

Three panels against the slow GPU's slowdown (the throughput it loses, 1 - 1/factor): the job's efficiency lost
(1 - healthy p50 / p50 as dots, and the paired estimate over the common seeds with its 95 % interval; on the dashed
line the job loses exactly what the GPU loses); the step time's p50 and p99, with the 95 % interval of the mean as a
band; and, per GPU, the mean waiting time per step at the healthy point and at the most slowed one, with the GPU
waited on most.

`snsim study slow-node --out DIR` runs this script into DIR/study.png. Exit codes: 0 ok, 2 bad input, 3 matplotlib
missing.
"""

import json

from plot_common import draw_with_pyplot, fail, is_number, load_json, parse_args, save

NUMBER, STRING = "a number", "a string"




def need(path, where, obj, key, kind, nullable=False):
    if not isinstance(obj, dict) or key not in obj:
        fail(f"{path}: {where}: missing \"{key}\"")
    value = obj[key]
    if value is None and nullable:
        return None
    ok = is_number(value) if kind == NUMBER else isinstance(value, str) if kind == STRING else isinstance(value, kind)
    if not ok:
        name = kind if isinstance(kind, str) else {list: "a list", dict: "an object"}[kind]
        fail(f"{path}: {where}.{key}: expected {name}{' or null' if nullable else ''}, found {json.dumps(value)}")
    return value


def read_study(path):
    """The study, checked for everything the drawing reads; one line naming the file and the field otherwise."""
    study = load_json(path)
    if not isinstance(study, dict) or study.get("study") != "slow-node":
        fail(f"{path}: not a study.json of `snsim study slow-node --out` (no \"study\": \"slow-node\" at the top)")
    need(path, "study", study, "scenario", STRING)
    need(path, "study", study, "steps", NUMBER)
    points = need(path, "study", study, "points", list)
    if not points:
        fail(f"{path}: points: empty")
    for i, p in enumerate(points):
        where = f"points[{i}]"
        need(path, where, p, "label", STRING)
        need(path, where, p, "gpu_slowdown", NUMBER)
        step = need(path, where, p, "step_time_s", dict)
        for key in ("mean", "p50", "p99"):
            need(path, f"{where}.step_time_s", step, key, NUMBER)
        for key in ("ci95_low", "ci95_high"):
            need(path, f"{where}.step_time_s", step, key, NUMBER, nullable=True)
        need(path, where, p, "efficiency_lost", NUMBER, nullable=True)
        paired = need(path, where, p, "efficiency_lost_paired", dict, nullable=True)
        if paired is not None:
            need(path, f"{where}.efficiency_lost_paired", paired, "mean", NUMBER)
            for key in ("ci95_low", "ci95_high"):
                need(path, f"{where}.efficiency_lost_paired", paired, key, NUMBER, nullable=True)
        for j, r in enumerate(need(path, where, p, "ranks", list)):
            need(path, f"{where}.ranks[{j}]", r, "rank", NUMBER)
            need(path, f"{where}.ranks[{j}]", r, "waiting_per_step_s", NUMBER)
            need(path, f"{where}.ranks[{j}]", r, "most_waited_on", NUMBER, nullable=True)
    return study


def time_unit(seconds):
    """(factor, name) showing `seconds` as numbers between 1 and 1000."""
    for name, factor in (("ns", 1e9), ("us", 1e6), ("ms", 1e3)):
        if seconds * factor < 1000:
            return factor, name
    return 1, "s"


def draw(plt, study, path):
    points = sorted(study["points"], key=lambda p: p["gpu_slowdown"])
    x = [100 * p["gpu_slowdown"] for p in points]
    fig, (lost, steps, waits) = plt.subplots(1, 3, figsize=(16, 4.8))

    top = max(x) if x else 1
    lost.plot([0, top], [0, top], color="grey", linestyle="--", linewidth=1, label="job loses what the GPU loses")
    slowed = [p for p in points if p["efficiency_lost"] is not None]
    lost.plot([100 * p["gpu_slowdown"] for p in slowed], [100 * p["efficiency_lost"] for p in slowed], "o-",
              color="tab:blue", label="1 - healthy p50 / p50")
    paired = [p for p in points if p["efficiency_lost_paired"] is not None]
    if paired:
        mean = [100 * p["efficiency_lost_paired"]["mean"] for p in paired]
        low = [m - 100 * (p["efficiency_lost_paired"]["ci95_low"] or p["efficiency_lost_paired"]["mean"])
               for m, p in zip(mean, paired)]
        high = [100 * (p["efficiency_lost_paired"]["ci95_high"] or p["efficiency_lost_paired"]["mean"]) - m
                for m, p in zip(mean, paired)]
        lost.errorbar([100 * p["gpu_slowdown"] for p in paired], mean, yerr=[low, high], fmt="s", color="tab:orange",
                      markersize=4, capsize=3, label="paired over common seeds (95 % CI)")
    for p in slowed:
        lost.annotate(p["label"], (100 * p["gpu_slowdown"], 100 * p["efficiency_lost"]), textcoords="offset points",
                      xytext=(4, -10), fontsize=7)
    lost.set_xlabel("slow GPU's throughput loss (%)")
    lost.set_ylabel("job's efficiency lost (%)")
    lost.set_title("efficiency lost")
    lost.grid(True, alpha=0.3)
    lost.legend(fontsize=7, loc="upper left")

    factor, unit = time_unit(points[0]["step_time_s"]["p50"])
    for key, style, color in (("p50", "o-", "tab:blue"), ("p99", "^--", "tab:red")):
        steps.plot(x, [factor * p["step_time_s"][key] for p in points], style, color=color, label=f"step time {key}")
    band = [p for p in points if p["step_time_s"]["ci95_low"] is not None]
    if band:
        steps.fill_between([100 * p["gpu_slowdown"] for p in band], [factor * p["step_time_s"]["ci95_low"] for p in band],
                           [factor * p["step_time_s"]["ci95_high"] for p in band], color="tab:blue", alpha=0.15,
                           label="95 % CI of the mean")
    steps.set_xlabel("slow GPU's throughput loss (%)")
    steps.set_ylabel(f"step time ({unit})")
    steps.set_title(f"step time ({study['steps']} steps per run)")
    steps.grid(True, alpha=0.3)
    steps.legend(fontsize=7)

    healthy, worst = points[0], points[-1]
    ranks = sorted(r["rank"] for r in healthy["ranks"])
    per_step = max([r["waiting_per_step_s"] for p in (healthy, worst) for r in p["ranks"]] + [1e-12])
    wfactor, wunit = time_unit(per_step)
    width = 0.4
    for offset, p, color in ((-width / 2, healthy, "tab:green"), (width / 2, worst, "tab:red")):
        by_rank = {r["rank"]: r for r in p["ranks"]}
        heights = [wfactor * by_rank[r]["waiting_per_step_s"] if r in by_rank else 0 for r in ranks]
        bars = waits.bar([r + offset for r in ranks], heights, width, color=color, label=p["label"])
        if len(ranks) <= 16:
            for bar, r in zip(bars, ranks):
                on = by_rank.get(r, {}).get("most_waited_on")
                if on is not None and bar.get_height() > 0:
                    waits.annotate(f"{on}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                                   va="bottom", fontsize=6)
    waits.set_xticks(ranks[::max(1, len(ranks) // 16)])
    waits.set_xlabel("GPU (number on a bar: the GPU it waited on most)")
    waits.set_ylabel(f"mean waiting time per step ({wunit})")
    waits.set_title("who waited")
    waits.grid(True, axis="y", alpha=0.3)
    waits.legend(fontsize=7)

    trials = study.get("trials", "?")
    fig.suptitle(f"slow-node study of {study['scenario']}: {len(points)} points x {trials} trials")
    save(plt, fig, path)


def main():
    args = parse_args(__doc__, "study", "study.json written by `snsim study slow-node --out DIR`", "study.png")
    study = read_study(args.study)  # bad input is reported even where matplotlib is missing
    draw_with_pyplot("plot_study.py", lambda plt: draw(plt, study, args.out), args.out, args.quiet)

if __name__ == "__main__":
    main()
