#!/usr/bin/env bash
# Replays the README tour: starts the stand-in API server (loaded with examples/) and the real
# webhook, then runs the plugin commands the README shows. Everything printed is real output.
#   scripts/tour.sh            # debug builds
#   PROFILE=release scripts/tour.sh
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-debug}
flag=""; [ "$profile" = release ] && flag="--release"
cargo build -q $flag -p kubectl-promotion -p promotion-webhook -p promotion-e2e --bins

bin=target/$profile
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin/promotion-webhook" certs --dns localhost --ip 127.0.0.1 --out "$work/certs" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
POD_NAMESPACE=kubectl-promotion-system "$bin/promotion-webhook" serve --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$mport" \
  --tls-cert-file "$work/certs/tls.crt" --tls-key-file "$work/certs/tls.key" >"$work/webhook.log" 2>&1 &
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$mport/readyz" >/dev/null && break; sleep 0.1; done
"$bin/standin-apiserver" --kubeconfig "$work/kubeconfig" \
  --mutate-url "https://127.0.0.1:$port/mutate" --validate-url "https://127.0.0.1:$port/validate" \
  --webhook-ca "$work/certs/ca.crt" >"$work/apiserver.log" 2>&1 &
for _ in $(seq 50); do [ -s "$work/kubeconfig" ] && break; sleep 0.1; done
export KUBECONFIG="$work/kubeconfig" NO_COLOR=1 PATH="$PWD/$bin:$PATH"

run() { printf '\n$ %s\n' "$*"; "$@" || printf '(exit %s)\n' "$?"; }
run kubectl promotion lint examples/
run kubectl promotion list
run kubectl promotion describe kyverno-rollout-man
run kubectl promotion plan core-payment-processor-ci
run kubectl promotion approve kyverno-rollout-man --reason "staging soaked 24h, dashboards green"
run kubectl promotion describe kyverno-rollout-man
run kubectl promotion diff kyverno-rollout-man --stage staging
sed 's/3\.6\.2/3.7.0/' examples/kyverno-manual-gate.yaml >"$work/bump.yaml"
run kubectl promotion diff -f "$work/bump.yaml"
run kubectl promotion wait kyverno-rollout-auto --for=complete --timeout=2s
