#!/usr/bin/env python3
"""Plots what `snsim sweep` (or `snsim sweep merge`) found: one metric against another, one line per series.

    plot_sweep.py results.jsonl [--meta sweep.json] [--out sweep.png] [--x METRIC] [--y METRIC] [--series NAME]
                  [--quiet]

results.jsonl has one JSON object per run (key, point, trial, seed, labels, outcome, metrics, wall_s); a run that
appears twice counts once. The x and y axes are metrics (default: the plan's `report`, else `gpus` and
`samples_per_s`, or `makespan_s` when there is no training); a point's value is the mean over its trials; points
are grouped into lines by `series`: a metric (default `topology`) or an axis name, and within a line by the labels
of the other axes. The plan's goal (`at_least` / `at_most` on y) is drawn as a dashed line. Only completed runs are
drawn, and with a sweep.json only the runs of its plan. Exit codes: 0 ok, 2 bad input, 3 matplotlib missing.
"""

import argparse
import json
import math
import sys
from collections import defaultdict


def fail(message, code=2):
    print(message, file=sys.stderr)
    sys.exit(code)


def read_results(path):
    """The runs of a results file, the last one of each key; a torn last line is ignored as snsim ignores it."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        fail(f"{path}: cannot open the file: {e.strerror}")
    runs = {}
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    for k, (number, line) in enumerate(numbered):
        try:
            run = json.loads(line)
        except json.JSONDecodeError as e:
            if k == len(numbered) - 1:
                continue
            fail(f"{path}:{number}: corrupted line: {e.msg}")
        if not isinstance(run, dict) or not isinstance(run.get("key"), str) or not isinstance(run.get("metrics"), dict):
            fail(f"{path}:{number}: not a sweep result (an object with key and metrics)")
        runs[run["key"]] = run
    return list(runs.values())


def value(run, name):
    """A metric of a run, or one of its axis labels."""
    if name in run.get("metrics", {}):
        return run["metrics"][name]
    if name == "wall_s":
        return run.get("wall_s")
    return run.get("labels", {}).get(name)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results")
    parser.add_argument("--meta", help="sweep.json of the sweep (the plan's axes, report and goal)")
    parser.add_argument("--out", default="sweep.png")
    parser.add_argument("--x")
    parser.add_argument("--y")
    parser.add_argument("--series")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    meta = {}
    if args.meta:
        try:
            with open(args.meta, encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            fail(f"{args.meta}: cannot read the sweep's meta: {e}")
    # Only the plan's runs: a results file may keep lines of an earlier version of the plan.
    planned = set(meta.get("keys", []))
    runs = [r for r in read_results(args.results)
            if r.get("outcome") == "completed" and (not planned or r["key"] in planned)]
    if not runs:
        fail(f"{args.results}: no completed run to plot")
    x = args.x or meta.get("x") or "gpus"
    y = args.y or meta.get("y") or ("samples_per_s" if any("samples_per_s" in r["metrics"] for r in runs)
                                    else "makespan_s")
    series = args.series or meta.get("series") or "topology"
    axes = [a["name"] for a in meta.get("axes", [])] or sorted({k for r in runs for k in r.get("labels", {})})

    # Mean over each point's trials.
    points = defaultdict(list)
    for r in runs:
        points[r["point"]].append(r)
    drawn = []  # (point's first run, x, y)
    for p, trials in sorted(points.items()):
        xs = [value(r, x) for r in trials]
        ys = [value(r, y) for r in trials]
        if all(is_number(v) for v in xs + ys):
            drawn.append((trials[0], sum(xs) / len(xs), sum(ys) / len(ys)))

    # One line per series; if a line would hold two points at the same x, the other axes' labels split it.
    def line_name(run, split):
        name = [str(value(run, series))]
        if split:
            name += [f"{a}={run['labels'][a]}" for a in axes if a not in (series, x) and a in run.get("labels", {})]
        return " ".join(name)

    seen = set()
    split = False
    for run, px, _ in drawn:
        split = split or (line_name(run, False), px) in seen
        seen.add((line_name(run, False), px))
    lines = defaultdict(list)
    for run, px, py in drawn:
        lines[line_name(run, split)].append((px, py))
    if not lines:
        fail(f"{args.results}: no run has numbers for both {x} and {y}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is missing (Debian: apt install python3-matplotlib)", 3)

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, xy in sorted(lines.items()):
        xy.sort()
        ax.plot([p[0] for p in xy], [p[1] for p in xy], marker="o", label=name)
    goal = meta.get("goal")
    if goal and goal.get("metric") == y:
        bound = goal.get("at_least", goal.get("at_most"))
        ax.axhline(bound, color="grey", linestyle="--", linewidth=1)
        ax.annotate(f"goal: {y} {'>=' if 'at_least' in goal else '<='} {bound:g}", (0.01, bound),
                    xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(2, 4), fontsize=8,
                    color="grey")
    xs = sorted({p[0] for xy in lines.values() for p in xy})
    if xs and xs[0] > 0 and xs[-1] / xs[0] >= 8:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{v:g}" for v in xs])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"sweep {meta.get('plan', '')}: {y} against {x}".strip())
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    if not args.quiet:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
