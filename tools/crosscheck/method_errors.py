#!/usr/bin/env python3
"""Median and max |error| per family, timing method and variant, from `snsim validate --out DIR`'s validation.json.

The method of a comparison is its own `method` (snsim validate writes it), else its trace's (each snsim-crosscheck
file holds one method: its header's `method`); traces without one (snsim-probe's) count as `probe`. Prints one table over every comparison (calibration and
validation records alike: shipped parameters were fitted on other traces) and one over validation records only,
then the records `snsim validate` simulated no twin for, by family and test, with the reason.

    method_errors.py VALIDATION_DIR_OR_JSON [--markdown]
"""
import collections
import json
import os
import statistics
import sys


def method_of(trace_path, cache={}):
    if trace_path not in cache:
        method = "probe"
        try:
            with open(trace_path) as f:
                method = json.loads(f.readline()).get("method") or "probe"
        except (OSError, ValueError):
            pass
        cache[trace_path] = method
    return cache[trace_path]


def table(rows, columns, markdown):
    head = columns + ["records", "median |err|", "max |err|"]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(list(r[:-3]) + [str(r[-3]), f"{r[-2]:.1%}", f"{r[-1]:.1%}"]) + " |" for r in rows]
    else:
        widths = [max(len(c), *(len(str(r[i])) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
        out = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)) + f"  {'records':>7} {'median':>8} {'max':>8}"]
        out += ["  ".join(str(v).ljust(w) for v, w in zip(r[:-3], widths)) + f"  {r[-3]:>7} {r[-2]:>8.1%} {r[-1]:>8.1%}"
                for r in rows]
    return "\n".join(out)


def grouped(comparisons, key):
    groups = collections.defaultdict(list)
    for c in comparisons:
        groups[key(c)].append(abs(c["error"]))
    return [k + (len(v), statistics.median(v), max(v)) for k, v in sorted(groups.items())]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    if os.path.isdir(path):
        path = os.path.join(path, "validation.json")
    markdown = "--markdown" in sys.argv
    with open(path) as f:
        result = json.load(f)
    comparisons = result.get("comparisons", [])
    for title, chosen in (("every comparison", comparisons),
                          ("validation records only", [c for c in comparisons if c["use"] == "validation"])):
        print(f"## {title}: by family and method\n")
        rows = grouped(chosen, lambda c: (c["family"], c.get("method") or method_of(c["trace"]), c["statistic"]))
        print(table(rows, ["family", "method", "statistic"], markdown) + "\n")
        print(f"## {title}: by family, method, test and variant\n")
        rows = grouped(chosen, lambda c: (c["family"], c.get("method") or method_of(c["trace"]), c["test"], c["variant"], c["statistic"]))
        print(table(rows, ["family", "method", "test", "variant", "statistic"], markdown) + "\n")
    skipped = collections.Counter()
    for line in result.get("skipped", []):
        # "trace:id: reason"; ids are family/test/variant/ranks/bytes/method...
        trace, rest = line.split(".jsonl:", 1)
        rid, reason = rest.split(": ", 1)
        family, test = rid.split("/")[:2]
        skipped[(family, test, method_of(trace + ".jsonl"), reason)] += 1
    print("## records without a twin\n")
    for (family, test, method, reason), n in sorted(skipped.items()):
        print(f"- {family}/{test} ({method}): {n} records: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
