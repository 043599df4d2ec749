#!/usr/bin/env bash
# Installs every build and test dependency of snsim from Debian 12 packages.
# Used by the README's set-up commands and by .ci/run; safe to run again.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config git ca-certificates \
  libsimgrid-dev libboost-graph-dev libfmt-dev libyaml-cpp-dev \
  libbenchmark-dev doctest-dev libcli11-dev nlohmann-json3-dev \
  zlib1g-dev libprotobuf-dev protobuf-compiler \
  python3 python3-matplotlib time \
  parallel \
  universal-ctags  # GNU parallel: .ci/run's sharded sweep; ctags: tools/check/unity_names.py (a CTest test)
# Hardening (docs/hardening.md): clang and its sanitizer and libFuzzer runtimes (libclang_rt.fuzzer*.a, libclang_rt.asan*.a)
# for the asan preset (clang: the sanitized suite and the fuzz targets).
$SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
