#!/usr/bin/env python3
"""Raw seed inputs for the fuzz targets, from the example manifests and the parity corpora.

Writes one file per input under corpus/<target>-raw/ (ignored by git). `cargo fuzz cmin` then
keeps the inputs that add coverage, and those are what seeds/<target>/ holds (README.md, "Seeds").
`view`'s seeds are few and each names the state it holds, so they are written to seeds/view/
directly.

  python3 fuzz/make-seeds.py            # from the repository root
"""
import copy
import hashlib
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LUA_FIXTURES = ROOT / "crates/lua-check/tests/fixtures"
CEL_FIXTURES = ROOT / "crates/cel-check/tests/fixtures"
OUT = ROOT / "fuzz/corpus"


def strings_under(value, key, out):
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key and isinstance(v, str):
                out.append(v)
            else:
                strings_under(v, key, out)
    elif isinstance(value, list):
        for v in value:
            strings_under(v, key, out)


def example_values(key):
    """Strings under `key` in the admission seeds (the examples as JSON objects)."""
    out = []
    for f in sorted((ROOT / "fuzz/seeds/admission").glob("*-create.json")):
        strings_under(json.loads(f.read_text())["request"]["object"], key, out)
    return out


def write(target, inputs):
    d = OUT / f"{target}-raw"
    d.mkdir(parents=True, exist_ok=True)
    for data in inputs:
        data = data if isinstance(data, bytes) else data.encode()
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"{target}: {len(set(inputs))} raw seeds in {d.relative_to(ROOT)}")


def lint_seeds():
    inputs = [f.read_bytes() for f in sorted((ROOT / "examples").glob("*.yaml"))]
    objects = [json.loads(f.read_text())["request"]["object"]
               for f in sorted((ROOT / "fuzz/seeds/admission").glob("*-create.json"))]
    inputs += [json.dumps(o, indent=2).encode() for o in objects]
    inputs.append(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects[:2]}).encode())
    return inputs


def scripts_seeds():
    lua, cel = example_values("script"), example_values("rule")
    for line in (LUA_FIXTURES / "lua/gopher-lua-verdicts.jsonl").read_text().splitlines():
        case = json.loads(line)
        if "script" in case:
            lua.append(case["script"])
    for name in ["lint-parity", "cel-go-parser", "cel-go-checker", "cel-spec-conformance"]:
        cel += [c["rule"] for c in json.loads((CEL_FIXTURES / f"cel/{name}.json").read_text())]
    obj = json.dumps({"status": {"phase": "Running", "readyReplicas": 2}, "spec": {"replicas": 2}})
    # Some with an object after a NUL byte: what the runner evaluates them against.
    return lua + cel + [s + "\0" + obj for s in lua[:20] + cel[:20]]


def schedules_seeds():
    values = []
    for key in ["delay", "timeout", "interval", "from", "to"]:
        values += example_values(key)
    parity = ROOT / "docs/reference/lint-parity.md"
    if parity.exists():
        text = parity.read_text()
        section = text[text.find("## `duration-invalid`"):text.find("## `lua-syntax`")]
        values += re.findall(r"^\| `([^`]*)`", section, re.M)
    return values + ["0", "1h30m", "@daily", "@every 5m", "*/15 9-17 * * mon-fri", "0 0 1 jan,jul *"]


# --- view: the examples with a status, in every state of examples/STATES.md, with the cluster
# objects describe reads (an envelope: README.md of the harness, plugin/src/fuzzing/view/input.rs).

PROMOTION_LABEL = "config.projectsveltos.io/promotionname"
STAGE_ANNOTATION = "config.projectsveltos.io/stagename"
PROFILE_LABEL = "projectsveltos.io/cluster-profile-name"


def example(name):
    path = ROOT / f"fuzz/seeds/admission/{name}-create.json"
    return json.loads(path.read_text())["request"]["object"]


def profile(obj, stage, clusters, chart_version=None):
    """The ClusterProfile Sveltos generates for `stage`, matching `clusters` (namespace, name)."""
    promotion = obj["metadata"]["name"]
    spec = copy.deepcopy(obj["spec"].get("profileSpec", {}))
    if chart_version:
        for chart in spec.get("helmCharts", []):
            chart["chartVersion"] = chart_version
    spec["clusterSelector"] = next(s for s in obj["spec"]["stages"] if s["name"] == stage).get(
        "clusterSelector")
    return {
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
        "metadata": {
            "name": f"{promotion}-{stage}",
            "labels": {PROMOTION_LABEL: promotion},
            "annotations": {STAGE_ANNOTATION: stage},
            "ownerReferences": [{"apiVersion": "config.projectsveltos.io/v1beta1",
                                 "kind": "ClusterPromotion", "name": promotion}],
        },
        "spec": spec,
        "status": {"matchingClusters": [
            {"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
             "namespace": ns, "name": name} for ns, name in clusters]},
    }


def summary(obj, stage, cluster, status, message=None):
    promotion = obj["metadata"]["name"]
    ns, name = cluster
    feature = {"featureID": "Helm", "status": status}
    if message:
        feature["failureMessage"] = message
    return {
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
        "metadata": {"name": f"{promotion}-{stage}-sveltos-{name}", "namespace": ns,
                     "labels": {PROFILE_LABEL: f"{promotion}-{stage}", PROMOTION_LABEL: promotion}},
        "spec": {"clusterNamespace": ns, "clusterName": name, "clusterType": "Sveltos"},
        "status": {"featureSummaries": [feature]},
    }


def event(obj, text):
    return {"type": "Normal", "reason": "Sveltos", "note": text,
            "eventTime": "2026-02-16T07:29:41Z", "reportingController": "addon-controller",
            "regarding": {"kind": "ClusterPromotion", "name": obj["metadata"]["name"]}}


DEV, STAGING, PROD = ("dev", "dev01"), ("staging", "stg01"), ("prod", "prod33")


def envelope(obj, stages=(), summaries=(), events=(), profiles=None):
    """describe's input: the profiles of `stages` (all provisioned), unless `profiles` is given."""
    clusters = {"dev": [DEV], "staging": [STAGING], "production": [PROD]}
    if profiles is None:
        profiles = [profile(obj, s, clusters.get(s, [])) for s in stages]
    return {"object": obj, "profiles": profiles, "summaries": list(summaries),
            "events": list(events)}


def view_seeds():
    """Named seeds: (file name, JSON value)."""
    seeds = []
    auto, gate, failed = example("kyverno-rollout-auto"), example("kyverno-manual-gate"), \
        example("kyverno-failed-dev")
    # These examples' statuses were captured from runs of chart 3.5.2: their profileSpecHash is
    # not their 3.6.2 spec's, which read exactly means "not picked up yet". The seeds about
    # freshness set what they test; the others describe the current rollout.
    for obj in (auto, failed):
        obj["status"].pop("profileSpecHash", None)
    names = sorted(f.name[:-len("-create.json")]
                   for f in (ROOT / "fuzz/seeds/admission").glob("*-create.json"))
    seeds += [(f"example-{n}", example(n)) for n in names]

    provisioned = [summary(auto, s, c, "Provisioned")
                   for s, c in [("dev", DEV), ("staging", STAGING), ("production", PROD)]]
    seeds.append(("soaking", envelope(auto, ["dev", "staging", "production"], provisioned,
                                      [event(auto, "Provisioning stage production")])))
    complete = copy.deepcopy(auto)
    complete["status"]["stages"][2]["currentStatusDescription"] = \
        "Successfully provisioned (2026-02-16T06:38:24Z)"
    seeds.append(("complete", envelope(complete, ["dev", "staging", "production"], provisioned)))
    checks = copy.deepcopy(auto)
    checks["status"]["stages"][2]["currentStatusDescription"] = \
        "Running Post-Promotion Health Checks (2026-02-16T06:37:00Z)"
    seeds.append(("running-health-checks", envelope(checks, ["dev", "staging", "production"])))
    window = copy.deepcopy(auto)
    window["status"]["stages"][2]["currentStatusDescription"] = \
        "Window Closed: Waiting for Next Schedule (2026-02-17T09:00:00Z). (2026-02-16T06:37:00Z)"
    seeds.append(("waiting-for-window", envelope(window, ["dev", "staging", "production"])))
    moved = copy.deepcopy(auto)
    moved["spec"]["stages"][2]["clusterSelector"] = {"matchLabels": {"env": "production"}}
    seeds.append(("stale-stages-hash", envelope(moved, ["dev", "staging", "production"])))

    gate_summaries = [summary(gate, "dev", DEV, "Provisioned"),
                      summary(gate, "staging", STAGING, "Provisioned")]
    seeds.append(("awaiting-approval", envelope(gate, ["dev", "staging"], gate_summaries)))
    approved = copy.deepcopy(gate)
    approved["spec"]["stages"][1]["trigger"]["manual"]["approved"] = True
    approved["metadata"]["annotations"] = {"audit.kubectl-promotion.dev/approvals": json.dumps(
        {"staging": {"user": "alice", "groups": ["ops"], "time": "2026-02-16T07:40:00Z",
                     "reason": "soak looked fine"}})}
    seeds.append(("approved-pending", envelope(approved, ["dev", "staging"], gate_summaries)))
    consumed = copy.deepcopy(approved)
    consumed["status"]["stages"].append(
        {"name": "production", "lastUpdateReconciledTime": "2026-02-16T07:41:00Z",
         "failureMessage": "ClusterSummary kyverno-rollout-man-production-sveltos-prod33 is not "
                           "yet provisioned."})
    consumed["status"]["currentStageName"] = "production"
    seeds.append(("approval-consumed", envelope(
        consumed, ["dev", "staging", "production"],
        gate_summaries + [summary(consumed, "production", PROD, "Provisioning")])))
    seeds.append(("stale-stage-profile", envelope(gate, profiles=[
        profile(gate, "dev", [DEV], chart_version="3.5.0"), profile(gate, "staging", [STAGING])])))
    changed = copy.deepcopy(gate)
    changed["metadata"]["annotations"] = {"audit.kubectl-promotion.dev/spec-change": json.dumps(
        {"user": "carol", "time": "2026-02-16T07:50:00Z"})}
    seeds.append(("stale-spec-change-record", {"object": changed, "profiles":
                  "forbidden (403): you cannot list clusterprofiles", "summaries": [],
                  "events": "forbidden (403): you cannot list events"}))
    repeated = copy.deepcopy(gate)
    repeated["spec"]["stages"][2]["name"] = "dev"
    seeds.append(("repeated-stage-name", envelope(repeated, ["dev", "staging"], gate_summaries)))

    seeds.append(("provisioning", envelope(failed, ["dev"])))
    seeds.append(("failed-retrying", envelope(failed, ["dev"], [
        summary(failed, "dev", DEV, "Failed", "chart not found")])))
    seeds.append(("failed-for-good", envelope(failed, ["dev"], [
        summary(failed, "dev", DEV, "FailedNonRetriable",
                "replicas: Invalid value: \"string\": must be an integer"),
        summary(failed, "dev", ("dev", "dev02"), "Provisioned")])))
    blocked = copy.deepcopy(failed)
    blocked["status"]["stages"][0]["failureMessage"] = \
        "license is required to manage ClusterPromotion"
    seeds.append(("blocked-licence", envelope(blocked, ["dev"])))
    taken = example("kyverno-manual-gate")
    other = profile(taken, "dev", [DEV])
    other["metadata"]["labels"][PROMOTION_LABEL] = "kyverno"
    other["metadata"]["ownerReferences"][0]["name"] = "kyverno"
    seeds.append(("profile-name-taken", envelope(taken, profiles=[other])))
    return seeds


def write_view_seeds():
    d = ROOT / "fuzz/seeds/view"
    d.mkdir(parents=True, exist_ok=True)
    seeds = view_seeds()
    for name, value in seeds:
        (d / f"{name}.json").write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n")
    # Generated inputs are choices, not text: a few fixed ones to start from.
    for i, choices in enumerate([b"", bytes(range(1, 64)), bytes(range(255, 128, -1))]):
        (d / f"choices-{i}").write_bytes(choices)
    print(f"view: {len(seeds) + 3} seeds in {d.relative_to(ROOT)}")


def main():
    write("lint", lint_seeds())
    write("scripts", scripts_seeds())
    write("schedules", schedules_seeds())
    write_view_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
