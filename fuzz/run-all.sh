#!/usr/bin/env bash
# Long runs of the fuzz targets on the current commit, recorded in README.md's table.
#
#   fuzz/run-all.sh                      # every target, each to its goal
#   fuzz/run-all.sh scripts schedules    # some of them
#   GOAL=20000 fuzz/run-all.sh lint      # a short trial (executions per target)
#
# Each target runs from fuzz/seeds/<target> and its own corpus (fuzz/corpus/<target>, kept between
# runs) until it has executed its goal (admission 10,000,000 inputs, the others 1,000,000), a
# crash stops it, or MAX_SECONDS (default 4 hours) pass. SANITIZER (default `address`, as the
# README documents; `none` for throughput) is passed to cargo-fuzz as `-s` and recorded in the
# row. AddressSanitizer on by default, as the README
# documents. The row it writes: date, commit, executions, crashes (artifacts libFuzzer wrote),
# the slowest input (CPU time, measured by the harness, caches warm), libFuzzer's peak RSS, and
# the wall time. Logs and the slowest inputs are kept in fuzz/artifacts/runs/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "$(git status --porcelain)" ]; then
  echo "error: the tree has uncommitted changes; the table records the commit the runs come from" >&2
  exit 1
fi
commit=$(git rev-parse --short=12 HEAD)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(admission lint scripts schedules view)
max_seconds=${MAX_SECONDS:-14400}

goal() {
  if [ -n "${GOAL:-}" ]; then echo "$GOAL"; return; fi
  case $1 in
    admission) echo 10000000 ;;
    *) echo 1000000 ;;
  esac
}

# The stable compiler with its nightly features unlocked: cargo-fuzz passes -Zsanitizer=address.
export RUSTC_BOOTSTRAP=1
runs=fuzz/artifacts/runs
mkdir -p "$runs"
sanitizer=${SANITIZER:-address}
if ! cargo fuzz build -s "$sanitizer" >"$runs/build.log" 2>&1; then
  tail -n 30 "$runs/build.log" >&2
  exit 1
fi
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  before=$(find "fuzz/artifacts/$t" -maxdepth 1 -type f | wc -l)
  log="$runs/$t.log"
  start=$(date +%s)
  echo "== $t: $(goal "$t") executions at most, ${max_seconds}s at most; log in $log"
  set +e
  PROMOTION_FUZZ_SLOWEST_DIR="$runs" cargo fuzz run -s "$sanitizer" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -dict="fuzz/dicts/$t.dict" -runs="$(goal "$t")" -max_total_time="$max_seconds" \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  seconds=$(( $(date +%s) - start ))
  crashes=$(( $(find "fuzz/artifacts/$t" -maxdepth 1 -type f | wc -l) - before ))
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes="? (exit $rc)"
  fi
  python3 - "$t" "$commit" "$crashes" "$seconds" "$log" "$sanitizer" <<'PY'
import datetime, pathlib, re, sys

target, commit, crashes, seconds, log, sanitizer = sys.argv[1:]
text = pathlib.Path(log).read_text(errors="replace")
def last(pattern, default="?"):
    found = re.findall(pattern, text, re.M)
    return found[-1] if found else default
execs = last(r"stat::number_of_executed_units:\s*(\d+)")
if execs == "?":
    execs = last(r"^#(\d+)\s")
rss = last(r"stat::peak_rss_mb:\s*(\d+)", last(r"rss: (\d+)Mb"))
slowest = last(r"^#slowest \S+: ([\d.]+ ms)")
count = f"{int(execs):,}" if execs != "?" else "?"
row = (f"| `{target}` | {datetime.date.today().isoformat()} | `{commit}` | {sanitizer} | "
       f"{count} | {crashes} | {slowest} | {rss} MB | {seconds} s |")
print(row)
readme = pathlib.Path("fuzz/README.md")
lines = readme.read_text().splitlines()
start = lines.index("<!-- runs:start -->")
end = lines.index("<!-- runs:end -->")
rows = [l for l in lines[start + 1:end] if l.startswith("| `")]
rows = [r for r in rows if not (r.startswith(f"| `{target}` |") and f"| {sanitizer} |" in r)] + [row]
header = [l for l in lines[start + 1:end] if not l.startswith("| `")]
lines[start + 1:end] = header + sorted(rows)
readme.write_text("\n".join(lines) + "\n")
PY
done
echo "README.md updated: commit it together with nothing else, so the table names the commit it measured."
