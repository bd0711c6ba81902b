#!/usr/bin/env bash
# System calls, context switches and CPU time per admission request, the webhook against the
# parse floor of the admission_load benchmark (`tree`), counted by `perf stat` attached to both
# server processes for one round of the benchmark (1 and 16 connections). This sees what the
# instruction count of scripts/webhook-instructions.sh does not: wake-ups of other threads
# (futex and eventfd writes) and the time they cost.
#
# Per request = the process's count over its whole life / the requests it answered in the
# measured phases, so the warm-up requests make both figures slightly high.
#
# Needs perf (with access to tracepoints: root, or kernel.perf_event_paranoid <= -1).
# Usage: scripts/webhook-syscalls.sh [SECONDS per phase, default 6]
set -euo pipefail

seconds=${1:-6}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
bench_pid=""
# The benchmark's servers too: killed before it, so that none is left running.
trap '[ -n "$bench_pid" ] && pkill -P "$bench_pid"; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

command -v perf >/dev/null || { echo "error: perf is not installed" >&2; exit 2; }

cd "$root"
bench=$(cargo bench -q -p promotion-webhook --bench admission_load --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*admission_load[^"]*\)".*/\1/p' | tail -1)
[ -n "$bench" ] || { echo "error: cannot build the admission_load benchmark" >&2; exit 2; }

ADMISSION_LOAD_SECONDS="$seconds" ADMISSION_LOAD_ROUNDS=1 "$bench" --bench >"$work/bench.out" 2>&1 &
bench_pid=$!

# The two servers are the benchmark's children: the webhook binary, and the benchmark itself
# run again as the `tree` floor.
find_child() {
  local want=$1 pid
  for pid in $(pgrep -P "$bench_pid" || true); do
    case "$want" in
      webhook) tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'promotion-webhook serve' && echo "$pid" ;;
      tree) tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'ADMISSION_LOAD_FLOOR_PARSES=tree' && echo "$pid" ;;
    esac
  done | head -1
  return 0
}
webhook="" tree=""
for _ in $(seq 1 600); do
  if [ -z "$webhook" ]; then webhook=$(find_child webhook || true); fi
  if [ -z "$tree" ]; then tree=$(find_child tree || true); fi
  if [ -n "$webhook" ] && [ -n "$tree" ]; then break; fi
  kill -0 "$bench_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$webhook" ] && [ -n "$tree" ] || { cat "$work/bench.out" >&2; echo "error: servers not found" >&2; exit 1; }

events=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_futex,syscalls:sys_enter_write,syscalls:sys_enter_epoll_wait
perf stat -x, -e "$events" -p "$webhook" -o "$work/webhook.stat" &
perf stat -x, -e "$events" -p "$tree" -o "$work/tree.stat" &
wait "$bench_pid"
wait

# Requests answered: throughput (column 4 of the result lines) times the phase's length.
for server in tree webhook; do
  requests=$(awk -v s="$server" -v secs="$seconds" '$1 == s && ($2 == 1 || $2 == 16) && $4 ~ /^[0-9]+$/ { n += $4 * secs } END { print n + 0 }' "$work/bench.out")
  [ "$requests" -gt 0 ] || { cat "$work/bench.out" >&2; echo "error: no result lines for $server" >&2; exit 1; }
  awk -F, -v s="$server" -v n="$requests" '
    /^#/ || NF < 3 { next }
    { name = $3; sub(/^(raw_)?syscalls:sys_enter_?/, "", name); if (name == "") name = "syscalls"
      if ($3 == "task-clock") { line = line sprintf(" cpu_us=%.2f", $1 * 1000 / n) }
      else { line = line sprintf(" %s=%.3f", name, $1 / n) } }
    END { printf "%-8s requests=%d%s\n", s, n, line }' "$work/$server.stat"
done
