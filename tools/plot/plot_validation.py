#!/usr/bin/env python3
"""Plots what `snsim validate --out DIR` found (DIR/validation.json): measured against predicted, and the error.

    plot_validation.py validation.json [--out DIR] [--format png|svg] [--quiet]

Writes, per family, one figure per test/variant, named FAMILY-TEST[-VARIANT].png: measured and predicted medians
against size (log-log, time or bandwidth as the records' unit), one colour per curve (trace and ranks), calibration
points hollow and validation points filled, and under it the relative error per size against the family's bound.
Groups compared on quantiles (jitter: p50, p99, p99.9) show measured and predicted per quantile instead. summary.png
shows each family's median and max |error| over its validation records against its bounds (what decides PASS).

Other tools' output (comparisons whose "source" is not snsim-probe: nccl-tests, nvbandwidth, ...) is drawn per tool
and test, named SOURCE-FAMILY-TEST.png, one line per file and variant (in place, out of place), without bounds
unless `snsim validate --bounds` judged them.

`snsim validate --out DIR` runs this script into DIR/plots. Exit codes: 0 ok, 2 bad input, 3 matplotlib missing.
"""

import argparse
import json
import math
import os
import re
import sys
from collections import defaultdict

from plot_common import fail, load_json

MAX_LEGEND = 16  # more curves than this make the legend cover the plot
QUANTILE_ORDER = {"median": 0, "p50": 0, "p99": 1, "p99.9": 2}
STRING, NUMBER, INTEGER, BOOLEAN = "a string", "a number", "an integer", "true or false"
VALUE = "a number or null"  # snsim writes a value that is not finite (e.g. a simulated span of 0) as null
COMPARISON_FIELDS = {"trace": STRING, "id": STRING, "family": STRING, "test": STRING, "variant": STRING,
                     "bytes": INTEGER, "use": STRING, "statistic": STRING, "unit": STRING, "measured": VALUE,
                     "predicted": VALUE, "error": VALUE}
FAMILY_FIELDS = {"family": STRING, "validation_records": INTEGER, "calibration_records": INTEGER,
                 "median_abs_error": VALUE, "max_abs_error": VALUE, "pass": BOOLEAN}


def is_kind(value, kind):
    if kind == STRING:
        return isinstance(value, str)
    if kind == BOOLEAN:
        return isinstance(value, bool)
    if kind == VALUE and value is None:
        return True
    if isinstance(value, bool):  # JSON true is no number, though Python's bool is an int
        return False
    if kind == INTEGER:
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)


def check_fields(path, where, obj, fields):
    if not isinstance(obj, dict):
        fail(f"{path}: {where}: expected an object, found {json.dumps(obj)}")
    for key, kind in fields.items():
        if key not in obj:
            fail(f"{path}: {where}: missing \"{key}\"")
        if not is_kind(obj[key], kind):
            fail(f"{path}: {where}.{key}: expected {kind}, found {json.dumps(obj[key])}")


def read_result(path):
    """Returns (families, comparisons) of a validation.json, checked for everything the drawing reads."""
    result = load_json(path)
    if not isinstance(result, dict) or not isinstance(result.get("pass"), bool):
        fail(f"{path}: not a validation.json of `snsim validate --out` (no \"pass\": true/false at the top)")
    lists = {}
    for key in ("families", "comparisons"):
        value = result.get(key)  # snsim writes null for an empty list
        if value is not None and not isinstance(value, list):
            fail(f"{path}: {key}: expected a list, found {json.dumps(value)}")
        lists[key] = value or []
    for i, f in enumerate(lists["families"]):
        check_fields(path, f"families[{i}]", f, FAMILY_FIELDS)
        bound = f.get("bound", {})
        if not isinstance(bound, dict) or any(not is_kind(bound[k], NUMBER) for k in ("median", "max") if k in bound):
            fail(f"{path}: families[{i}].bound: expected {{median: number, max: number}}, found {json.dumps(bound)}")
    for i, c in enumerate(lists["comparisons"]):
        check_fields(path, f"comparisons[{i}]", c, COMPARISON_FIELDS)
        if c["use"] not in ("calibration", "validation"):
            fail(f"{path}: comparisons[{i}].use: expected \"calibration\" or \"validation\", "
                 f"found {json.dumps(c['use'])}")
        if c["unit"] not in ("s", "B/s"):
            fail(f"{path}: comparisons[{i}].unit: expected \"s\" or \"B/s\", found {json.dumps(c['unit'])}")
        if c["statistic"] not in QUANTILE_ORDER:
            fail(f"{path}: comparisons[{i}].statistic: expected one of median, p99, p99.9, "
                 f"found {json.dumps(c['statistic'])}")
    drawable = [c for c in lists["comparisons"] if all(c[k] is not None for k in ("measured", "predicted", "error"))]
    if len(drawable) < len(lists["comparisons"]):
        print(f"{path}: note: {len(lists['comparisons']) - len(drawable)} comparisons without a finite measured or "
              "predicted value are not drawn", file=sys.stderr)
    return lists["families"], drawable


def size_label(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


def value_scale(unit, values):
    """(factor, axis label) showing `values` in readable units: GB/s, or the time unit of their median."""
    if unit == "B/s":
        return 1e-9, "bandwidth (GB/s)"
    middle = sorted(values)[len(values) // 2] if values else 1
    for name, factor in (("ns", 1e9), ("us", 1e6), ("ms", 1e3)):
        if middle * factor < 1000:
            return factor, f"time ({name})"
    return 1, "time (s)"


def file_name(*parts):
    """A stable, readable file name: the non-empty parts joined by '-', each reduced to safe characters."""
    return "-".join(re.sub(r"[^A-Za-z0-9_.+]+", "_", p).strip("_") or "_" for p in parts if p)


def curve_name(c):
    """The curve a comparison is on (trace and ranks): its record id without the size at the end."""
    record = c["id"]
    suffix = "/" + str(c["bytes"])
    return record[:-len(suffix)] if record.endswith(suffix) else record


def curve_labels(curves, family, test, variant):
    """Legend text per curve: what differs between the curves of one figure (ranks, and the trace if several)."""
    prefix = "/".join(p for p in (family, test, variant) if p) + "/"
    traces = {trace for trace, _ in curves}
    labels = {}
    for trace, name in curves:
        text = name[len(prefix):] if name.startswith(prefix) else name
        if len(traces) > 1:
            text = f"{os.path.splitext(os.path.basename(trace))[0]} {text}".strip()
        labels[(trace, name)] = text or (test + (f"/{variant}" if variant else ""))
    return labels


def draw_bound(ax, bound):
    """The family's bound on the error axis: a band for the per-record max, dashed lines for the median's."""
    if "max" in bound:
        ax.axhspan(-100 * bound["max"], 100 * bound["max"], color="tab:green", alpha=0.12,
                   label=f"max bound ±{100 * bound['max']:g} %")
    if "median" in bound:
        for sign in (-1, 1):
            ax.axhline(sign * 100 * bound["median"], color="tab:green", linestyle="--", linewidth=1,
                       label=f"median bound ±{100 * bound['median']:g} %" if sign > 0 else None)
    ax.axhline(0, color="black", linewidth=0.8)
    widest = max(bound.values(), default=0)
    if widest:
        low, high = ax.get_ylim()
        ax.set_ylim(min(low, -150 * widest), max(high, 150 * widest))


def draw_points(ax, xs, ys, uses, color, linestyle):
    """A line through all points, validation points filled and calibration points hollow."""
    ax.plot(xs, ys, color=color, linestyle=linestyle, linewidth=1.2)
    for use, face in (("validation", color), ("calibration", "white")):
        chosen = [(x, y) for x, y, u in zip(xs, ys, uses) if u == use]
        if chosen:
            ax.plot(*zip(*chosen), linestyle="none", marker="o", markersize=4.5, markerfacecolor=face,
                    markeredgecolor=color)


def style_legend(ax):
    """The curves' colours plus what line styles and marker fills mean."""
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="gray", linestyle="-"), Line2D([], [], color="gray", linestyle="--"),
                Line2D([], [], color="gray", marker="o", linestyle="none", markerfacecolor="gray"),
                Line2D([], [], color="gray", marker="o", linestyle="none", markerfacecolor="white")]
    labels += ["measured", "predicted (simulated)", "validation point", "calibration point"]
    ax.legend(handles, labels, fontsize=7, ncol=2 if len(labels) > 10 else 1)


def is_imported(c):
    """Measured by another tool (nccl-tests, nvbandwidth, ...) rather than by snsim-probe."""
    return c.get("source", "snsim-probe") != "snsim-probe"


def file_curves(comparisons):
    """Imported comparisons: one curve per file and variant, labelled by the file's name."""
    curves = defaultdict(list)
    for c in comparisons:
        curves[(c["trace"], c["variant"])].append(c)
    labels = {key: f"{os.path.splitext(os.path.basename(key[0]))[0]} {key[1]}".strip() for key in curves}
    return curves, labels


def draw_curves(plt, family, test, variant, comparisons, bound, path):
    """Measured and predicted against size, and the relative error under it."""
    if any(is_imported(c) for c in comparisons):
        curves, labels = file_curves(comparisons)
    else:
        curves = defaultdict(list)
        for c in comparisons:
            curves[(c["trace"], curve_name(c))].append(c)
        labels = curve_labels(curves, family, test, variant)
    unit = comparisons[0]["unit"]
    factor, ylabel = value_scale(unit, [c["measured"] for c in comparisons])
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 7.5), gridspec_kw={"height_ratios": [3, 2]})
    for i, key in enumerate(sorted(curves)):
        points = sorted(curves[key], key=lambda c: c["bytes"])
        xs = [max(c["bytes"], 1) for c in points]  # 0-byte records (size not applicable) sit at 1 B
        uses = [c["use"] for c in points]
        color = f"C{i % 10}"
        draw_points(top, xs, [c["measured"] * factor for c in points], uses, color, "-")
        draw_points(top, xs, [c["predicted"] * factor for c in points], uses, color, "--")
        top.plot([], [], color=color, label=labels[key] if len(curves) <= MAX_LEGEND else None)
        draw_points(bottom, xs, [100 * c["error"] for c in points], uses, color, "-")
    top.set_xscale("log", base=2)
    top.set_yscale("log")
    top.set_ylabel(ylabel)
    what = "bandwidth" if unit == "B/s" else "time"
    more = f", {len(curves)} curves" if len(curves) > MAX_LEGEND else ""
    top.set_title(f"{family}: {test}{'/' + variant if variant else ''}\nmeasured and predicted median {what}{more}")
    top.grid(True, which="both", alpha=0.3)
    style_legend(top)
    draw_bound(bottom, bound)
    bottom.set_xlabel("size" + (" (0 B drawn at 1 B)" if any(c["bytes"] == 0 for c in comparisons) else ""))
    bottom.set_ylabel("error: predicted/measured - 1 (%)")
    bottom.xaxis.set_major_formatter(plt.FuncFormatter(lambda x, _: size_label(x)))
    bottom.grid(True, which="both", alpha=0.3)
    if bound:
        bottom.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def draw_quantiles(plt, family, test, variant, comparisons, bound, path):
    """Per record, measured and predicted p50, p99 and p99.9, and the relative error of each."""
    records = defaultdict(list)
    for c in comparisons:
        records[(c["trace"], c["id"])].append(c)
    labels = curve_labels({(trace, curve_name(records[(trace, record)][0])) for trace, record in records}, family,
                          test, variant)
    factor, ylabel = value_scale(comparisons[0]["unit"], [c["measured"] for c in comparisons])
    names = ["p50", "p99", "p99.9"]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 7), gridspec_kw={"height_ratios": [3, 2]})
    for i, key in enumerate(sorted(records, key=lambda k: (records[k][0]["bytes"], k))):
        points = sorted(records[key], key=lambda c: QUANTILE_ORDER[c["statistic"]])
        xs = [QUANTILE_ORDER[c["statistic"]] for c in points]
        uses = [c["use"] for c in points]
        color = f"C{i % 10}"
        draw_points(top, xs, [c["measured"] * factor for c in points], uses, color, "-")
        draw_points(top, xs, [c["predicted"] * factor for c in points], uses, color, "--")
        label = f"{labels[(key[0], curve_name(points[0]))]} {size_label(points[0]['bytes'])}"
        top.plot([], [], color=color, label=label if len(records) <= MAX_LEGEND else None)
        draw_points(bottom, xs, [100 * c["error"] for c in points], uses, color, "-")
    top.set_yscale("log")
    top.set_ylabel(ylabel)
    top.set_title(f"{family}: {test}{'/' + variant if variant else ''}\nmeasured and predicted quantiles per record")
    top.grid(True, which="both", alpha=0.3)
    style_legend(top)
    draw_bound(bottom, bound)
    bottom.set_xticks(range(len(names)), names)
    bottom.set_xlim(-0.3, len(names) - 0.7)
    bottom.set_xlabel("quantile of the per-sample times")
    bottom.set_ylabel("error: predicted/measured - 1 (%)")
    bottom.grid(True, alpha=0.3)
    if bound:
        bottom.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def once(ax, label):
    """`label` the first time it is drawn on `ax`, then None: one legend entry however many bars."""
    return None if label in ax.get_legend_handles_labels()[1] else label


def draw_summary(plt, families, path):
    """Per family, median and max |error| over validation records, with the bound each is held to. Families with
    nothing simulated (not modelled yet) are named under the bars, not drawn."""
    shown = [f for f in families if f["validation_records"] or f["calibration_records"]]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(shown) + 2), 5))
    width = 0.38
    ticks, colors = [], []
    for i, f in enumerate(shown):
        bound = f.get("bound", {})
        for offset, key, name, color in ((-width / 2, "median", "median |error|", "tab:blue"),
                                         (width / 2, "max", "max |error|", "tab:orange")):
            x = i + offset
            if f[f"{key}_abs_error"] is not None:  # null: not finite, nothing to draw
                ax.bar(x, 100 * f[f"{key}_abs_error"], width, color=color, label=once(ax, name))
            if key in bound:
                ax.hlines(100 * bound[key], x - width / 2, x + width / 2, color="black", linewidth=2.5,
                          label=once(ax, "bound"))
        imported = f.get("imported", False)
        verdict = ("PASS" if f["pass"] else "FAIL") if bound else ("not judged" if imported else "not checked")
        name = f"{f['family']} (imported)" if imported else f["family"]
        ticks.append(f"{name}\n{verdict}\n{f['validation_records']} val., {f['calibration_records']} cal.")
        colors.append({"PASS": "tab:green", "FAIL": "tab:red"}.get(verdict, "black"))
    ax.set_xticks(range(len(shown)), ticks)
    for tick, color in zip(ax.get_xticklabels(), colors):
        tick.set_color(color)
    ax.set_ylabel("|error| over validation records (%)")
    ax.set_title("snsim validate: error per family against its bound")
    ax.grid(True, axis="y", alpha=0.3)
    if shown:
        ax.legend(fontsize=8)
    others = [f["family"] for f in families if f not in shown]
    if others:
        fig.text(0.01, 0.01, f"nothing simulated (not modelled yet): {', '.join(others)}", fontsize=8)
    fig.tight_layout(rect=(0, 0.04 if others else 0, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("result", help="validation.json written by `snsim validate --out DIR`")
    parser.add_argument("--out", default="validation-plots")
    parser.add_argument("--format", choices=["png", "svg"], default="png")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    args = parser.parse_args()
    families, comparisons = read_result(args.result)  # bad input is reported even where matplotlib is missing
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("plot_validation.py needs matplotlib (Debian: apt install python3-matplotlib)", code=3)

    os.makedirs(args.out, exist_ok=True)
    # A family's imported records have a row of their own, with a bound only where --bounds judged them.
    bounds = {(f["family"], f.get("imported", False)): f.get("bound", {}) for f in families}
    groups = defaultdict(list)
    for c in comparisons:
        # Imported records: one figure per tool and test, their variants as lines.
        source = c.get("source", "snsim-probe") if is_imported(c) else ""
        groups[(source, c["family"], c["test"], "" if source else c["variant"], c["unit"])].append(c)
    units = defaultdict(set)
    for source, family, test, variant, unit in groups:
        units[(source, family, test, variant)].add(unit)
    written = []
    for (source, family, test, variant, unit), members in sorted(groups.items()):
        # A test measured in both units (rare) gets one figure per unit, the unit in the name.
        name = file_name(source, family, test, variant, ("bandwidth" if unit == "B/s" else "time")
                         if len(units[(source, family, test, variant)]) > 1 else "")
        path = os.path.join(args.out, f"{name}.{args.format}")
        draw = draw_quantiles if any(c["statistic"] != "median" for c in members) else draw_curves
        title = f"{source} {family}" if source else family
        written.append(draw(plt, title, test, variant, members, bounds.get((family, bool(source)), {}), path))
    if families:
        written.append(draw_summary(plt, families, os.path.join(args.out, f"summary.{args.format}")))
    if not args.quiet:
        for path in written:
            print(f"wrote {path}")
        if not written:
            print(f"{args.result}: nothing to plot")


if __name__ == "__main__":
    main()
