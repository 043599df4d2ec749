#!/usr/bin/env python3
"""Shortens the absolute paths in the `argv` of trace headers to their last component, in place.

A capture records its command line; on the device machine that holds the paths of a temporary checkout and of
mktemp folders, which say nothing about the measurement. Only the header line's `argv` changes (every other line,
and every other header field, is kept byte for byte). Used once on the captures made before `xc` and `xc_torch.py`
wrote short paths themselves.

    strip_paths.py TRACE.jsonl...
"""
import json
import os
import sys


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            lines = f.readlines()
        header = json.loads(lines[0])
        argv = header.get("argv")
        if not isinstance(argv, list):
            continue
        short = [os.path.basename(a.rstrip("/")) if isinstance(a, str) and a.startswith("/") else a for a in argv]
        if short == argv:
            continue
        header["argv"] = short
        lines[0] = json.dumps(header) + "\n"
        with open(path, "w") as f:
            f.writelines(lines)
        print(f"{path}: argv {' '.join(short)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
