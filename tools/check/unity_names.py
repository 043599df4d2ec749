#!/usr/bin/env python3
"""Names a unity build could capture silently (tools/check/style.sh).

A unity build compiles a target's sources in batches, one translation unit each, and the unnamed namespaces of a
batch's files become one. A function, variable or type declared in one file's unnamed namespace is then found first
by unqualified lookup from the unnamed namespace of every other file of its batch, hiding an entity of the same name
in an enclosing namespace: a call meant for snsim::studies::flow_yaml ran another file's private flow_yaml, with no
diagnostic. So no library source may declare, in its unnamed namespace, a name that a header or another library
source declares in an enclosing namespace. (Two files' unnamed namespaces declaring the same name do not compile in
a unity build; tests are left out: ctags reads the locals of doctest's test bodies as namespace-scope names.)

Usage: unity_names.py [REPO_ROOT]; exit 1 listing each such name. Needs Universal Ctags.
"""
import collections
import json
import os
import shutil
import subprocess
import sys

KINDS = {"function", "prototype", "variable", "class", "struct", "enum", "typedef", "alias", "union"}


def main() -> int:
    os.chdir(sys.argv[1] if len(sys.argv) > 1 else ".")
    listed = subprocess.run(["git", "ls-files", "*.cpp", "*.hpp"], capture_output=True, text=True, check=True)
    # The CUDA tools build on their own (tools/probe, tools/crosscheck); tests and benchmarks are not checked.
    files = [f for f in listed.stdout.split() if not f.startswith(("tools/probe/", "tools/crosscheck/"))
             and not f.endswith(("_test.cpp", "_bench.cpp"))]
    # Debian's universal-ctags installs ctags-universal (and `ctags` through the alternatives system).
    ctags = shutil.which("ctags-universal") or shutil.which("ctags")
    if not ctags:
        print("unity_names.py: Universal Ctags not found (Debian: universal-ctags; tools/install-deps.sh installs it)")
        return 2
    tags = subprocess.run([ctags, "--output-format=json", "--fields=+sZK", "--c++-kinds=+p", "--extras=-F", "-f",
                           "-"] + files, capture_output=True, text=True, check=True).stdout
    hidden = []  # (name, enclosing namespace, file)
    declared = collections.defaultdict(set)  # name -> {(namespace, file)}
    for line in tags.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") not in KINDS:
            continue
        if tag.get("scopeKind") not in (None, "namespace") or tag["name"].startswith("__anon"):
            continue
        scope = [p for p in tag.get("scope", "").split("::") if p]
        if scope and scope[-1].startswith("__anon"):
            hidden.append((tag["name"], "::".join(p for p in scope if not p.startswith("__anon")), tag["path"]))
        elif not any(p.startswith("__anon") for p in scope):
            declared[tag["name"]].add(("::".join(scope), tag["path"]))
    found = 0
    for name, enclosing, path in sorted(set(hidden)):
        over = sorted({f"{ns or '(global)'}::{name} in {f}" for ns, f in declared[name]
                       if f != path and (ns == "" or enclosing == ns or enclosing.startswith(ns + "::"))})
        if over:
            found += 1
            print(f"{path}: {name} in an unnamed namespace hides {'; '.join(over)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
