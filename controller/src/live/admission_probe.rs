//! At start, whether the API server — its admission webhooks included — will accept this
//! controller's writes, said in the log before any promotion waits on it. promotion-webhook lets
//! only the identity it trusts (`--controller-user`) change the controller's own annotations;
//! a controller running under another identity is otherwise only seen in `WriteBlocked` Events,
//! once a promotion needs a write.
//!
//! The check: who the API server says we are (a SelfSubjectReview), then a server-side dry run of
//! a write only the controller may make — the used-approvals annotation of an existing
//! ClusterPromotion, rewritten with a trailing space (the same record) — which every admission
//! webhook judges and nothing stores. Without a ClusterPromotion there is nothing to try it on:
//! the answer is "unknown".

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;
use tracing::{info, warn};

use promotion_shared::admission::used_approvals::USED_APPROVALS_ANNOTATION;
use promotion_shared::api_error::{classify, Failure};
use promotion_shared::api_resources::PROMOTION;
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

/// What the check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accepted {
        on: String,
    },
    Refused {
        on: String,
        why: String,
    },
    /// No promotion to try on, or the check itself failed (the reason).
    Unknown(String),
}

/// Run the check on a promotion this controller reconciles (within `selector`) and log its
/// verdict.
pub async fn check(client: &Client, selector: Option<&str>) -> Verdict {
    let user = whoami(client).await;
    let verdict = try_a_write(client, selector).await;
    let user = user
        .as_deref()
        .unwrap_or("(unknown: SelfSubjectReview failed)");
    match &verdict {
        Verdict::Accepted { on } => info!(
            user,
            promotion = %on,
            "admission check: the API server and its webhooks accept this controller's writes \
             (server-side dry run)"
        ),
        Verdict::Refused { on, why } => warn!(
            user,
            promotion = %on,
            error = %why,
            "admission check: this controller's writes are refused: promotions will not advance \
             until promotion-webhook trusts this identity (--controller-user) or the webhook is \
             reachable again"
        ),
        Verdict::Unknown(why) => info!(user, "admission check: unknown ({why})"),
    }
    verdict
}

async fn whoami(client: &Client) -> Option<String> {
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .ok()?;
    review.status?.user_info?.username
}

async fn try_a_write(client: &Client, selector: Option<&str>) -> Verdict {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &PROMOTION.api_resource());
    let mut params = ListParams::default().limit(1);
    if let Some(selector) = selector {
        params = params.labels(selector);
    }
    let listed = match api.list(&params).await {
        Ok(l) => l,
        Err(e) => {
            return Verdict::Unknown(format!(
                "cannot list ClusterPromotions: {}",
                kube_connect::error_chain(&e)
            ))
        }
    };
    let Some(promotion) = listed.items.into_iter().next() else {
        return Verdict::Unknown("no ClusterPromotion to try a dry-run write on".into());
    };
    let name = promotion.metadata.name.clone().unwrap_or_default();
    let current = promotion
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(USED_APPROVALS_ANNOTATION))
        .cloned()
        .unwrap_or_else(|| "{}".to_string());
    let patch = json!({"metadata": {
        "resourceVersion": promotion.metadata.resource_version,
        "annotations": {USED_APPROVALS_ANNOTATION: format!("{current} ")}
    }});
    let params = PatchParams {
        dry_run: true,
        field_manager: Some(CONTROLLER_FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    };
    match api.patch(&name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => Verdict::Accepted { on: name },
        // Changed since it was listed: the webhooks were not asked; no verdict either way.
        Err(kube::Error::Api(s)) if classify(&s) == Failure::Conflict => Verdict::Unknown(format!(
            "{name} changed while it was tried; the next write will tell"
        )),
        Err(e) => Verdict::Refused {
            on: name,
            why: kube_connect::error_chain(&e),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The annotation value the probe writes is the same record, so any parser reads it alike.
    #[test]
    fn the_probe_value_is_the_same_record() {
        let record = r#"{"staging":{"user":"alice"}}"#;
        let probed = format!("{record} ");
        let a: Value = serde_json::from_str(record).unwrap();
        let b: Value = serde_json::from_str(&probed).unwrap();
        assert_eq!(a, b);
    }
}
