//! Small helpers shared by the scenarios.

use chrono::Timelike;
use promotion_e2e::backend::Cluster;
use promotion_e2e::bins::Output;
use promotion_e2e::envtest::{User, WebhookServer};
use serde_json::Value;

/// `kubectl` as `user`; panics only when it cannot be run at all.
pub fn kubectl(cluster: &Cluster, user: User, args: &[&str]) -> Output {
    cluster
        .kubectl(user, args)
        .unwrap_or_else(|e| panic!("[{}] kubectl {args:?}: {e}", cluster.kind().name()))
}

/// A promotion example from `examples/`, as JSON.
pub fn example(file: &str) -> Value {
    promotion_e2e::fixtures::load_example(file)
        .unwrap_or_else(|e| panic!("{e}"))
        .promotion
}

/// `metadata.name` of an object.
pub fn name_of(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `spec.stages[name=stage].trigger.manual` of a promotion (`Null` when there is none).
pub fn manual_gate<'a>(promotion: &'a Value, stage: &str) -> &'a Value {
    promotion["spec"]["stages"]
        .as_array()
        .and_then(|stages| stages.iter().find(|s| s["name"] == stage))
        .map_or(&Value::Null, |s| &s["trigger"]["manual"])
}

/// Start the real webhook and register it as installed; keep the server alive while it is used.
pub fn register_webhook(cluster: &Cluster) -> WebhookServer {
    let webhook = cluster
        .start_webhook(&[])
        .or_fail(cluster, "starting promotion-webhook");
    let configs = webhook
        .configurations()
        .or_fail(cluster, "rendering manifests/");
    cluster
        .register_webhooks(configs)
        .or_fail(cluster, "registering the webhook");
    webhook
}

#[track_caller]
pub fn assert_contains(haystack: &str, needles: &[&str], context: &str) {
    for needle in needles {
        assert!(
            haystack.contains(needle),
            "{context}: wanted {needle:?} in:\n{haystack}"
        );
    }
}

/// Unwrap a backend result, naming the backend in the panic.
pub trait Expect<T> {
    fn or_fail(self, cluster: &Cluster, what: &str) -> T;
}

impl<T, E: std::fmt::Display> Expect<T> for Result<T, E> {
    #[track_caller]
    fn or_fail(self, cluster: &Cluster, what: &str) -> T {
        self.unwrap_or_else(|e| panic!("[{}] {what}: {e}", cluster.kind().name()))
    }
}

/// How the webhook's warnings name an approval: `given by USER at TIME` (`: "REASON"` when one
/// was given), from the stage's record in `audit.kubectl-promotion.dev/approvals`.
pub fn approval_given(promotion: &Value, stage: &str) -> String {
    let records: Value = promotion["metadata"]["annotations"]
        [promotion_shared::admission::APPROVALS_ANNOTATION]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    let record = &records[stage];
    let mut given = format!(
        "given by {} at {}",
        record["user"].as_str().unwrap_or_default(),
        record["time"].as_str().unwrap_or_default()
    );
    if let Some(reason) = record["reason"].as_str() {
        given.push_str(&format!(": {reason:?}"));
    }
    given
}

/// The stored promotion `name`; panics (naming the backend) when it is gone.
pub fn read_back(cluster: &Cluster, name: &str) -> Value {
    cluster
        .promotion(name)
        .or_fail(cluster, "reading the promotion")
        .unwrap_or_else(|| panic!("[{}] {name} is gone", cluster.kind().name()))
}

/// `status` as Sveltos writes it when it picks up a spec written just now: every timestamp
/// (fields and the times inside descriptions) moved by the same amount, so that the earliest is
/// the next whole second. Otherwise the plugin rightly reads a status older than the webhook's
/// spec-change record as the previous rollout's.
pub fn reconciled_now(status: &Value) -> Value {
    let stamp = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").expect("regex");
    let parse = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .ok()
            .map(|t| t.with_timezone(&chrono::Utc))
    };
    let text = status.to_string();
    let Some(earliest) = stamp
        .find_iter(&text)
        .filter_map(|m| parse(m.as_str()))
        .min()
    else {
        return status.clone();
    };
    let now = chrono::Utc::now() + chrono::Duration::seconds(1);
    let shift = now.with_nanosecond(0).unwrap_or(now) - earliest;
    let shifted = stamp.replace_all(&text, |c: &regex::Captures| match parse(&c[0]) {
        Some(t) => (t + shift).format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => c[0].to_string(),
    });
    serde_json::from_str(&shifted).unwrap_or_else(|_| status.clone())
}
