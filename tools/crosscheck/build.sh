#!/usr/bin/env bash
# Builds snsim-crosscheck: build-crosscheck/xc always (CUDA runtime, driver API, cuBLAS), and build-crosscheck/xc-pgas
# (NVSHMEM and NCCL, the two-GPU one-sided part) where both are found. Never fails for want of NVSHMEM or NCCL.
#   BUILD_DIR  output folder (default: build-crosscheck at the repository root)
#   ARCH       GPU architecture (default sm_90)
#   NVSHMEM_HOME, NCCL_HOME  where to look first; then Python's site-packages/nvidia/{nvshmem,nccl}, the CUDA toolkit
#   NVSHMEM_INCLUDE  headers only: compile-checks pgas.cu without linking (no libraries needed)
#   PGAS_ONLY=1      build xc-pgas only (xc already built)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${BUILD_DIR:-$root/build-crosscheck}
arch=${ARCH:-sm_90}
cuda_home=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
nvcc=$cuda_home/bin/nvcc
if [ ! -x "$nvcc" ]; then echo "build.sh: no nvcc: nothing built"; exit 0; fi
mkdir -p "$out/obj"
flags=(-O2 -std=c++20 -arch="$arch" -Xcompiler -Wall -lineinfo -diag-suppress 3012,3013)
jobs=${JOBS:-$(nproc)}

sources=(xc.cpp lane.cu suite_copies.cu suite_launch.cu suite_uvm_jitter.cu suite_gemm.cu suite_peer.cu main.cu)
[ "${PGAS_ONLY:-0}" = 1 ] && sources=(xc.cpp)
printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} sh -c \
  "\"$nvcc\" ${flags[*]} -c \"$here/src/{}\" -o \"$out/obj/{}.o\" || exit 255"
if [ "${PGAS_ONLY:-0}" != 1 ]; then
  objects=()
  for s in "${sources[@]}"; do objects+=("$out/obj/$s.o"); done
  "$nvcc" "${flags[@]}" "${objects[@]}" -o "$out/xc" -L"$cuda_home/lib64" -L"$cuda_home/lib64/stubs" -lcublas -lcuda -ldl
  echo "build.sh: built $out/xc"
fi

# The one-sided part needs NVSHMEM (device library, relocatable device code) and NCCL.
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
nv=${NVSHMEM_HOME:-}
[ -z "$nv" ] && [ -n "$site" ] && [ -d "$site/nvidia/nvshmem" ] && nv=$site/nvidia/nvshmem
nc=${NCCL_HOME:-}
[ -z "$nc" ] && [ -n "$site" ] && [ -d "$site/nvidia/nccl" ] && nc=$site/nvidia/nccl
[ -z "$nc" ] && [ -f "$cuda_home/include/nccl.h" ] && nc=$cuda_home
nccl_lib=""
if [ -n "$nc" ]; then
  for d in "$nc/lib" "$nc/lib64"; do [ -e "$d/libnccl.so.2" ] || [ -e "$d/libnccl.so" ] && nccl_lib=$d && break; done
fi
if [ -n "$nv" ] && [ -e "$nv/lib/libnvshmem_device.a" ] && [ -n "$nccl_lib" ]; then
  "$nvcc" "${flags[@]}" -rdc=true -I"$nv/include" -I"$nc/include" -I"$here/src" "$here/src/pgas.cu" "$out/obj/xc.cpp.o" \
    -o "$out/xc-pgas" -L"$nv/lib" -l:libnvshmem_host.so.3 -lnvshmem_device -L"$nccl_lib" -l:libnccl.so.2 \
    -L"$cuda_home/lib64/stubs" -lcuda -Xlinker -rpath="$nv/lib:$nccl_lib"
  echo "build.sh: built $out/xc-pgas (NVSHMEM $nv, NCCL $nccl_lib)"
  echo "export LD_LIBRARY_PATH=$nv/lib:$nccl_lib:\${LD_LIBRARY_PATH:-}" > "$out/pgas-env.sh"
elif [ -n "${NVSHMEM_INCLUDE:-}" ]; then
  "$nvcc" "${flags[@]}" -rdc=true -I"$NVSHMEM_INCLUDE" -I"${nc:-$cuda_home}/include" -I"$here/src" -c "$here/src/pgas.cu" \
    -o "$out/obj/pgas.o"
  echo "build.sh: pgas.cu compiles against $NVSHMEM_INCLUDE (not linked: no NVSHMEM libraries here)"
else
  echo "build.sh: NVSHMEM or NCCL not found: xc-pgas not built"
fi
