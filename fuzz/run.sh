#!/usr/bin/env bash
# Runs fuzz targets for a fixed budget each and fails on the first crash, leak, sanitizer report or hang
# (docs/hardening.md).
#
#   cmake --preset asan && cmake --build --preset asan -j"$(nproc)"
#   bash fuzz/run.sh [-t SECONDS] [-b BUILD_DIR] [-j JOBS] [TARGET...]
#   default: 60 s each, every target, build-asan, as many targets at once as the machine has cores
#
# Seeds are rebuilt from the repository (fuzz/make_corpora.py); what the fuzzer finds goes to BUILD_DIR/corpus/<t>/,
# crashing inputs to BUILD_DIR/artifacts/<t>/ (copy them to fuzz/regressions/<t>/ once the bug is fixed). One line
# per target at the end: executions, coverage (edges), features, corpus size.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
build=build-asan
jobs=$(nproc)
while getopts "t:b:j:" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    b) build=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario params trace nccl_tests nvbandwidth p2p_bandwidth_latency nvshmem_perftest nvidia_smi replay)

rm -rf "$build/seeds"  # seeds are rebuilt whole: one dropped from the repository must not linger
python3 fuzz/make_corpora.py "$build/seeds" > /dev/null
# One target: its own corpus, artifacts and log, so that targets can run side by side (each fuzzer is one process on
# one core, for its own time budget: running JOBS at once gives each the same executions in less wall time).
fuzz_one() {
  local t=$1
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
  # -timeout: an input that takes longer is a hang; -rss_limit_mb: one that needs more is a memory blow-up.
  # -max_len 16384: large enough for the biggest seed (a scenario of ~5 KB), small enough to stay fast.
  local rc=0
  "$build/fuzz/fuzz_$t" "$build/corpus/$t" "$build/seeds/$t" -dict="$build/seeds/$t.dict" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t/" > "$build/fuzz-$t.log" 2>&1 || rc=$?
  echo "$rc" > "$build/fuzz-$t.status"
}
for t in "${targets[@]}"; do
  rm -f "$build/fuzz-$t.status"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait
summary=()
status=0
for t in "${targets[@]}"; do
  log="$build/fuzz-$t.log"
  if [ "$(cat "$build/fuzz-$t.status" 2> /dev/null)" != 0 ]; then
    echo "fuzz_$t FAILED: see $log and $build/artifacts/$t/"
    grep -E "ERROR|error|Exception|terminate|what\(\)" "$log" | head -20 || true
    status=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -E '^#[0-9]+' "$log" | grep -oE 'cov: [0-9]+ ft: [0-9]+' | tail -1 || true)
  summary+=("$(printf '%-22s %4ss  execs %-9s %-22s corpus %s' "$t" "$seconds" "${execs:-?}" "${cov:-?}" \
                "$(find "$build/corpus/$t" -type f | wc -l)")")
done
printf '%s\n' "${summary[@]}"
exit $status
