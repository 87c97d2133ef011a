#!/usr/bin/env bash
# Build the planted-bottleneck programs.
#
#   bash benchmarks/profiling/build_planted.sh OUT_DIR [ID ...]
#
# Compiles planted/<id>.cu (every file, or the IDs given) with
#   nvcc -O3 -arch=sm_90a -lineinfo -Xptxas -v <the file's "// nvcc-flags:" line> -o OUT_DIR/<id>
# in parallel (JOBS, default nproc), writing OUT_DIR/<id>.build.log (ptxas registers/spills) and, where cuobjdump
# is found (CUOBJDUMP, PATH, or next to nvcc), OUT_DIR/<id>.resources.txt (cuobjdump --dump-resource-usage).
# Exits non-zero, naming each failed file and printing its log, if any compile fails. NVCC overrides the compiler.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC_DIR="$HERE/planted"
OUT_DIR="${1:?usage: build_planted.sh OUT_DIR [ID ...]}"
shift
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
JOBS="${JOBS:-$(nproc)}"
command -v "$NVCC" >/dev/null 2>&1 || { echo "build_planted: '$NVCC' not found (set NVCC)" >&2; exit 2; }
CUOBJDUMP="${CUOBJDUMP:-$(command -v cuobjdump || true)}"
if [ -z "$CUOBJDUMP" ] && [ -x "$(dirname "$(command -v "$NVCC")")/cuobjdump" ]; then
  CUOBJDUMP="$(dirname "$(command -v "$NVCC")")/cuobjdump"
fi
mkdir -p "$OUT_DIR"

ids=("$@")
if [ ${#ids[@]} -eq 0 ]; then
  for f in "$SRC_DIR"/*.cu; do ids+=("$(basename "$f" .cu)"); done
fi

build_one() {
  local id="$1" src="$SRC_DIR/$1.cu" flags
  [ -f "$src" ] || { echo "no such file: $src" > "$OUT_DIR/$id.build.log"; return 1; }
  flags="$(sed -n 's|^// nvcc-flags:||p' "$src" | head -n 1)"
  # shellcheck disable=SC2086  # the flags line is word-split on purpose
  "$NVCC" -O3 -arch=sm_90a -lineinfo -Xptxas -v $flags -o "$OUT_DIR/$id" "$src" > "$OUT_DIR/$id.build.log" 2>&1 || return 1
  if [ -n "$CUOBJDUMP" ]; then
    "$CUOBJDUMP" --dump-resource-usage "$OUT_DIR/$id" > "$OUT_DIR/$id.resources.txt" 2>&1 || true
  fi
}

pids=()
for id in "${ids[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 0.2; done
  build_one "$id" &
  pids+=("$!")
done

failed=()
for i in "${!ids[@]}"; do
  wait "${pids[$i]}" || failed+=("${ids[$i]}")
done

for id in "${ids[@]}"; do
  [ -f "$OUT_DIR/$id.resources.txt" ] || continue
  # One line per planted kernel: its name and its resource line.
  awk -v id="$id" '/Function .*planted_/ {getline r; gsub(/^ +/, "", r); printf "%-30s %s\n", id, r}' "$OUT_DIR/$id.resources.txt"
done

if [ ${#failed[@]} -gt 0 ]; then
  for id in "${failed[@]}"; do
    echo "=== build FAILED: $id ===" >&2
    cat "$OUT_DIR/$id.build.log" >&2
  done
  echo "build_planted: ${#failed[@]} of ${#ids[@]} failed: ${failed[*]}" >&2
  exit 1
fi
echo "build_planted: ${#ids[@]} programs built in $OUT_DIR"
