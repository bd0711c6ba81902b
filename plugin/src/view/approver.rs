//! Whether the caller may approve, and who may: the advice to approve is given as a command only
//! to someone whose approval RBAC and the admission webhook would both admit, and otherwise says
//! why not and who can. The same for withdrawing an approval in effect ([`RevokeRight`]): under
//! approver groups only an approver, or whoever gave that approval, may. RBAC is the server's answer to a SelfSubjectAccessReview; the webhook's
//! rules are the ones the install publishes ([`PublishedGovernance`]), judged by the same function
//! the webhook runs ([`approver_refusals`]). What could not be learnt is said, never guessed.
//!
//! Pure: the command gathers the answers ([`CallerFacts`]) and this decides.

use serde::Serialize;

use promotion_shared::admission::{
    approver_refusals, group_list, revoker_refusal, ApproverRefusal, PublishedGovernance, UserInfo,
    GOVERNANCE_CONFIGMAP, GOVERNANCE_NAMESPACE,
};

use promotion_shared::api_resources::PROMOTIONS;

/// What the server told about the caller, once per command; each part may have failed (the
/// error says why, in a few words).
#[derive(Clone, Debug)]
pub struct CallerFacts {
    /// The SelfSubjectReview's user.
    pub identity: Result<UserInfo, String>,
    /// The published approver rules; `None`: none published.
    pub rules: Result<Option<PublishedGovernance>, String>,
}

/// Whether the caller may approve the promotion's gate, in the model (`approvalRight`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRight {
    /// `true`: RBAC and the published rules admit the caller's approval; `false`: one of them
    /// refuses it; `null`: not known (see `reasons`).
    pub may_approve: Option<bool>,
    /// Why not, or what could not be learnt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Who may approve, in words.
    pub who_may: String,
    /// Whether the approver rules were read (`false`: none published, or not readable).
    pub rules_read: bool,
}

impl ApprovalRight {
    /// `describe -f`: nothing was asked of a cluster.
    pub fn offline() -> ApprovalRight {
        ApprovalRight {
            may_approve: None,
            reasons: vec!["described offline, nothing was asked of a cluster".into()],
            who_may: "someone who may patch it".into(),
            rules_read: false,
        }
    }

    /// Judge the caller: `rbac` is whether they may patch the promotion `name`, `starter` who
    /// started the rollout by the webhook's record.
    pub fn judge(
        name: &str,
        rbac: &Result<bool, String>,
        caller: &CallerFacts,
        starter: Option<&str>,
    ) -> ApprovalRight {
        let mut found = Findings::rbac(name, rbac);
        let rules = match &caller.rules {
            Ok(Some(rules)) => Some(rules),
            Ok(None) => None,
            Err(e) => {
                found.rules_unreadable(e);
                None
            }
        };
        let mut who_may = String::from("someone");
        if let Some(rules) = rules {
            let policy = rules.policy(Vec::new());
            if !rules.approver_groups.is_empty() {
                who_may = format!("a member of {}", group_list(&rules.approver_groups));
            }
            if rules.forbid_self_approval {
                if let Some(starter) = starter {
                    who_may.push_str(&format!(" other than {starter:?}"));
                }
            }
            if policy.is_enforcing() {
                match &caller.identity {
                    Ok(user) => {
                        found.refused.extend(
                            approver_refusals(&policy, user, starter)
                                .iter()
                                .map(|refusal| refusal_reason(refusal, user)),
                        );
                    }
                    Err(e) => found.identity_unknown(e),
                }
            }
        }
        who_may.push_str(" who may patch it");
        let (may_approve, reasons) = found.verdict();
        ApprovalRight {
            may_approve,
            reasons,
            who_may,
            rules_read: rules.is_some(),
        }
    }

    /// The advice `step` (a `kubectl promotion approve …` command) as this caller should read it.
    pub fn advise(&self, step: &str) -> String {
        advise(
            self.may_approve,
            "approve",
            &self.reasons,
            &self.who_may,
            step,
        )
    }
}

/// Whether the caller may withdraw the approval in effect on a stage, in the model (the stage's
/// `revokeRight`): the webhook's rule ([`revoker_refusal`]) and RBAC, as for approving.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokeRight {
    /// `true`: RBAC and the published rules admit the caller's revocation; `false`: one of them
    /// refuses it; `null`: not known (see `reasons`).
    pub may_revoke: Option<bool>,
    /// Why not, or what could not be learnt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Who may revoke, in words.
    pub who_may: String,
}

impl RevokeRight {
    /// `describe -f`: nothing was asked of a cluster.
    pub fn offline() -> RevokeRight {
        RevokeRight {
            may_revoke: None,
            reasons: vec!["described offline, nothing was asked of a cluster".into()],
            who_may: "someone who may patch it".into(),
        }
    }

    /// Judge the caller's revocation of an approval of the promotion `name` that `giver` gave
    /// (by the webhook's record; `None`: nobody known): `rbac` is whether they may patch it.
    pub fn judge(
        name: &str,
        rbac: &Result<bool, String>,
        caller: &CallerFacts,
        giver: Option<&str>,
    ) -> RevokeRight {
        let mut found = Findings::rbac(name, rbac);
        let mut who_may = String::from("someone");
        match &caller.rules {
            Ok(Some(rules)) if !rules.approver_groups.is_empty() => {
                who_may = format!("a member of {}", group_list(&rules.approver_groups));
                if let Some(giver) = giver {
                    who_may.push_str(&format!(" or {giver:?} (who gave it)"));
                }
                match &caller.identity {
                    Ok(user) => {
                        if let Some(refusal) =
                            revoker_refusal(&rules.policy(Vec::new()), user, giver)
                        {
                            found
                                .refused
                                .push(revoker_reason(&refusal.approver_groups, user));
                        }
                    }
                    Err(e) => found.identity_unknown(e),
                }
            }
            Ok(_) => {}
            Err(e) => found.rules_unreadable(e),
        }
        who_may.push_str(" who may patch it");
        let (may_revoke, reasons) = found.verdict();
        RevokeRight {
            may_revoke,
            reasons,
            who_may,
        }
    }

    /// The advice `step` (a `kubectl promotion approve … --revoke` command) as this caller
    /// should read it.
    pub fn advise(&self, step: &str) -> String {
        advise(
            self.may_revoke,
            "revoke it",
            &self.reasons,
            &self.who_may,
            step,
        )
    }
}

/// What judging a right found: reasons it is refused, and what could not be learnt.
struct Findings {
    refused: Vec<String>,
    unknown: Vec<String>,
}

impl Findings {
    /// Start from RBAC's answer to "may the caller patch the promotion `name`".
    fn rbac(name: &str, rbac: &Result<bool, String>) -> Findings {
        let mut found = Findings {
            refused: Vec::new(),
            unknown: Vec::new(),
        };
        match rbac {
            Ok(true) => {}
            Ok(false) => found
                .refused
                .push(format!("RBAC: no patch on {PROMOTIONS} {name:?}")),
            Err(e) => found.unknown.push(format!("the access review failed: {e}")),
        }
        found
    }

    fn rules_unreadable(&mut self, e: &impl std::fmt::Display) {
        self.unknown.push(format!(
            "the approver rules could not be read (ConfigMap \
             {GOVERNANCE_NAMESPACE}/{GOVERNANCE_CONFIGMAP}: {e})"
        ));
    }

    fn identity_unknown(&mut self, e: &impl std::fmt::Display) {
        self.unknown.push(format!(
            "who you are could not be asked, which the approver rules depend on ({e})"
        ));
    }

    /// Refused if anything refuses; unknown if anything could not be learnt; else admitted.
    fn verdict(self) -> (Option<bool>, Vec<String>) {
        match (self.refused.is_empty(), self.unknown.is_empty()) {
            (false, _) => (Some(false), self.refused),
            (true, false) => (None, self.unknown),
            (true, true) => (Some(true), Vec::new()),
        }
    }
}

/// The advice `step` (a command) as a caller whose right to `verb` is `may` should read it.
fn advise(may: Option<bool>, verb: &str, reasons: &[String], who_may: &str, step: &str) -> String {
    match may {
        Some(true) => step.to_string(),
        Some(false) => format!(
            "you cannot {verb} ({}): {who_may} runs: {step}",
            reasons.join("; ")
        ),
        None => format!(
            "{step}   (whether you may {verb} is unknown: {})",
            reasons.join("; ")
        ),
    }
}

/// Why the webhook refuses `user`'s revocation of another user's approval.
fn revoker_reason(approver_groups: &[String], user: &UserInfo) -> String {
    let name = user.username.as_deref().unwrap_or_default();
    format!(
        "the admission webhook admits a revocation of another user's approval only from members \
         of {} (the right to approve), and you ({name:?}) are in {}",
        group_list(approver_groups),
        your_groups(user)
    )
}

/// The caller's groups as refusals list them.
fn your_groups(user: &UserInfo) -> String {
    let groups = user.groups.as_deref().unwrap_or_default();
    if groups.is_empty() {
        "no group".to_string()
    } else {
        groups
            .iter()
            .map(|g| format!("{g:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn refusal_reason(refusal: &ApproverRefusal, user: &UserInfo) -> String {
    let name = user.username.as_deref().unwrap_or_default();
    match refusal {
        ApproverRefusal::NotInGroup { approver_groups } => format!(
            "the admission webhook admits approvals only from members of {}, and you ({name:?}) \
             are in {}",
            group_list(approver_groups),
            your_groups(user)
        ),
        ApproverRefusal::SelfApproval => format!(
            "four eyes: you ({name:?}) started this rollout, and the admission webhook admits \
             another user's approval only"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: &str = "kubectl promotion approve p --stage staging   (staging → prod)";

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: Some(name.into()),
            groups: Some(groups.iter().map(|g| g.to_string()).collect()),
            ..UserInfo::default()
        }
    }

    fn facts(identity: UserInfo, rules: Option<PublishedGovernance>) -> CallerFacts {
        CallerFacts {
            identity: Ok(identity),
            rules: Ok(rules),
        }
    }

    fn governed(groups: &[&str], four_eyes: bool) -> Option<PublishedGovernance> {
        Some(PublishedGovernance {
            approver_groups: groups.iter().map(|g| g.to_string()).collect(),
            rollback_groups: Vec::new(),
            forbid_self_approval: four_eyes,
        })
    }

    #[test]
    fn rbac_and_the_published_rules_must_both_admit_the_caller() {
        let alice = user("alice", &["release-managers", "system:authenticated"]);
        let rules = governed(&["release-managers"], true);
        let may = ApprovalRight::judge("p", &Ok(true), &facts(alice.clone(), rules.clone()), None);
        assert_eq!(may.may_approve, Some(true));
        assert_eq!(may.advise(STEP), STEP);

        let right =
            ApprovalRight::judge("p", &Ok(false), &facts(alice.clone(), rules.clone()), None);
        assert_eq!(
            right.advise(STEP),
            format!(
                "you cannot approve (RBAC: no patch on clusterpromotions.config.projectsveltos.io \
                 \"p\"): a member of group \"release-managers\" who may patch it runs: {STEP}"
            )
        );

        let right =
            ApprovalRight::judge("p", &Ok(true), &facts(alice, rules.clone()), Some("alice"));
        assert_eq!(
            right.advise(STEP),
            format!(
                "you cannot approve (four eyes: you (\"alice\") started this rollout, and the \
                 admission webhook admits another user's approval only): a member of group \
                 \"release-managers\" other than \"alice\" who may patch it runs: {STEP}"
            )
        );

        let admin = user("admin", &["system:masters"]);
        let right = ApprovalRight::judge("p", &Ok(true), &facts(admin, rules), Some("alice"));
        assert_eq!(right.may_approve, Some(false));
        assert_eq!(
            right.reasons,
            [
                "the admission webhook admits approvals only from members of group \
              \"release-managers\", and you (\"admin\") are in \"system:masters\""
            ]
        );
    }

    #[test]
    fn what_could_not_be_learnt_is_said_and_a_known_refusal_wins() {
        let unreadable = CallerFacts {
            identity: Ok(user("bob", &[])),
            rules: Err("forbidden (you cannot get configmaps)".into()),
        };
        let right = ApprovalRight::judge("p", &Ok(true), &unreadable, None);
        assert_eq!(right.may_approve, None);
        assert_eq!(
            right.advise(STEP),
            format!(
                "{STEP}   (whether you may approve is unknown: the approver rules could not be \
                 read (ConfigMap kubectl-promotion-system/promotion-governance: forbidden (you \
                 cannot get configmaps)))"
            )
        );
        let right = ApprovalRight::judge("p", &Ok(false), &unreadable, None);
        assert_eq!(right.may_approve, Some(false));
        assert_eq!(right.who_may, "someone who may patch it");

        // Rules that restrict nothing need no identity.
        let open = CallerFacts {
            identity: Err("SelfSubjectReview not served".into()),
            rules: Ok(governed(&[], false)),
        };
        assert_eq!(
            ApprovalRight::judge("p", &Ok(true), &open, None).may_approve,
            Some(true)
        );
        let closed = CallerFacts {
            identity: Err("SelfSubjectReview not served".into()),
            rules: Ok(governed(&["release-managers"], false)),
        };
        let right = ApprovalRight::judge("p", &Ok(true), &closed, None);
        assert_eq!(right.may_approve, None);
        assert!(
            right.reasons[0].starts_with("who you are could not be asked"),
            "{right:?}"
        );
    }

    const REVOKE: &str = "kubectl promotion approve p --stage staging --revoke";

    #[test]
    fn an_approver_or_whoever_gave_the_approval_may_revoke_it() {
        let rules = governed(&["release-managers"], true);
        let judge = |who: UserInfo, rbac: Result<bool, String>, giver: Option<&str>| {
            RevokeRight::judge("p", &rbac, &facts(who, rules.clone()), giver)
        };
        let rm = user("rm", &["release-managers"]);
        assert_eq!(judge(rm, Ok(true), Some("alice")).advise(REVOKE), REVOKE);
        // alice gave it: she may withdraw it, approver or not.
        let alice = user("alice", &["developers"]);
        assert_eq!(
            judge(alice.clone(), Ok(true), Some("alice")).may_revoke,
            Some(true)
        );
        // bob may not withdraw alice's approval.
        let bob = user("bob", &["developers"]);
        assert_eq!(
            judge(bob.clone(), Ok(true), Some("alice")).advise(REVOKE),
            format!(
                "you cannot revoke it (the admission webhook admits a revocation of another \
                 user's approval only from members of group \"release-managers\" (the right to \
                 approve), and you (\"bob\") are in \"developers\"): a member of group \
                 \"release-managers\" or \"alice\" (who gave it) who may patch it runs: {REVOKE}"
            )
        );
        // Without a record of who gave it, only an approver.
        let right = judge(alice.clone(), Ok(true), None);
        assert_eq!(right.may_revoke, Some(false));
        assert_eq!(
            right.who_may,
            "a member of group \"release-managers\" who may patch it"
        );
        // RBAC refuses alike; four eyes plays no part.
        let right = judge(alice, Ok(false), Some("alice"));
        assert_eq!(
            right.reasons,
            ["RBAC: no patch on clusterpromotions.config.projectsveltos.io \"p\""]
        );
        // Rules without approver groups restrict nobody, and need no identity.
        let open = CallerFacts {
            identity: Err("SelfSubjectReview not served".into()),
            rules: Ok(governed(&[], true)),
        };
        let right = RevokeRight::judge("p", &Ok(true), &open, Some("alice"));
        assert_eq!(
            (right.may_revoke, right.who_may.as_str()),
            (Some(true), "someone who may patch it")
        );
        let closed = CallerFacts {
            identity: Err("SelfSubjectReview not served".into()),
            rules: Ok(governed(&["release-managers"], false)),
        };
        let right = RevokeRight::judge("p", &Ok(true), &closed, Some("alice"));
        assert_eq!(right.may_revoke, None);
        assert!(
            right.advise(REVOKE).starts_with(&format!(
                "{REVOKE}   (whether you may revoke it is unknown: who you are could not be asked"
            )),
            "{right:?}"
        );
        assert_eq!(
            RevokeRight::offline().advise(REVOKE),
            format!(
                "{REVOKE}   (whether you may revoke it is unknown: described offline, nothing \
                 was asked of a cluster)"
            )
        );
    }

    #[test]
    fn without_published_rules_rbac_alone_decides() {
        let right = ApprovalRight::judge("p", &Ok(true), &facts(user("x", &[]), None), None);
        assert_eq!(right.may_approve, Some(true));
        assert!(!right.rules_read);
        assert_eq!(ApprovalRight::offline().advise(STEP), format!(
            "{STEP}   (whether you may approve is unknown: described offline, nothing was asked of a cluster)"
        ));
    }
}
