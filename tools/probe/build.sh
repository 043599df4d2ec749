#!/usr/bin/env bash
# Builds snsim-probe with what this machine has, into build-probe/ at the repository root (git-ignored).
#
#   no nvcc        -> says so and exits 0 (the probe is built only where CUDA's compiler exists)
#   NCCL           -> the collective family (the CUDA toolkit's copy, or Python's nvidia/nccl, or $NCCL_HOME)
#   NVSHMEM        -> the nvshmem family (Python's nvidia/nvshmem, or $NVSHMEM_HOME); if absent or if it fails
#                     to build, the binary is built without it and the script says so, exiting 0
#   .nvshmem/      -> headers copied from a GPU machine: nvshmem.cu is compile-checked only
# A GPU is never needed to build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build-probe}
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}

nvcc=""
if [[ -x "$cuda/bin/nvcc" ]]; then nvcc="$cuda/bin/nvcc"; elif command -v nvcc >/dev/null; then nvcc=$(command -v nvcc); fi
if [[ -z "$nvcc" ]]; then
  echo "snsim-probe: nvcc not found: nothing built (set CUDA_HOME to build)"
  exit 0
fi
cuda=$(cd "$(dirname "$nvcc")/.." && pwd)

# Python wheels (nvidia-nccl-*, nvidia-nvshmem-*) put NCCL and NVSHMEM under site-packages/nvidia/.
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)

# Prints "include_dir lib_dir link_flag" for the first candidate that has the header and the library.
find_library() {  # header, library stem, candidates...
  local header=$1 stem=$2
  shift 2
  local root lib file
  for root in "$@"; do
    [[ -n "$root" && -f "$root/include/$header" ]] || continue
    for lib in "$root/lib" "$root/lib64" "$root/lib/x86_64-linux-gnu"; do
      for file in "$lib/$stem.so" "$lib"/"$stem".so.[0-9]*; do
        if [[ -e "$file" ]]; then
          echo "$root/include $lib -l:$(basename "$file")"
          return 0
        fi
      done
    done
  done
  return 1
}

make_args=(-C "$here" -j"$jobs" "BUILD_DIR=$build" "CUDA_HOME=$cuda" "NVCC=$nvcc")

if nccl=$(find_library nccl.h libnccl "${NCCL_HOME:-}" "$cuda" "${site:+$site/nvidia/nccl}" /usr); then
  read -r nccl_include nccl_lib nccl_link <<<"$nccl"
  echo "snsim-probe: NCCL found ($nccl_lib): building the collective family"
  make_args+=(HAVE_NCCL=1 "NCCL_INCLUDE=$nccl_include" "NCCL_LIB=$nccl_lib" "NCCL_LINK=$nccl_link")
else
  echo "snsim-probe: NCCL not found: skipped the collective family"
  make_args+=(HAVE_NCCL=0)
fi

nvshmem_root=""
for candidate in "${NVSHMEM_HOME:-}" "${site:+$site/nvidia/nvshmem}"; do
  if [[ -n "$candidate" && -f "$candidate/include/nvshmem.h" && -e "$candidate/lib/libnvshmem_device.a" ]]; then
    nvshmem_root=$candidate
    break
  fi
done

built=0
if [[ -n "$nvshmem_root" ]]; then
  echo "snsim-probe: NVSHMEM found ($nvshmem_root): building the nvshmem family"
  if make "${make_args[@]}" HAVE_NVSHMEM=1 "NVSHMEM_INCLUDE=$nvshmem_root/include" "NVSHMEM_LIB=$nvshmem_root/lib"; then
    built=1
    echo "snsim-probe: at run time: export LD_LIBRARY_PATH=$nvshmem_root/lib:\${LD_LIBRARY_PATH:-}"
  else
    echo "snsim-probe: NVSHMEM build failed: building without the nvshmem family"
  fi
else
  echo "snsim-probe: NVSHMEM not found: skipped the nvshmem family"
  if [[ -f "$repo/.nvshmem/include/nvshmem.h" ]]; then
    echo "snsim-probe: compile-checking the nvshmem family against $repo/.nvshmem/include (no library: not linked)"
    make "${make_args[@]}" check-nvshmem "NVSHMEM_INCLUDE=$repo/.nvshmem/include"
  fi
fi
if [[ $built == 0 ]]; then
  make "${make_args[@]}" HAVE_NVSHMEM=0
fi
echo "snsim-probe: built $build/snsim-probe"
