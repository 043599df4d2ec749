#!/usr/bin/env bash
# Runs every scenario under workloads/ (examples, claims, uvm, bench, and the base scenario of every sweep plan) with
# `snsim run` and keeps each report.json, so that a behaviour-preserving change can be checked byte for byte:
#
#   tools/check/snapshot_reports.sh build/tools/snsim OUT_DIR            # write OUT_DIR/<scenario path>.report.json
#   tools/check/snapshot_reports.sh build/tools/snsim OUT_DIR REF_DIR    # ... then diff against an earlier snapshot
#
# Reports are deterministic for a fixed seed (docs/hardening.md), so any difference is a change of behaviour.
# Timelines are left off (--set output.timeline=false): they are views of the same run, not figures.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 SNSIM OUT_DIR [REF_DIR]" >&2; exit 2; }
snsim=$(realpath "$1"); out=$2; ref=${3:-}
cd "$(dirname "$0")/../.."
mkdir -p "$out"
mapfile -t scenarios < <(
  { ls workloads/examples/*.yaml workloads/claims/claim*.yaml workloads/uvm/*.yaml workloads/bench/*.yaml
    for plan in workloads/plans/*.yaml; do
      base=$(sed -n 's/^base: *//p' "$plan")
      [ -n "$base" ] && realpath --relative-to=. "$(dirname "$plan")/$base"
    done; } | sort -u)
failed=0
for s in "${scenarios[@]}"; do
  dir=$(mktemp -d)
  rc=0
  "$snsim" run "$s" --quiet --set output.timeline=false --out "$dir" > "$dir/stdout" 2> "$dir/stderr" || rc=$?
  # exit 4 is a simulated failure of the system (a lost GPU): its report is a result too.
  if [ -f "$dir/report.json" ] && { [ $rc -eq 0 ] || [ $rc -eq 4 ]; }; then
    mkdir -p "$out/$(dirname "$s")"
    cp "$dir/report.json" "$out/$s.report.json"
    echo "$rc" > "$out/$s.exit"
  else
    echo "FAILED: $s (exit $rc): $(tail -n 1 "$dir/stderr")" >&2
    failed=1
  fi
  rm -rf "$dir"
done
echo "${#scenarios[@]} scenarios, reports in $out"
if [ -n "$ref" ]; then
  if diff -r -q "$ref" "$out"; then echo "byte-identical to $ref"; else echo "reports differ from $ref" >&2; exit 1; fi
fi
exit $failed
