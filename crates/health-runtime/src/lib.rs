//! Run a ClusterPromotion's health checks (`ValidateHealth`) locally and reach the verdict
//! Sveltos would: the same object selection ([`select`]), the same Lua sequence in a sandboxed
//! LuaJIT with libsveltos' preloads ([`lua_runtime`], [`preload`]), the same CEL evaluation
//! ([`cel_eval`]), AND'ed as addon-controller's `validateHealthPolicy` does, with the error text
//! Sveltos would record ([`result`]).
//!
//! Behind the `health-runtime` feature so that the webhook never links a Lua VM.

pub mod cel_eval;
pub mod lua_runtime;
pub mod metrics;
pub mod preload;
pub mod result;
pub mod select;
pub mod spec;

#[cfg(test)]
mod lua_tests;

use std::collections::BTreeMap;

use serde_json::Value;

pub use lua_runtime::{Budget, Limit, LuaOutcome};
pub use result::{CheckReport, Evaluation, ObjectRef, Status};
pub use spec::{checks, Check, SpecError};

/// Whether the cluster serves the check's kind: a live run knows, an offline run does not.
#[derive(Clone, Debug, PartialEq)]
pub enum KindServed {
    /// Served; the candidates are the cluster's answer to the LIST Sveltos sends.
    Yes(Listing),
    /// No such group/version/kind: Sveltos skips the check and it passes.
    No,
    /// Offline: the candidates are all the objects given, selected here.
    Unknown,
}

/// What a live run read about a served kind besides Sveltos' LIST, to explain an empty answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listing {
    /// From discovery: whether the kind is namespaced (`None`: not known).
    pub namespaced: Option<bool>,
    /// Every object of the kind, listed without Sveltos' selectors (`None`: not read).
    pub unselected: Option<Vec<Value>>,
}

/// What a check is evaluated with.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Metric query results by query name (`--metrics NAME=FILE`).
    pub metrics: BTreeMap<String, f64>,
    pub budget: Budget,
}

/// Evaluate one check against candidate objects (those of other kinds, namespaces or labels are
/// left out exactly as Sveltos' LIST would leave them out).
pub fn run_check(
    check: &Check,
    candidates: &[Value],
    served: KindServed,
    inputs: &Inputs,
) -> CheckReport {
    let evaluations = evaluate_check(check, candidates, served, inputs);
    CheckReport {
        check: check.clone(),
        evaluations,
    }
}

fn evaluate_check(
    check: &Check,
    candidates: &[Value],
    served: KindServed,
    inputs: &Inputs,
) -> Vec<Evaluation> {
    let not_evaluated = |why: String| vec![Evaluation::new(check, None, Status::NotEvaluated, why)];
    if !check.feature_deployed {
        return not_evaluated(match spec::feature_list(&check.feature) {
            Some(list) => format!(
                "Sveltos never runs this check: featureID {} but spec.profileSpec.{list} is empty, \
                 and Sveltos only checks a feature it deploys",
                check.feature
            ),
            None => format!(
                "Sveltos never runs this check: featureID {:?} is not Resources, Helm or Kustomize",
                check.feature
            ),
        });
    }
    if check.job_check {
        return not_evaluated(
            "jobCheck runs a Job in the managed cluster and waits for it (a Sveltos Enterprise \
             feature); the local runner does not run Jobs"
                .into(),
        );
    }
    let mut metrics = BTreeMap::new();
    if check.uses_metrics() {
        let missing: Vec<&str> = check
            .metric_queries
            .iter()
            .filter(|q| !inputs.metrics.contains_key(q.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return not_evaluated(format!(
                "metric {} {} no value: Sveltos queries metricSource for it; pass {} with a \
                 Prometheus instant-query response",
                if missing.len() == 1 {
                    "query"
                } else {
                    "queries"
                },
                missing
                    .iter()
                    .map(|m| format!("'{m}'"))
                    .collect::<Vec<_>>()
                    .join(", "),
                missing
                    .iter()
                    .map(|m| format!("--metrics {m}=FILE"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        for q in &check.metric_queries {
            if let Some(v) = inputs.metrics.get(q) {
                metrics.insert(q.clone(), *v);
            }
        }
    }
    if check.kind.is_empty() {
        return vec![metrics_only(check, &metrics, inputs)];
    }
    if served == KindServed::No {
        let mut e = Evaluation::new(
            check,
            None,
            Status::Healthy,
            format!(
                "the cluster does not serve {} {}: Sveltos skips the check, so it passes",
                check.api_version(),
                check.kind
            ),
        );
        e.sveltos_error = None;
        return vec![e];
    }
    let mut selected: Vec<&Value> = candidates
        .iter()
        .filter(|o| select::selects(check, o))
        .collect();
    selected.sort_by(|a, b| {
        (select::namespace_of(a), select::name_of(a))
            .cmp(&(select::namespace_of(b), select::name_of(b)))
    });
    if selected.is_empty() {
        let text = format!("validateHealth: {} did not fetch any resource", check.name);
        let hint = explain_miss(check, candidates, &served);
        let mut e = Evaluation::new(check, None, Status::Unhealthy, format!("{text}{hint}"));
        e.sveltos_error = Some(text);
        return vec![e];
    }
    selected
        .into_iter()
        .map(|o| evaluate_object(check, o, &metrics, inputs))
        .collect()
}

/// Why a check selected nothing, computed only from what was read: offline, the objects given;
/// live, the objects of the kind listed without Sveltos' selectors and the kind's scope from
/// discovery. Empty when nothing was read that could tell.
pub fn explain_miss(check: &Check, candidates: &[Value], served: &KindServed) -> String {
    let (pool, namespaced, verb): (Vec<&Value>, Option<bool>, (&str, &str)) = match served {
        KindServed::No => return String::new(),
        KindServed::Unknown => (
            candidates
                .iter()
                .filter(|o| select::same_kind(check, o))
                .collect(),
            None,
            ("is given", "are given"),
        ),
        KindServed::Yes(listing) => match &listing.unselected {
            Some(all) => (
                all.iter().filter(|o| select::same_kind(check, o)).collect(),
                listing.namespaced,
                ("exists in the cluster", "exist in the cluster"),
            ),
            None => return String::new(),
        },
    };
    let kind = format!("{} {}", check.api_version(), check.kind);
    let count = |n: usize| match n {
        1 => format!("1 {} {}", check.kind, verb.0),
        n => format!("{n} {} objects {}", check.kind, verb.1),
    };
    if pool.is_empty() {
        return match served {
            KindServed::Unknown => format!(
                " (no {kind} among the objects given; if the cluster has no such kind at all, \
                 Sveltos skips the check instead and it passes)"
            ),
            _ => format!(" (the cluster serves {kind} but has no object of it)"),
        };
    }
    let in_scope: Vec<&&Value> = pool
        .iter()
        .filter(|o| check.namespace.is_empty() || select::namespace_of(o) == check.namespace)
        .collect();
    if in_scope.is_empty() {
        // Only reached with a namespace set. The kind's scope: discovery's word, or offline,
        // objects that all lack a namespace.
        let cluster_scoped = match namespaced {
            Some(n) => !n,
            None => pool.iter().all(|o| select::namespace_of(o).is_empty()),
        };
        if cluster_scoped {
            return format!(
                " ({}, but {} is cluster-scoped: Sveltos lists with the field selector \
                 metadata.namespace={}, which no cluster-scoped object matches)",
                count(pool.len()),
                check.kind,
                check.namespace
            );
        }
        let mut namespaces: Vec<&str> = pool.iter().map(|o| select::namespace_of(o)).collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        return format!(
            " ({}, in namespace{} {}, none in namespace {})",
            count(pool.len()),
            if namespaces.len() == 1 { "" } else { "s" },
            namespaces.join(", "),
            check.namespace
        );
    }
    let selector = select::label_selector(&check.label_filters);
    if selector.is_empty() {
        return String::new();
    }
    format!(
        " ({}{}, none matches the label selector {selector})",
        count(in_scope.len()),
        if check.namespace.is_empty() {
            String::new()
        } else {
            format!(" in namespace {}", check.namespace)
        }
    )
}

fn metrics_only(check: &Check, metrics: &BTreeMap<String, f64>, inputs: &Inputs) -> Evaluation {
    let Some(script) = &check.script else {
        let text = format!(
            "validateHealth {}: metric-only check (no kind set) requires a Lua script",
            check.name
        );
        let mut e = Evaluation::new(check, None, Status::Error, text.clone());
        e.sveltos_error = Some(text);
        return e;
    };
    match lua_runtime::evaluate(script, None, metrics, &inputs.budget) {
        LuaOutcome::Healthy => Evaluation::new(check, None, Status::Healthy, "Lua: healthy".into()),
        LuaOutcome::Unhealthy { message } => {
            let mut e = Evaluation::new(check, None, Status::Unhealthy, message.clone());
            e.sveltos_error = Some(format!("metric health check failed: {message}"));
            e
        }
        LuaOutcome::Error { message } => {
            let mut e = Evaluation::new(check, None, Status::Error, message.clone());
            e.sveltos_error = Some(message);
            e
        }
        LuaOutcome::Refused { reason } => {
            let mut e = Evaluation::new(check, None, Status::Error, refused(&reason));
            e.sveltos_error = Some(reason);
            e
        }
        LuaOutcome::Stopped { message, .. } => {
            Evaluation::new(check, None, Status::Stopped, message)
        }
    }
}

/// A script gopher-lua refuses, said as such: it fails in Sveltos before `evaluate` runs, and
/// LuaJIT's verdict on it (which may be to run it) is not Sveltos'.
fn refused(reason: &str) -> String {
    format!("Sveltos' Lua (gopher-lua) refuses the script, so it never runs: {reason}")
}

/// Lua, then CEL; both must pass. Sveltos stops at the first failure; every rule is still shown
/// here, because knowing which rule would have passed is the point of running locally.
fn evaluate_object(
    check: &Check,
    object: &Value,
    metrics: &BTreeMap<String, f64>,
    inputs: &Inputs,
) -> Evaluation {
    let obj = ObjectRef::of(object);
    let lua = check
        .script
        .as_deref()
        .map(|s| lua_runtime::evaluate(s, Some(object), metrics, &inputs.budget));
    let (cel_ok, rules) = cel_eval::evaluate(&check.rules, object);
    let not_healthy = format!("resource {} is not healthy", obj.display());
    let mut e = match &lua {
        Some(LuaOutcome::Error { message }) => {
            let mut e = Evaluation::new(
                check,
                Some(obj.clone()),
                Status::Error,
                format!("Lua: {message}"),
            );
            e.sveltos_error = Some(message.clone());
            e
        }
        Some(LuaOutcome::Refused { reason }) => {
            let mut e = Evaluation::new(
                check,
                Some(obj.clone()),
                Status::Error,
                format!("Lua: {}", refused(reason)),
            );
            e.sveltos_error = Some(reason.clone());
            e
        }
        Some(LuaOutcome::Stopped { message, .. }) => Evaluation::new(
            check,
            Some(obj.clone()),
            Status::Stopped,
            format!("Lua: {message}"),
        ),
        Some(LuaOutcome::Unhealthy { message }) => {
            let mut e = Evaluation::new(
                check,
                Some(obj.clone()),
                Status::Unhealthy,
                format!("Lua: {message}"),
            );
            e.sveltos_error = Some(format!(
                "{not_healthy} {}",
                go_text::strconv::quote(message)
            ));
            e
        }
        Some(LuaOutcome::Healthy) | None if !cel_ok => {
            let skipped = rules.iter().filter(|r| r.result.is_none()).count();
            let why = if skipped == 0 {
                "no CEL rule returned true".to_string()
            } else {
                format!(
                    "no CEL rule returned true ({skipped} of {} failed and Sveltos skips them)",
                    rules.len()
                )
            };
            let lua_part = if lua.is_some() { "Lua: healthy; " } else { "" };
            let mut e = Evaluation::new(
                check,
                Some(obj.clone()),
                Status::Unhealthy,
                format!("{lua_part}CEL: {why}"),
            );
            e.sveltos_error = Some(not_healthy.clone());
            e
        }
        _ => {
            let mut parts = Vec::new();
            if lua.is_some() {
                parts.push("Lua: healthy".to_string());
            }
            if let Some(r) = rules.iter().find(|r| r.result == Some(true)) {
                parts.push(format!("CEL: rule {:?} returned true", r.name));
            }
            if parts.is_empty() {
                parts.push(
                    "no script and no CEL rules: Sveltos treats the object as healthy".into(),
                );
            }
            Evaluation::new(check, Some(obj.clone()), Status::Healthy, parts.join("; "))
        }
    };
    e.rules = rules;
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn promotion(check: Value) -> Value {
        json!({"spec": {
            "profileSpec": {"policyRefs": [{"kind": "ConfigMap", "name": "x"}], "validateHealths": [check]},
            "stages": [{"name": "dev"}]
        }})
    }

    fn run(check: Value, objects: &[Value]) -> CheckReport {
        let c = checks(&promotion(check), None).unwrap().remove(0);
        run_check(&c, objects, KindServed::Unknown, &Inputs::default())
    }

    fn cm(name: &str, ready: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "apps"}, "data": {"ready": ready}})
    }

    const LUA_READY: &str =
        "function evaluate() return {healthy = obj.data.ready == 'yes', message = 'not ready'} end";

    #[test]
    fn lua_and_cel_are_anded() {
        let both = |rule: &str| {
            json!({"name": "c", "featureID": "Resources", "version": "v1", "kind": "ConfigMap",
                   "script": LUA_READY, "evaluateCEL": [{"name": "r", "rule": rule}]})
        };
        // Lua healthy, CEL false: unhealthy, and Sveltos' text has no quoted message.
        let r = run(both("resource.data.ready == 'no'"), &[cm("a", "yes")]);
        assert_eq!(r.status(), Status::Unhealthy);
        assert_eq!(
            r.sveltos_error().unwrap(),
            "health check 'c' for feature Resources failed: resource ConfigMap apps/a is not healthy"
        );
        // Lua unhealthy, CEL true: unhealthy with the Lua message.
        let r = run(both("resource.data.ready == 'no'"), &[cm("a", "no")]);
        assert_eq!(r.status(), Status::Unhealthy);
        assert!(r.sveltos_error().unwrap().ends_with(
            "resource ConfigMap apps/a is not healthy \"resource apps/a is not healthy: not ready\""
        ));
        // Both healthy.
        let r = run(both("resource.data.ready == 'yes'"), &[cm("a", "yes")]);
        assert_eq!(r.status(), Status::Healthy);
        assert_eq!(r.sveltos_error(), None);
    }

    #[test]
    fn the_first_failing_object_in_list_order_is_what_sveltos_records() {
        let check = json!({"name": "c", "featureID": "Resources", "version": "v1",
                           "kind": "ConfigMap", "script": LUA_READY});
        let r = run(check, &[cm("b", "no"), cm("a", "yes"), cm("c", "no")]);
        let names: Vec<&str> = r
            .evaluations
            .iter()
            .map(|e| e.object.as_ref().unwrap().name.as_str())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(r.sveltos_error().unwrap().contains("ConfigMap apps/b"));
    }

    #[test]
    fn selection_empty_unserved_and_not_evaluated() {
        let check = json!({"name": "c", "featureID": "Resources", "version": "v1",
                           "kind": "ConfigMap", "namespace": "other"});
        let r = run(check.clone(), &[cm("a", "yes")]);
        assert_eq!(r.status(), Status::Unhealthy);
        assert_eq!(
            r.evaluations[0].sveltos_error.as_deref(),
            Some("validateHealth: c did not fetch any resource")
        );
        let c = checks(&promotion(check), None).unwrap().remove(0);
        let r = run_check(&c, &[], KindServed::No, &Inputs::default());
        assert_eq!(
            r.status(),
            Status::Healthy,
            "an unknown kind is skipped by Sveltos"
        );
        let helm = json!({"name": "h", "featureID": "Helm", "version": "v1", "kind": "ConfigMap"});
        let r = run(helm, &[cm("a", "yes")]);
        assert_eq!(r.status(), Status::NotEvaluated);
        assert!(r.evaluations[0].message.contains("helmCharts is empty"));
        assert_eq!(r.evaluations[0].healthy, None);
    }

    fn check_of(kind: &str, namespace: &str, labels: Value) -> Check {
        let mut c = json!({"name": "c", "featureID": "Resources", "version": "v1", "kind": kind,
                           "labelFilters": labels});
        if !namespace.is_empty() {
            c["namespace"] = json!(namespace);
        }
        checks(&promotion(c), None).unwrap().remove(0)
    }

    fn obj(kind: &str, namespace: &str, name: &str, app: &str) -> Value {
        let mut o = json!({"apiVersion": "v1", "kind": kind,
                           "metadata": {"name": name, "labels": {"app": app}}});
        if !namespace.is_empty() {
            o["metadata"]["namespace"] = json!(namespace);
        }
        o
    }

    fn live(namespaced: Option<bool>, unselected: Option<Vec<Value>>) -> KindServed {
        KindServed::Yes(Listing {
            namespaced,
            unselected,
        })
    }

    /// Issue 25, item 2: a live miss of a namespaced kind was explained as "0 Pod exist … which
    /// a cluster-scoped kind never matches" while a Pod existed in another namespace.
    #[test]
    fn miss_explanations_state_what_was_read() {
        let pod_default = obj("Pod", "default", "p", "web");
        let cases: Vec<(Check, Vec<Value>, KindServed, &str)> = vec![
            (
                check_of("Pod", "apps", json!([])),
                vec![],
                live(Some(true), Some(vec![pod_default.clone()])),
                " (1 Pod exists in the cluster, in namespace default, none in namespace apps)",
            ),
            (
                check_of("Pod", "apps", json!([])),
                vec![pod_default.clone(), obj("Pod", "kube-system", "q", "x")],
                KindServed::Unknown,
                " (2 Pod objects are given, in namespaces default, kube-system, none in namespace apps)",
            ),
            (
                check_of("Namespace", "apps", json!([])),
                vec![],
                live(Some(false), Some(vec![obj("Namespace", "", "apps", "")])),
                " (1 Namespace exists in the cluster, but Namespace is cluster-scoped: Sveltos \
                 lists with the field selector metadata.namespace=apps, which no cluster-scoped \
                 object matches)",
            ),
            (
                check_of("Pod", "apps", json!([{"key": "app", "operation": "Equal", "value": "api"}])),
                vec![],
                live(Some(true), Some(vec![obj("Pod", "apps", "a", "web"), obj("Pod", "apps", "b", "db"), pod_default.clone()])),
                " (2 Pod objects exist in the cluster in namespace apps, none matches the label selector app=api)",
            ),
            (
                check_of("Pod", "apps", json!([])),
                vec![],
                live(Some(true), Some(vec![])),
                " (the cluster serves v1 Pod but has no object of it)",
            ),
            // Nothing else was read: nothing is claimed.
            (check_of("Pod", "apps", json!([])), vec![], live(Some(true), None), ""),
        ];
        for (check, candidates, served, want) in cases {
            assert_eq!(
                explain_miss(&check, &candidates, &served),
                want,
                "{served:?}"
            );
            let r = run_check(&check, &candidates, served, &Inputs::default());
            assert_eq!(
                r.evaluations[0].message,
                format!("validateHealth: c did not fetch any resource{want}")
            );
        }
    }

    /// Every combination of a small world: the numbers, namespaces and scope an explanation
    /// states are the ones of the objects read.
    #[test]
    fn every_explanation_agrees_with_its_inputs() {
        let spots = [
            ("", "a"),
            ("default", "a"),
            ("default", "b"),
            ("kube-system", "a"),
        ];
        for mask in 0u32..(1 << spots.len()) {
            let pool: Vec<Value> = spots
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(i, (ns, app))| obj("Thing", ns, &format!("o{i}"), app))
                .collect();
            for namespace in ["", "default", "apps"] {
                for labels in [
                    json!([]),
                    json!([{"key": "app", "operation": "Equal", "value": "z"}]),
                ] {
                    let check = check_of("Thing", namespace, labels.clone());
                    for namespaced in [None, Some(true), Some(false)] {
                        let served = live(namespaced, Some(pool.clone()));
                        let text = explain_miss(&check, &[], &served);
                        let in_ns: Vec<&Value> = pool
                            .iter()
                            .filter(|o| {
                                namespace.is_empty() || select::namespace_of(o) == namespace
                            })
                            .collect();
                        let scoped_clause = text.contains("cluster-scoped");
                        let said_scoped = namespaced == Some(false)
                            || (namespaced.is_none()
                                && pool.iter().all(|o| select::namespace_of(o).is_empty()));
                        if scoped_clause {
                            assert!(
                                said_scoped && !pool.is_empty() && in_ns.is_empty(),
                                "{text}"
                            );
                        }
                        if pool.is_empty() {
                            assert!(text.contains("has no object"), "{text}");
                            continue;
                        }
                        if !namespace.is_empty() && in_ns.is_empty() {
                            let n = pool.len();
                            assert!(text.starts_with(&format!(" ({n} Thing")), "{text}");
                            if !said_scoped {
                                let mut nss: Vec<&str> =
                                    pool.iter().map(select::namespace_of).collect();
                                nss.sort_unstable();
                                nss.dedup();
                                assert!(text.contains(&nss.join(", ")), "{text}");
                                assert!(!scoped_clause, "{text}");
                            }
                        } else if labels != json!([]) {
                            let n = in_ns.len();
                            assert!(text.starts_with(&format!(" ({n} Thing")), "{text}");
                            assert!(text.ends_with("label selector app=z)"), "{text}");
                        } else {
                            assert_eq!(text, "");
                        }
                    }
                }
            }
        }
    }
}
