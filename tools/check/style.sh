#!/usr/bin/env bash
# The tree's habits, checked in CI (.ci/run) and runnable by hand from the repository root:
#   1. every C++ and CUDA file is clang-formatted (.clang-format);
#   2. file names are unique across folders (a name says which concern a file belongs to), CMakeLists.txt and
#      README.md excepted;
#   3. clang-tidy (.clang-tidy: a short list, each check with its reason) is clean on the C++ sources changed in the
#      last TIDY_DAYS days (default 7; TIDY_ALL=1: the whole tree), using BUILD_DIR's compile_commands.json (a build
#      configured with -DCMAKE_UNITY_BUILD=OFF: a unity build lists its batches, not the sources).
# Exit 1 on the first kind of failure found, listing every offending file.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
status=0

mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu')
unformatted=()
for f in "${sources[@]}"; do
  clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || unformatted+=("$f")
done
if ((${#unformatted[@]})); then
  printf 'not clang-formatted (run clang-format -i on them):\n'; printf '  %s\n' "${unformatted[@]}"; status=1
else
  echo "clang-format: ${#sources[@]} files clean"
fi

dups=$(git ls-files | grep -v -E '(^|/)(CMakeLists\.txt|README\.md)$' | grep -v -E '^(validation/traces|validation/importers/samples|fuzz/regressions|docs/img)/' \
  | awk -F/ '{print $NF "\t" $0}' | sort | awk -F'\t' '$1 == prev {print prevpath; print $2} {prev = $1; prevpath = $2}' | sort -u)
if [ -n "$dups" ]; then
  printf 'file names used in more than one folder:\n%s\n' "$(sed 's/^/  /' <<< "$dups")"; status=1
else
  echo "file names: unique"
fi

if ! command -v clang-tidy > /dev/null || [ ! -f "$build/compile_commands.json" ]; then
  echo "clang-tidy: skipped (needs clang-tidy and $build/compile_commands.json)"
  exit $status
fi
if [ "${TIDY_ALL:-0}" = 1 ]; then
  mapfile -t tidy < <(git ls-files '*.cpp')
else
  since=$(git rev-list -1 --before="${TIDY_DAYS:-7} days ago" HEAD)
  if [ -n "$since" ]; then mapfile -t tidy < <(git diff --name-only --diff-filter=AMR "$since" -- '*.cpp')
  else mapfile -t tidy < <(git ls-files '*.cpp'); fi
fi
# Only files the build compiles (generated and fuzz sources are not in compile_commands.json).
mapfile -t tidy < <(for f in "${tidy[@]}"; do grep -q "\"file\": \".*/$f\"" "$build/compile_commands.json" && echo "$f"; done)
if ((${#tidy[@]})); then
  if printf '%s\n' "${tidy[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet > "${TMPDIR:-/tmp}/snsim-tidy.log" 2>&1; then
    echo "clang-tidy: ${#tidy[@]} files clean"
  else
    grep -E 'error:|warning:' "${TMPDIR:-/tmp}/snsim-tidy.log" | sort -u | head -n 50; status=1
  fi
else
  echo "clang-tidy: no changed C++ sources"
fi
exit $status
