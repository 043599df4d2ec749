#!/usr/bin/env bash
# Starts xc-pgas once per GPU (rank r on GPU r) and waits for all of them; rank 0 writes the traces.
#   pgas.sh RANKS OUT_DIR [xc-pgas options...]     e.g. pgas.sh 2 traces --prefix h200x2-xc
# NVLink multicast stays off whatever the caller set; NVSHMEM bootstraps over the loopback (unique id in a file).
set -uo pipefail
ranks=${1:?ranks}; out=${2:?out dir}; shift 2
here=$(cd "$(dirname "$0")" && pwd)
bin=${XC_PGAS:-$here/../../build-crosscheck/xc-pgas}
[ -f "$(dirname "$bin")/pgas-env.sh" ] && . "$(dirname "$bin")/pgas-env.sh"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-4294967296}
mkdir -p "$out"
rendezvous=$(mktemp -d)
pids=()
for ((r = 0; r < ranks; r++)); do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((ranks - 1))) "$bin" --rank "$r" --ranks "$ranks" --rendezvous "$rendezvous" \
    --out "$out" "$@" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
rm -rf "$rendezvous"
exit $rc
