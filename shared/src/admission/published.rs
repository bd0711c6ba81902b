//! The approver rules as the install publishes them: one ConfigMap that the webhook reads
//! (mounted as files, `promotion-webhook serve --governance-dir`) and the plugin reads through
//! the API, so that what `describe` says about who may approve is what the webhook enforces.
//!
//! The format is three keys, all optional:
//! - `approver-groups`: groups separated by commas or line breaks; none (or the key left out):
//!   anyone RBAC lets update a ClusterPromotion may approve;
//! - `forbid-self-approval`: `true` or `false` (empty or left out: `false`);
//! - `rollback-groups`: as `approver-groups`, for aborting, rolling back and retrying a rollout
//!   ([`crate::abort`]); none: anyone RBAC lets update it.
//!
//! Any other key is refused rather than ignored: `approver-group: release-managers` would
//! otherwise look like a restriction while none applies.

use serde::Serialize;

use super::GovernancePolicy;

/// Where the install puts the ConfigMap (`manifests/base/governance.yaml`).
pub const GOVERNANCE_NAMESPACE: &str = "kubectl-promotion-system";
pub const GOVERNANCE_CONFIGMAP: &str = "promotion-governance";

pub const APPROVER_GROUPS_KEY: &str = "approver-groups";
pub const FORBID_SELF_APPROVAL_KEY: &str = "forbid-self-approval";
pub const ROLLBACK_GROUPS_KEY: &str = "rollback-groups";

/// The published approver rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedGovernance {
    /// Empty: no group restriction.
    pub approver_groups: Vec<String>,
    pub forbid_self_approval: bool,
    /// Empty: anyone who may update a promotion may abort, roll back and retry.
    pub rollback_groups: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PublishedError {
    #[error(
        "key {0:?} is not an approver rule (the keys are {APPROVER_GROUPS_KEY:?}, \
         {FORBID_SELF_APPROVAL_KEY:?} and {ROLLBACK_GROUPS_KEY:?})"
    )]
    UnknownKey(String),
    #[error("key {FORBID_SELF_APPROVAL_KEY:?}: {0:?} is not \"true\" or \"false\"")]
    NotABool(String),
}

impl PublishedGovernance {
    /// The rules from a ConfigMap's `data` (or the files of its mounted volume): key and value.
    pub fn parse<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<PublishedGovernance, PublishedError> {
        let mut published = PublishedGovernance::default();
        for (key, value) in entries {
            match key {
                APPROVER_GROUPS_KEY => published.approver_groups = group_values(value),
                ROLLBACK_GROUPS_KEY => published.rollback_groups = group_values(value),
                FORBID_SELF_APPROVAL_KEY => {
                    published.forbid_self_approval = match value.trim() {
                        "true" => true,
                        "false" | "" => false,
                        other => return Err(PublishedError::NotABool(other.to_string())),
                    }
                }
                other => return Err(PublishedError::UnknownKey(other.to_string())),
            }
        }
        Ok(published)
    }

    /// The webhook's policy with these rules and the controller's users.
    pub fn policy(&self, controller_users: Vec<String>) -> GovernancePolicy {
        GovernancePolicy {
            approver_groups: self.approver_groups.clone(),
            forbid_self_approval: self.forbid_self_approval,
            controller_users,
            rollback_groups: self.rollback_groups.clone(),
        }
    }
}

/// Groups separated by commas or line breaks, blanks dropped.
fn group_values(value: &str) -> Vec<String> {
    value
        .split([',', '\n'])
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_split_on_commas_and_lines_and_booleans_are_strict() {
        let published = PublishedGovernance::parse([
            (APPROVER_GROUPS_KEY, " release-managers,\nRelease Leads \n,"),
            (FORBID_SELF_APPROVAL_KEY, "true\n"),
        ])
        .unwrap();
        assert_eq!(
            published,
            PublishedGovernance {
                approver_groups: vec!["release-managers".into(), "Release Leads".into()],
                forbid_self_approval: true,
                rollback_groups: Vec::new(),
            }
        );
        assert_eq!(
            PublishedGovernance::parse([(APPROVER_GROUPS_KEY, ""), (FORBID_SELF_APPROVAL_KEY, "")]),
            Ok(PublishedGovernance::default())
        );
        assert_eq!(
            PublishedGovernance::parse([(FORBID_SELF_APPROVAL_KEY, "yes")]),
            Err(PublishedError::NotABool("yes".into()))
        );
    }

    #[test]
    fn a_misspelt_key_is_refused_not_ignored() {
        let err = PublishedGovernance::parse([("approver-group", "release-managers")]).unwrap_err();
        assert_eq!(err, PublishedError::UnknownKey("approver-group".into()));
        assert!(err.to_string().contains("\"approver-groups\""), "{err}");
    }
}
