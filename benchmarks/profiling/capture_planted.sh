#!/usr/bin/env bash
# One-shot capture of the planted-bottleneck suite with Nsight Compute, on one GPU (written for an H200).
#
#   bash benchmarks/profiling/capture_planted.sh OUT        # from the repository root
#
# Steps: build every planted/<id>.cu (build_planted.sh); run each program once plainly and check that it prints
# "planted_<id> ok"; profile it once with
#   ncu --clock-control none --set full -k regex:planted_ --launch-skip <warm-ups> --launch-count <n>
#       --export <work>/reports/<id> ./<id>
# (launch_overhead: skip 10, profile 5; every other program: skip its 1 warm-up, profile 1), then turn each
# report into CSV with `ncu --import <report> --csv --page raw --print-units base`. The CSV comes from the saved
# report rather than from the profiling run's stdout: with --export ncu prints no results, and the program's own
# output would land in the same stream.
#
# A failing build, run or profile is recorded and the script carries on. Everything is staged in a temporary
# directory; OUT only ever holds (rewritten after each kernel, so a timeout still leaves a usable result):
#   OUT/manifest.json            tool versions, GPU and clocks, per-kernel status, wall times, ncu durations
#   OUT/planted_csv.tar.gz       csv/<id>.csv, logs/ (build, run and ncu logs, resource usage)
#   OUT/planted_reports.tar.gz   reports/<id>.ncu-rep (split into .part0, .part1, ... if over 15 MiB)
# and a summary table is printed at the end.
#
# Time: 17 programs and 21 profiled launches. Roughly 17 x ~2 s of ncu start-up + 21 x ~2.3 s of --set full
# replay + 17 x ~1-2 s of CSV export + ~30-60 s of parallel build + ~15 s of plain runs: about 3-4 minutes,
# well inside a 10-minute limit. A budget guard (PLANTED_BUDGET_S, default 540 s) skips what would not fit.
#
# Environment: NCU (path to ncu; default: PATH, then /opt/nvidia/nsight-compute/*/ncu, /usr/local/cuda/bin/ncu),
# NVCC, PLANTED_BUDGET_S. Never change clocks: --clock-control none is always passed.
set -uo pipefail

OUT="${1:?usage: capture_planted.sh OUT}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUDGET_S="${PLANTED_BUDGET_S:-540}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/planted_capture.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
BIN="$WORK/bin"
mkdir -p "$BIN" "$WORK/csv" "$WORK/reports" "$WORK/logs"
STATE="$WORK/state.tsv"   # one line per kernel: id status run_rc run_wall_s prof_rc prof_wall_s import_rc skip count
: > "$STATE"
START_EPOCH="$(date +%s)"
SECONDS=0

log() { echo "[capture $(printf '%4d' "$SECONDS")s] $*" | tee -a "$WORK/logs/capture.log"; }

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }

# --- tools ---------------------------------------------------------------------------------------------
NCU="${NCU:-$(command -v ncu || true)}"
if [ -z "$NCU" ]; then
  for cand in $(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort -V) /usr/local/cuda/bin/ncu; do
    [ -x "$cand" ] && NCU="$cand"
  done
fi
{
  echo "ncu: ${NCU:-not found}"
  [ -n "$NCU" ] && "$NCU" --version 2>&1
} > "$WORK/logs/ncu_version.txt"
("${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" --version 2>&1 || echo "nvcc not found") \
  > "$WORK/logs/nvcc_version.txt"
(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi failed") \
  > "$WORK/logs/gpu_before.csv"
log "ncu: ${NCU:-NOT FOUND}; workdir $WORK"

# --- manifest, packing, summary ------------------------------------------------------------------------
write_manifest() {  # $1: "final" prints the summary table
  python3 - "$WORK" "$OUT" "$START_EPOCH" "$BUDGET_S" "${1:-}" <<'PY'
import csv, json, os, sys, time
work, out, start, budget, final = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "final"

def text(name):
    try:
        with open(os.path.join(work, "logs", name), errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None

def num(v):
    try:
        x = float(str(v).replace(",", ""))
    except ValueError:
        return None
    return int(x) if x.is_integer() and "." not in str(v) else x

def tail(name, n=6):
    t = text(name)
    return "\n".join(t.splitlines()[-n:]) if t else None

def csv_rows(path):
    """Profiled kernels in an ncu raw-page CSV: [{name, duration_ns, dram_pct, sm_pct}]."""
    try:
        with open(path, newline="", errors="replace") as f:
            rows = list(csv.reader(f))
    except OSError:
        return None
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None:
        return []
    cols = rows[head]
    def col(row, name):
        return num(row[cols.index(name)]) if name in cols and cols.index(name) < len(row) else None
    kernels = []
    for r in rows[head + 1:]:
        if not r or num(r[0]) is None:   # the units row and anything else that is not a result
            continue
        kernels.append({"name": r[cols.index("Kernel Name")] if "Kernel Name" in cols else None,
                        "duration_ns": col(r, "gpu__time_duration.sum"),
                        "dram_pct": col(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                        "sm_pct": col(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed")})
    return kernels

def gpu():
    raw = text("gpu_before.csv") or ""
    lines = [l for l in raw.splitlines() if l.strip()]
    if len(lines) >= 2 and "," in lines[0]:
        keys = [k.strip() for k in lines[0].split(",")]
        vals = [v.strip() for v in lines[1].split(",")]
        return dict(zip(keys, vals)) | {"raw": raw}
    return {"raw": raw}

kernels = []
with open(os.path.join(work, "state.tsv")) as f:
    for line in f:
        p = line.rstrip("\n").split("\t")
        if len(p) < 10:
            continue
        kid, status, run_rc, run_wall, prof_rc, prof_wall, imp_rc, skip, count, note = p[:10]
        run_out = text(f"{kid}.run.txt")
        prof = csv_rows(os.path.join(work, "csv", f"{kid}.csv"))
        problem = None
        if status in ("run_failed", "build_failed"):
            problem = tail(f"{kid}.run.txt") or tail("build.txt")
        elif status != "ok":
            problem = tail(f"{kid}.ncu.log") or tail(f"{kid}.import.log")
        kernels.append({
            "id": kid, "status": status, "note": note or None, "log_tail": problem,
            "launch_skip": int(skip), "launch_count": int(count),
            "run": {"rc": num(run_rc), "wall_s": num(run_wall),
                    "output": run_out.splitlines()[-1] if run_out else None},
            "profile": {"rc": num(prof_rc), "wall_s": num(prof_wall), "import_rc": num(imp_rc),
                        "kernels": prof, "csv": f"csv/{kid}.csv" if prof is not None else None,
                        "report": f"reports/{kid}.ncu-rep"
                        if os.path.exists(os.path.join(work, "reports", f"{kid}.ncu-rep")) else None},
        })

manifest = {
    "suite": "planted bottlenecks (benchmarks/profiling/planted)",
    "command": "bash benchmarks/profiling/capture_planted.sh OUT",
    "ncu_args": "--clock-control none --set full -k regex:planted_ --launch-skip S --launch-count C --export ...; "
                "CSV: ncu --import R --csv --page raw --print-units base",
    "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
    "wall_s": round(time.time() - start, 1), "budget_s": budget, "complete": final,
    "gpu": gpu(), "gpu_after": text("gpu_after.csv"),
    "ncu_version": text("ncu_version.txt"), "nvcc_version": text("nvcc_version.txt"),
    "build": {"ok": (text("build.rc") or "").strip() == "0", "summary": text("build.txt")},
    "kernels": kernels,
}
with open(os.path.join(out, "manifest.json.tmp"), "w") as f:
    json.dump(manifest, f, indent=1)
os.replace(os.path.join(out, "manifest.json.tmp"), os.path.join(out, "manifest.json"))

if final:
    def fmt(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) else "-".rjust(int(spec.split(".")[0]))
    print(f"\n{'id':30} {'status':10} {'run_s':>6} {'prof_s':>6} {'n':>2} {'dur_us':>9} {'dram%':>6} {'sm%':>6}")
    for k in kernels:
        ks = k["profile"]["kernels"] or []
        first = ks[0] if ks else {}
        dur = first.get("duration_ns")
        print(f"{k['id']:30} {k['status']:10} {fmt(k['run']['wall_s'], '6.1f')} {fmt(k['profile']['wall_s'], '6.1f')} "
              f"{len(ks):2d} {fmt(dur / 1000 if dur is not None else None, '9.1f')} "
              f"{fmt(first.get('dram_pct'), '6.1f')} {fmt(first.get('sm_pct'), '6.1f')}")
    ok = sum(k["status"] == "ok" for k in kernels)
    print(f"\n{ok}/{len(kernels)} captured in {manifest['wall_s']} s; GPU: {manifest['gpu'].get('name', '?')}")
PY
}

pack() {
  tar -C "$WORK" -cf - csv logs | gzip -1 > "$OUT/planted_csv.tar.gz.tmp" && mv "$OUT/planted_csv.tar.gz.tmp" "$OUT/planted_csv.tar.gz"
  tar -C "$WORK" -cf - reports | gzip -1 > "$WORK/reports.tar.gz"
  rm -f "$OUT"/planted_reports.tar.gz "$OUT"/planted_reports.tar.gz.part*
  if [ "$(stat -c %s "$WORK/reports.tar.gz")" -le $((15 * 1024 * 1024)) ]; then
    mv "$WORK/reports.tar.gz" "$OUT/planted_reports.tar.gz"
  else  # transfer limit: 16 MiB per file; rejoin with: cat planted_reports.tar.gz.part* > planted_reports.tar.gz
    split -b 15M -d -a 1 "$WORK/reports.tar.gz" "$OUT/planted_reports.tar.gz.part"
    rm -f "$WORK/reports.tar.gz"
  fi
}

record() {  # id status run_rc run_wall prof_rc prof_wall import_rc skip count note
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$STATE"
  write_manifest || log "manifest writer failed"
  pack || log "packing failed"
}

# --- build ---------------------------------------------------------------------------------------------
log "building"
bash "$HERE/build_planted.sh" "$BIN" > "$WORK/logs/build.txt" 2>&1
echo $? > "$WORK/logs/build.rc"
mkdir -p "$WORK/logs/build"
cp "$BIN"/*.build.log "$BIN"/*.resources.txt "$WORK/logs/build/" 2>/dev/null
log "build rc=$(cat "$WORK/logs/build.rc")"

IDS=()
for f in "$HERE"/planted/*.cu; do IDS+=("$(basename "$f" .cu)"); done

# --- plain runs ----------------------------------------------------------------------------------------
declare -A RUN_RC RUN_WALL
for id in "${IDS[@]}"; do
  if [ ! -x "$BIN/$id" ]; then RUN_RC[$id]=-1; RUN_WALL[$id]=0; continue; fi
  t0="$(now)"
  timeout 60 "$BIN/$id" > "$WORK/logs/$id.run.txt" 2>&1
  rc=$?
  RUN_WALL[$id]="$(elapsed "$t0" "$(now)")"
  if [ "$rc" -eq 0 ] && ! grep -q "^planted_$id ok" "$WORK/logs/$id.run.txt"; then
    rc=99  # exited 0 without its ok line
  fi
  RUN_RC[$id]=$rc
  log "run $id rc=${RUN_RC[$id]} ${RUN_WALL[$id]} s: $(tail -n 1 "$WORK/logs/$id.run.txt")"
done

# --- profiles ------------------------------------------------------------------------------------------
for id in "${IDS[@]}"; do
  skip=1; count=1
  [ "$id" = launch_overhead ] && { skip=10; count=5; }
  if [ ! -x "$BIN/$id" ]; then
    record "$id" build_failed -1 0 "" "" "" "$skip" "$count" "did not compile"; continue
  fi
  if [ "${RUN_RC[$id]}" != 0 ]; then
    record "$id" run_failed "${RUN_RC[$id]}" "${RUN_WALL[$id]}" "" "" "" "$skip" "$count" "plain run failed; not profiled"; continue
  fi
  if [ -z "$NCU" ]; then
    record "$id" no_ncu 0 "${RUN_WALL[$id]}" "" "" "" "$skip" "$count" "ncu not found"; continue
  fi
  left=$((BUDGET_S - SECONDS))
  if [ "$left" -lt 30 ]; then
    record "$id" skipped 0 "${RUN_WALL[$id]}" "" "" "" "$skip" "$count" "time budget spent"; continue
  fi
  limit=$(( left - 15 < 240 ? left - 15 : 240 ))
  t0="$(now)"
  timeout "$limit" "$NCU" --clock-control none --set full -k regex:planted_ \
    --launch-skip "$skip" --launch-count "$count" \
    --export "$WORK/reports/$id" --force-overwrite "$BIN/$id" > "$WORK/logs/$id.ncu.log" 2>&1
  prc=$?
  pwall="$(elapsed "$t0" "$(now)")"
  irc=""
  if [ -f "$WORK/reports/$id.ncu-rep" ]; then
    timeout 120 "$NCU" --import "$WORK/reports/$id.ncu-rep" --csv --page raw --print-units base \
      > "$WORK/csv/$id.csv" 2> "$WORK/logs/$id.import.log"
    irc=$?
  fi
  status=ok
  if [ "$prc" -ne 0 ]; then status=ncu_failed
  elif [ "$irc" != 0 ]; then status=csv_failed
  elif [ "$(grep -cE '(^|,)"(void )?planted_' "$WORK/csv/$id.csv")" -lt "$count" ]; then status=incomplete  # kernel rows
  fi
  log "profile $id: $status (ncu rc=$prc, ${pwall} s, import rc=${irc:-none})"
  [ "$status" = ok ] || tail -n 5 "$WORK/logs/$id.ncu.log" | sed 's/^/    /'
  record "$id" "$status" 0 "${RUN_WALL[$id]}" "$prc" "$pwall" "$irc" "$skip" "$count" ""
done

(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 || true) > "$WORK/logs/gpu_after.csv"
log "done"
write_manifest final
pack
ls -l "$OUT"
