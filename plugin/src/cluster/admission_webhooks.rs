//! The admission webhooks the API server calls for ClusterPromotion updates, and their
//! `failurePolicy`: what decides whether a write goes through while promotion-webhook does not
//! answer (`Fail`: refused; `Ignore`: stored without its checks and without an approval
//! record). The plugin reads them only when a write tells it the webhook was not there.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use promotion_shared::api_error::{classify, Failure};
use promotion_shared::model::GROUP;
use promotion_shared::selector::Selector;

use crate::cluster::kube_client::Kube;
use crate::error::{Error, Request};

const CONFIGURATIONS: [(&str, &str); 2] = [
    (
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
    ),
    (
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    ),
];

/// One webhook of a configuration that intercepts ClusterPromotion updates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    /// `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`.
    pub kind: &'static str,
    pub configuration: String,
    pub webhook: String,
    /// `Fail` or `Ignore` (`Fail` when unset: the admissionregistration/v1 default).
    pub failure_policy: String,
}

impl Registered {
    fn origin(&self) -> String {
        format!("{} {:?}", self.kind, self.configuration)
    }
}

/// Every webhook whose rules cover UPDATE of clusterpromotions in Sveltos' group and whose
/// `objectSelector` matches a promotion with these labels.
pub async fn for_promotions(
    kube: &Kube,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<Registered>, Error> {
    let mut found = Vec::new();
    for (kind, plural) in CONFIGURATIONS {
        let resource = if kind.starts_with("Mutating") {
            "mutatingwebhookconfigurations.admissionregistration.k8s.io"
        } else {
            "validatingwebhookconfigurations.admissionregistration.k8s.io"
        };
        let what = Request::new("list", resource);
        let req = http::Request::get(format!("/apis/admissionregistration.k8s.io/v1/{plural}"))
            .body(Vec::new())
            .map_err(|e| Error::Api {
                request: what.clone(),
                message: e.to_string(),
            })?;
        let list: Value = kube
            .client()
            .request(req)
            .await
            .map_err(|e| kube.error(e, &what))?;
        found.extend(covering_promotions(kind, &list, labels));
    }
    Ok(found)
}

fn covering_promotions(
    kind: &'static str,
    list: &Value,
    labels: &BTreeMap<String, String>,
) -> Vec<Registered> {
    let items = list["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    items
        .iter()
        .flat_map(|config| {
            let configuration = config["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let webhooks = config["webhooks"].as_array().map(Vec::as_slice);
            webhooks
                .unwrap_or(&[])
                .iter()
                .filter(|w| {
                    let rules = w["rules"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                    rules.iter().any(covers_promotion_updates)
                        && selects(&w["objectSelector"], labels)
                })
                .map(move |w| Registered {
                    kind,
                    configuration: configuration.clone(),
                    webhook: w["name"].as_str().unwrap_or_default().to_string(),
                    failure_policy: w["failurePolicy"].as_str().unwrap_or("Fail").to_string(),
                })
        })
        .collect()
}

fn covers_promotion_updates(rule: &Value) -> bool {
    let has = |field: &str, wanted: &str| {
        rule[field]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x == "*" || x == wanted))
    };
    has("apiGroups", GROUP)
        && has("operations", "UPDATE")
        && (has("resources", "clusterpromotions") || has("resources", "*/*"))
}

/// Kubernetes' semantics: no selector, or an empty one, selects every object.
fn selects(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    if selector.is_null() || selector.as_object().is_some_and(|m| m.is_empty()) {
        return true;
    }
    match serde_json::from_value::<LabelSelector>(selector.clone()) {
        Ok(s) => match Selector::compile(Some(&s)) {
            Ok(compiled) => compiled.matches(labels),
            // matchLabels: {} and no expressions: everything.
            Err(_) => {
                s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
                    && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
            }
        },
        Err(_) => false,
    }
}

/// A failed guarded write of a ClusterPromotion (not a conflict, which the writer retries) as
/// the plugin reports it: a webhook the API server could not call is named, with what its
/// failurePolicy makes of that (the promotion's `labels` select the configurations that apply);
/// a write sent and not answered has an unknown outcome, and `check` (given for a write that is
/// not a dry run) says how to find out; anything else as [`Kube::error`].
pub async fn write_error(
    kube: &Kube,
    err: kube::Error,
    what: &Request,
    labels: &BTreeMap<String, String>,
    check: Option<String>,
) -> Error {
    if let kube::Error::Api(s) = &err {
        let unreachable =
            unreachable_webhook(&s.message).filter(|_| classify(s) == Failure::Unavailable);
        if let Some((webhook, cause)) = unreachable {
            let found = for_promotions(kube, labels).await;
            // The webhook's absence, and what its failurePolicy makes of it.
            let policy = refused_because(&webhook, &found);
            return Error::Api {
                request: what.clone(),
                message: format!(
                    "admission webhook {webhook:?} did not answer ({cause}); {policy}"
                ),
            };
        }
    }
    match check {
        Some(check) => kube.write_error(err, what, check),
        None => kube.error(err, what),
    }
}

/// The part of a failed write's message that says the API server could not call a webhook:
/// `failed calling webhook "NAME": CAUSE`.
pub fn unreachable_webhook(message: &str) -> Option<(String, String)> {
    let rest = message.split_once("failed calling webhook \"")?.1;
    let (name, cause) = rest.split_once('"')?;
    let cause = cause.trim_start_matches(':').trim();
    Some((name.to_string(), cause.to_string()))
}

/// What the refused write means, given the webhook's configuration as read (or why it could not
/// be read).
pub fn refused_because(webhook: &str, found: &Result<Vec<Registered>, Error>) -> String {
    match found {
        Ok(all) => match all.iter().find(|r| r.webhook == webhook) {
            Some(r) if r.failure_policy == "Ignore" => format!(
                "its failurePolicy is Ignore ({}), yet the API server refused: another webhook \
                 or a matchConditions error may be involved",
                r.origin()
            ),
            Some(r) => format!(
                "its failurePolicy is {} ({}), so the API server refuses every change to \
                 ClusterPromotions until the webhook answers again: check the promotion-webhook \
                 pods and their Service",
                r.failure_policy,
                r.origin()
            ),
            None => "no webhook configuration names it any more: retry".to_string(),
        },
        Err(e) => format!(
            "its failurePolicy is {}; under Fail (the default) every change to ClusterPromotions \
             is refused until the webhook answers again",
            e.unreadable()
        ),
    }
}

/// Why an approval that went through carries no record from promotion-webhook.
pub fn unrecorded_because(found: &Result<Vec<Registered>, Error>) -> String {
    match found {
        Ok(all) => {
            let mutating: Vec<&Registered> = all
                .iter()
                .filter(|r| r.kind.starts_with("Mutating"))
                .collect();
            match mutating.iter().find(|r| r.failure_policy == "Ignore") {
                Some(r) => format!(
                    "webhook {:?} did not answer and its failurePolicy is Ignore ({}), so the API \
                     server stored the change without it",
                    r.webhook,
                    r.origin()
                ),
                None if mutating.is_empty() => {
                    "no mutating admission webhook is registered for ClusterPromotions \
                     (promotion-webhook is not installed)"
                        .to_string()
                }
                None => "the mutating webhook did not write one".to_string(),
            }
        }
        Err(e) => format!(
            "the webhook did not write one (its configuration is {})",
            e.unreadable()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_webhooks_that_see_promotion_updates() {
        let list = json!({"items": [
            {"metadata": {"name": "kubectl-promotion"}, "webhooks": [
                {"name": "mutate.kubectl-promotion.dev",
                 "rules": [{"apiGroups": ["config.projectsveltos.io"], "apiVersions": ["v1beta1"],
                            "operations": ["CREATE", "UPDATE"], "resources": ["clusterpromotions"]}]},
                {"name": "pods.example", "failurePolicy": "Ignore",
                 "rules": [{"apiGroups": [""], "operations": ["*"], "resources": ["pods"]}]}
            ]},
            {"metadata": {"name": "other-session"}, "webhooks": [
                {"name": "mutate.kubectl-promotion.dev", "objectSelector": {"matchLabels": {"s": "b"}},
                 "rules": [{"apiGroups": ["config.projectsveltos.io"],
                            "operations": ["UPDATE"], "resources": ["clusterpromotions"]}]}
            ]},
            {"metadata": {"name": "everything"}, "webhooks": [
                {"name": "all.example", "failurePolicy": "Ignore",
                 "rules": [{"apiGroups": ["*"], "operations": ["*"], "resources": ["*/*"]}]}
            ]}
        ]});
        let found = covering_promotions("MutatingWebhookConfiguration", &list, &BTreeMap::new());
        let names: Vec<(&str, &str)> = found
            .iter()
            .map(|r| (r.webhook.as_str(), r.failure_policy.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("mutate.kubectl-promotion.dev", "Fail"),
                ("all.example", "Ignore")
            ]
        );
    }

    #[test]
    fn reads_the_webhook_and_cause_from_the_api_servers_message() {
        let message = "Internal error occurred: failed calling webhook \
                       \"mutate.kubectl-promotion.dev\": failed to call webhook: Post \
                       \"https://127.0.0.1:1/mutate?timeout=5s\": dial tcp 127.0.0.1:1: connect: \
                       connection refused";
        let (name, cause) = unreachable_webhook(message).expect("recognised");
        assert_eq!(name, "mutate.kubectl-promotion.dev");
        assert!(cause.starts_with("failed to call webhook: Post"), "{cause}");
        assert!(cause.ends_with("connection refused"), "{cause}");
        assert_eq!(unreachable_webhook("admission webhook \"x\" denied"), None);
    }
}
