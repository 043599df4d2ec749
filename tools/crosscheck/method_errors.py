#!/usr/bin/env python3
"""Median and max |error| per family, timing method and variant, from `snsim validate --out DIR`'s validation.json.

The method of a comparison is its trace's (each snsim-crosscheck file holds one method: its header's `method`);
traces without one (snsim-probe's) count as `probe`. Prints one table over every comparison (calibration and
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


def table(rows, markdown):
    if markdown:
        out = ["| family | method | variant | statistic | records | median abs err | max abs err |",
               "|---|---|---|---|---|---|---|"]
        out += [f"| {f} | {m} | {v} | {s} | {n} | {med:.1%} | {mx:.1%} |" for f, m, v, s, n, med, mx in rows]
    else:
        out = [f"{'family':<11} {'method':<24} {'variant':<12} {'stat':<7} {'records':>7} {'median':>9} {'max':>9}"]
        out += [f"{f:<11} {m:<24} {v:<12} {s:<7} {n:>7} {med:>9.1%} {mx:>9.1%}" for f, m, v, s, n, med, mx in rows]
    return "\n".join(out)


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
    for title, keep in (("every comparison", lambda c: True), ("validation records only",
                                                                lambda c: c["use"] == "validation")):
        groups = collections.defaultdict(list)
        for c in result.get("comparisons", []):
            if keep(c):
                groups[(c["family"], method_of(c["trace"]), c["variant"], c["statistic"])].append(abs(c["error"]))
        rows = [(f, m, var, s, len(v), statistics.median(v), max(v)) for (f, m, var, s), v in sorted(groups.items())]
        print(f"## {title}\n")
        print(table(rows, markdown) + "\n")
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
