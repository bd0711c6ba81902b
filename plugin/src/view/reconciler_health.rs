//! Whether promotion-controller can act on a promotion right now, from what `describe` reads:
//! its Lease (renewed every few seconds by the leading replica: one not renewed within its
//! duration means no replica leads — stuck or down; none at all means none runs in the install's
//! namespace) and its `WriteBlocked` Warning Events (a write the API server refused: a webhook's
//! denial, the webhook down under `failurePolicy: Fail`, RBAC). Only a promotion that
//! promotion-controller reconciles, or that nothing has reconciled yet, is judged: a status
//! another reconciler writes (Sveltos Enterprise) says nothing about ours.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use promotion_shared::admission::GOVERNANCE_NAMESPACE;
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

use super::events::EventView;

/// Where the install runs promotion-controller, and the name of its Lease (the defaults of
/// `manifests/controller` and of `--leader-elect-lease-name`).
pub const CONTROLLER_NAMESPACE: &str = GOVERNANCE_NAMESPACE;
pub const LEASE_NAME: &str = CONTROLLER_FIELD_MANAGER;

/// The controller retries a refused write with a backoff capped at 5 minutes, and each refusal
/// refreshes its `WriteBlocked` Event: one not seen for longer than this is over.
const BLOCKED_FRESH: Duration = Duration::minutes(6);

/// What was read of the controller's Lease.
#[derive(Clone, Debug, PartialEq)]
pub enum LeaseRead {
    Found(Value),
    /// The server answered that there is none.
    Missing,
    /// Not readable (forbidden, …): nothing is said about the controller's liveness.
    Unreadable(String),
}

/// A reason promotion-controller cannot act on the promotion, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Blocked {
    /// `blocked`, `stuck` or `absent`.
    pub kind: &'static str,
    pub problem: String,
    pub fix: String,
}

/// Judge the reconciler of a promotion. `ours`: promotion-controller writes its status, or
/// nothing has yet; `written`: promotion-controller has written it (then a missing Lease says
/// nothing: it may run without leader election). `events`: the promotion's Events, oldest first.
pub fn judge(
    ours: bool,
    written: bool,
    lease: &LeaseRead,
    events: Option<&[EventView]>,
    now: DateTime<Utc>,
) -> Option<Blocked> {
    if !ours {
        return None;
    }
    let where_ = format!("{CONTROLLER_NAMESPACE}/{LEASE_NAME}");
    let logs = format!(
        "kubectl -n {CONTROLLER_NAMESPACE} get pods,lease; kubectl -n {CONTROLLER_NAMESPACE} \
         logs deploy/promotion-controller"
    );
    match lease {
        LeaseRead::Missing if !written => {
            return Some(Blocked {
                kind: "absent",
                problem: format!(
                    "no promotion-controller runs in {CONTROLLER_NAMESPACE} (it has no Lease \
                     {where_})"
                ),
                fix: "install it (kubectl apply -k manifests/ of kubectl-promotion, see \
                      docs/controller.md), or, with Sveltos Enterprise, check its addon-controller"
                    .into(),
            })
        }
        LeaseRead::Found(lease) => {
            if let Some(stale) = stale_lease(lease, now) {
                return Some(Blocked {
                    kind: "stuck",
                    problem: stale,
                    fix: format!("check the controller's replicas: {logs}"),
                });
            }
        }
        LeaseRead::Missing | LeaseRead::Unreadable(_) => {}
    }
    let last = events?.last()?;
    if last.kind != "Warning" || last.reason != "WriteBlocked" {
        return None;
    }
    let when = last
        .time
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())?
        .with_timezone(&Utc);
    let ago = now.signed_duration_since(when);
    if ago > BLOCKED_FRESH {
        return None;
    }
    Some(Blocked {
        kind: "blocked",
        problem: format!(
            "promotion-controller cannot write this promotion (refused {} ago, {} time(s)): {}",
            crate::duration::human(ago.max(Duration::zero())),
            last.count,
            // The controller's own prefix says what the problem already says.
            last.message
                .strip_prefix("promotion-controller could not write: ")
                .unwrap_or(&last.message)
        ),
        fix: "if an admission webhook denied it, the webhook trusts another identity than the \
              controller's (start promotion-webhook with --controller-user set to the \
              controller's ServiceAccount, as manifests/ does); if the webhook is down under \
              failurePolicy: Fail, bring it back (kubectl -n kubectl-promotion-system get pods); \
              the controller retries by itself"
            .into(),
    })
}

/// Why the Lease shows no leader: not renewed within its duration (with a second of slack for
/// the clocks' resolution).
fn stale_lease(lease: &Value, now: DateTime<Utc>) -> Option<String> {
    let spec = lease.get("spec")?;
    let renewed = spec
        .get("renewTime")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    let duration = spec
        .get("leaseDurationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(15);
    let holder = spec
        .get("holderIdentity")
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty());
    let where_ = format!("{CONTROLLER_NAMESPACE}/{LEASE_NAME}");
    match renewed {
        // Released (a replica that stops hands the Lease back) or never held.
        None => Some(format!(
            "promotion-controller has no leader: its Lease {where_} is held by no replica"
        )),
        Some(t) if now.signed_duration_since(t) > Duration::seconds(duration + 1) => Some(format!(
            "promotion-controller has no leader: its Lease {where_} was last renewed {} ago{} \
                 (a leader renews it within {duration}s): its replicas are stuck or down",
            crate::duration::human(now.signed_duration_since(t)),
            holder.map(|h| format!(" by {h}")).unwrap_or_default()
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        "2026-03-02T10:00:00Z".parse().unwrap()
    }

    fn lease(renewed: &str) -> LeaseRead {
        LeaseRead::Found(
            json!({"spec": {"holderIdentity": "pc-0_1", "leaseDurationSeconds": 15,
                                         "renewTime": renewed}}),
        )
    }

    fn event(kind: &str, reason: &str, time: &str) -> EventView {
        EventView {
            kind: kind.into(),
            reason: reason.into(),
            message: "admission webhook denied the request".into(),
            time: Some(time.into()),
            count: 3,
            source: Some("promotion-controller".into()),
        }
    }

    #[test]
    fn a_lease_renewed_within_its_duration_is_a_leader() {
        assert_eq!(
            judge(
                true,
                true,
                &lease("2026-03-02T09:59:50.000000Z"),
                None,
                now()
            ),
            None
        );
        let stuck = judge(
            true,
            true,
            &lease("2026-03-02T09:55:00.000000Z"),
            None,
            now(),
        )
        .unwrap();
        assert_eq!(stuck.kind, "stuck");
        assert!(
            stuck.problem.contains("last renewed 5m ago by pc-0_1"),
            "{}",
            stuck.problem
        );
        let absent = judge(true, false, &LeaseRead::Missing, None, now()).unwrap();
        assert_eq!(absent.kind, "absent");
        // Once it wrote the status, a missing Lease may be leader election turned off.
        assert_eq!(judge(true, true, &LeaseRead::Missing, None, now()), None);
        // Another reconciler's promotion says nothing about ours.
        assert_eq!(judge(false, false, &LeaseRead::Missing, None, now()), None);
        // An unreadable Lease says nothing either.
        assert_eq!(
            judge(
                true,
                false,
                &LeaseRead::Unreadable("forbidden".into()),
                None,
                now()
            ),
            None
        );
    }

    #[test]
    fn a_recent_refusal_is_blocked_until_something_else_happens() {
        let healthy = lease("2026-03-02T09:59:58Z");
        let blocked = [event("Warning", "WriteBlocked", "2026-03-02T09:58:00Z")];
        let b = judge(true, true, &healthy, Some(&blocked), now()).unwrap();
        assert_eq!(b.kind, "blocked");
        assert!(
            b.problem.contains("refused 2m ago, 3 time(s)"),
            "{}",
            b.problem
        );
        // Long over, or followed by progress: not blocked.
        let old = [event("Warning", "WriteBlocked", "2026-03-02T09:40:00Z")];
        assert_eq!(judge(true, true, &healthy, Some(&old), now()), None);
        let since = [
            event("Warning", "WriteBlocked", "2026-03-02T09:58:00Z"),
            event("Normal", "ClusterPromotion", "2026-03-02T09:59:00Z"),
        ];
        assert_eq!(judge(true, true, &healthy, Some(&since), now()), None);
    }
}
