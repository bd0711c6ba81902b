//! What the admission tests share: the time of a request and the user making it.

use chrono::{DateTime, TimeZone, Utc};
use k8s_openapi::api::authentication::v1::UserInfo;

/// The time of the requests under test.
pub(super) fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

/// A requesting user `name`, member of `groups`.
pub(super) fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: Some(name.to_string()),
        groups: Some(groups.iter().map(|g| g.to_string()).collect()),
        ..UserInfo::default()
    }
}
