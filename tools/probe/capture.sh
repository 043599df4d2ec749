#!/usr/bin/env bash
# One whole capture on a GPU machine: build, then each named step, every probe run bounded by `timeout`.
# Traces, the log and a timing line per step go to OUT_DIR; CAPTURES.md records what produced what.
#
#   usage: tools/probe/capture.sh OUT_DIR STEP...
#   steps: headers        NVSHMEM's include/ (to compile-check on a machine without NVSHMEM)  } both land in
#          quick          a --quick dry run of every built family, one trace each            } OUT_DIR/extras.tar.gz
#          copy | latency-jitter | launch-1gpu | collective | nvshmem | nvshmem-bidir | uvm | step
#                         a full capture into OUT_DIR/<prefix>-<step>.jsonl (PREFIX, default h200x2;
#                         launch-1gpu runs with CUDA_VISIBLE_DEVICES=0 and is named h200x1-launch.jsonl)
#          collective-proto
#                         the collective family three more times with NCCL_PROTO forced to LL, LL128 and
#                         Simple, tarred into OUT_DIR/<prefix>-collective-proto.tar.gz (one file comes back)
# Trace files are named relative to OUT_DIR, so their headers carry no directory of the capturing machine.
set -uo pipefail

out=${1:?usage: capture.sh OUT_DIR STEP...}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
prefix=${PREFIX:-h200x2}

# NVLink multicast stays off in every process (the probe forces this too).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
extra=$(mktemp -d)

"$here/build.sh" || exit 1
cd "$out" || exit 1
probe="$repo/build-probe/snsim-probe"
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
if [[ -n "$site" ]]; then
  export LD_LIBRARY_PATH="$site/nvidia/nvshmem/lib:$site/nvidia/nccl/lib:${LD_LIBRARY_PATH:-}"
fi
"$probe" --version
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv || true
nvidia-smi topo -m || true

status=0
# run NAME SECONDS [VAR=VALUE...] -- PROBE-ARGS...
run() {
  local name=$1 seconds=$2
  shift 2
  local vars=()
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  local started=$(date +%s)
  echo "=== step $name: env ${vars[*]:-} snsim-probe $* (timeout ${seconds}s)"
  env "${vars[@]}" timeout --signal=TERM --kill-after=10 "$seconds" "$probe" "$@"
  local rc=$?
  echo "=== step $name: exit $rc, wall $(( $(date +%s) - started )) s, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  [[ $rc == 0 ]] || status=1
}

for step in "$@"; do
  case $step in
    headers)
      if [[ -n "$site" && -d "$site/nvidia/nvshmem/include" ]]; then
        tar -C "$site/nvidia/nvshmem" -czf "$extra/nvshmem-include.tar.gz" include
      fi ;;
    quick)
      for family in $("$probe" --list | awk -F'[: ]' '/^[a-z]/ {print $1}'); do
        run "quick-$family" 120 -- --quick --family "$family" --out "quick-$family.jsonl"
        mv "quick-$family.jsonl" "$extra/"
      done ;;
    copy) run copy 300 -- --family copy --out "$prefix-copy.jsonl" ;;
    latency-jitter) run latency-jitter 180 -- --family latency,jitter --out "$prefix-latency-jitter.jsonl" ;;
    launch-1gpu) run launch-1gpu 120 CUDA_VISIBLE_DEVICES=0 -- --family launch --out "h200x1-launch.jsonl" ;;
    collective) run collective 240 -- --family collective --out "$prefix-collective.jsonl" ;;
    collective-proto)
      mkdir -p proto
      for proto in LL LL128 Simple; do
        name=$prefix-collective-proto-$(tr '[:upper:]' '[:lower:]' <<<"$proto").jsonl
        cd proto && run "collective-$proto" 240 NCCL_PROTO=$proto -- --family collective --out "$name"
        cd "$out" || exit 1
      done
      tar -czf "$prefix-collective-proto.tar.gz" -C proto . && rm -rf proto ;;
    nvshmem) run nvshmem 180 -- --family nvshmem --out "$prefix-nvshmem.jsonl" ;;
    nvshmem-bidir) run nvshmem-bidir 180 -- --family nvshmem-bidir --out "$prefix-nvshmem-bidir.jsonl" ;;
    uvm) run uvm 300 -- --family uvm --out "$prefix-uvm.jsonl" ;;
    step) run step 300 -- --family step --out "$prefix-step.jsonl" ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
# At most 8 files come back from a device run: the extras travel as one archive.
if [[ -n "$(ls -A "$extra")" ]]; then tar -C "$extra" -czf "$out/extras.tar.gz" .; fi
exit $status
