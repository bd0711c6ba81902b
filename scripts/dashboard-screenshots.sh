#!/usr/bin/env bash
# The screenshots of `kubectl promotion dashboard` in README.md and docs/dashboard.md: the
# browser test's rollout on the real kube-apiserver (promotion-controller and the
# addon-controller double moving it), beside every example's promotion, taken by headless
# Chromium at the gate. Needs Debian's chromium and chromium-driver, and envtest's binaries in
# KUBEBUILDER_ASSETS (as for the real-server tests, see tests/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS to envtest's binaries (kube-apiserver, etcd)}"
export CI=true # a missing browser or API server is a failure here, not a skip
PROMOTION_E2E_SCREENSHOTS="$PWD/docs/images" cargo test -p promotion-e2e --test dashboard_browser -- \
  --exact envtest::the_fleet_page_follows_a_rollout_live_and_an_approval_from_the_page_is_used
ls -l docs/images/dashboard-*.png
