//! Events about a ClusterPromotion, as `kubectl describe` shows them: from `events.k8s.io/v1`
//! or core `v1` (whichever the caller may read), matched to the object, newest last.

use serde::Serialize;
use serde_json::Value;

use promotion_shared::model::KIND;

/// Where Events about a ClusterPromotion are ([`promotion_shared::api_resources::EVENTS_NAMESPACE`]).
pub use promotion_shared::api_resources::EVENTS_NAMESPACE as NAMESPACE;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    #[serde(rename = "type")]
    pub kind: String,
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The most recent time an event carries (events.k8s.io or core/v1 fields).
pub fn event_time(e: &Value) -> Option<String> {
    [
        "/series/lastObservedTime",
        "/deprecatedLastTimestamp",
        "/lastTimestamp",
        "/eventTime",
        "/deprecatedFirstTimestamp",
        "/firstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|p| e.pointer(p).and_then(Value::as_str))
    .filter(|t| !t.is_empty())
    .map(String::from)
}

pub fn event_view(e: &Value) -> EventView {
    let s = |p: &str| e.pointer(p).and_then(Value::as_str).map(String::from);
    let count = ["/series/count", "/deprecatedCount", "/count"]
        .iter()
        .find_map(|p| e.pointer(p).and_then(Value::as_u64))
        .unwrap_or(1);
    EventView {
        kind: s("/type").unwrap_or_else(|| "Normal".into()),
        reason: s("/reason").unwrap_or_default(),
        message: s("/note").or_else(|| s("/message")).unwrap_or_default(),
        time: event_time(e),
        count,
        source: s("/reportingController")
            .or_else(|| s("/deprecatedSource/component"))
            .or_else(|| s("/source/component"))
            .filter(|c| !c.is_empty()),
    }
}

/// Whether an event (events.k8s.io `regarding` or core `involvedObject`) is about this promotion.
pub fn regards(event: &Value, name: &str, uid: Option<&str>) -> bool {
    let target = event
        .get("regarding")
        .or_else(|| event.get("involvedObject"));
    let Some(t) = target else { return false };
    let same_uid = match (uid, t.get("uid").and_then(Value::as_str)) {
        (Some(a), Some(b)) if !b.is_empty() => a == b,
        _ => true,
    };
    t.get("kind").and_then(Value::as_str) == Some(KIND)
        && t.get("name").and_then(Value::as_str) == Some(name)
        && same_uid
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_matched_on_kind_name_and_uid() {
        let ev = json!({"regarding": {"kind": "ClusterPromotion", "name": "p", "uid": "u1"}});
        assert!(regards(&ev, "p", Some("u1")));
        assert!(!regards(&ev, "p", Some("u2")));
        assert!(!regards(&ev, "q", None));
        let core = json!({"involvedObject": {"kind": "ClusterPromotion", "name": "p"}});
        assert!(regards(&core, "p", Some("u1")));
    }

    #[test]
    fn events_of_both_api_groups_are_read() {
        let new = json!({"type": "Normal", "reason": "Sveltos", "note": "Stage dev provisioned",
                         "deprecatedCount": 3, "reportingController": "addon-controller",
                         "deprecatedLastTimestamp": "2026-02-16T07:27:41Z"});
        let v = event_view(&new);
        assert_eq!(v.message, "Stage dev provisioned");
        assert_eq!(v.count, 3);
        assert_eq!(v.time.as_deref(), Some("2026-02-16T07:27:41Z"));
        let old = json!({"type": "Warning", "reason": "R", "message": "m",
                         "source": {"component": "c"}, "lastTimestamp": "2026-01-01T00:00:00Z"});
        let v = event_view(&old);
        assert_eq!(
            (v.kind.as_str(), v.source.as_deref()),
            ("Warning", Some("c"))
        );
    }
}
