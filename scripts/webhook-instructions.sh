#!/usr/bin/env bash
# Instructions per admission request, the webhook against the parse floor of the admission_load
# benchmark (`tree`: reads the body into a serde_json tree and echoes the uid), counted by
# callgrind over one TLS keep-alive connection driven by curl. Deterministic, unlike the
# benchmark's timings on a shared machine, but blind to what costs time without instructions
# (cache lines moving between cores, wake-ups), which the benchmark sees.
#
# Each server is run twice, for SHORT and LONG requests; per request = (LONG - SHORT) / (LONG -
# SHORT requests), so start-up and the TLS handshake cancel out.
#
# Needs valgrind and curl. Usage: scripts/webhook-instructions.sh [SHORT LONG]
set -euo pipefail

short=${1:-200}
long=${2:-1200}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

for tool in valgrind callgrind_control curl; do
  command -v "$tool" >/dev/null || { echo "error: $tool is not installed" >&2; exit 2; }
done

cd "$root"
cargo build --release -q -p promotion-webhook
bench=$(cargo bench -q -p promotion-webhook --bench admission_load --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*admission_load[^"]*\)".*/\1/p' | tail -1)
webhook="$root/target/release/promotion-webhook"
"$webhook" certs --dns localhost --ip 127.0.0.1 --out "$work/certs" >/dev/null
ADMISSION_LOAD_WRITE_BODY="$work/body.json" "$bench"

# Serve under callgrind, send `n` requests on one connection, dump the counts; prints the total.
count() {
  local server=$1 n=$2 out="$work/$1.$2.out" port=""
  if [ "$server" = webhook ]; then
    port=$((20000 + RANDOM % 20000))
    POD_NAMESPACE=kubectl-promotion-system valgrind --tool=callgrind --callgrind-out-file="$out" \
      "$webhook" serve --listen "127.0.0.1:$port" --metrics-listen 127.0.0.1:0 --log-format json \
      --shutdown-delay 0ms --tls-cert-file "$work/certs/tls.crt" \
      --tls-key-file "$work/certs/tls.key" >/dev/null 2>&1 &
  else
    ADMISSION_LOAD_FLOOR_SERVER="$work/certs/tls.crt"$'\n'"$work/certs/tls.key" \
      ADMISSION_LOAD_FLOOR_PARSES=tree \
      valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" >"$work/floor.out" 2>/dev/null &
  fi
  local pid=$!
  for _ in $(seq 1 600); do
    if [ "$server" != webhook ]; then
      port=$(sed -n 's/^listening 127.0.0.1://p' "$work/floor.out" 2>/dev/null || true)
    fi
    if [ -n "$port" ] && curl -sf -o /dev/null --cacert "$work/certs/ca.crt" \
      "https://localhost:$port/validate" --data-binary @"$work/body.json"; then
      break
    fi
    sleep 0.1
  done
  # One curl, `n` transfers: they reuse the connection.
  local config="$work/$server.$n.curl"
  : >"$config"
  for i in $(seq 1 "$n"); do
    [ "$i" -gt 1 ] && echo next >>"$config"
    printf 'cacert = "%s"\nsilent\nfail\nurl = "https://localhost:%s/validate"\ndata-binary = "@%s"\nheader = "Content-Type: application/json"\noutput = "/dev/null"\n' \
      "$work/certs/ca.crt" "$port" "$work/body.json" >>"$config"
  done
  curl -K "$config"
  callgrind_control -d "$pid" >/dev/null 2>&1
  for _ in $(seq 1 100); do [ -s "$out.1" ] && break; sleep 0.1; done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  sed -n 's/^summary: //p' "$out.1"
}

for server in tree webhook; do
  a=$(count "$server" "$short")
  b=$(count "$server" "$long")
  echo "$server: $(( (b - a) / (long - short) )) instructions per request"
done
