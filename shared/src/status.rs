//! The texts Sveltos writes into a ClusterPromotion's status (addon-controller v1.13.0
//! `updateStageDescription` and `allClusterSummariesDeployed`), and how to read them.

/// `currentStatusDescription` prefixes. Every description ends with ` (<UTC time>)`.
pub mod descriptions {
    pub const PROVISIONING: &str = "Clusters are being provisioned";
    pub const ALL_DEPLOYED: &str = "All matching clusters are successfully deployed.";
    pub const NO_MATCHING_CLUSTERS: &str = "No matching clusters found for ClusterProfile ";
    pub const SOAKING: &str = "Delayed: Waiting for Time Window: ";
    pub const RUNNING_CHECKS: &str = "Running Post-Promotion Health Checks";
    pub const AWAITING_CHECKS: &str = "Awaiting Health Checks to Pass";
    pub const WINDOW_CLOSED: &str = "Window Closed: Waiting for Next Schedule (";
    pub const AWAITING_APPROVAL: &str = "Paused: Awaiting Manual Approval";
    /// The stage's trigger is satisfied: Sveltos moves on (or, on the last stage, completes).
    pub const PROMOTED: &str = "Successfully provisioned";
    /// Ours, not Sveltos': the stage is being set back to a revision ([`crate::abort`]),
    /// followed by its number.
    pub const ROLLING_BACK: &str = "Rolling back to revision ";
    /// Ours: the stage runs the revision it was rolled back to, deployed; followed by its number.
    pub const ROLLED_BACK: &str = "Rolled back to revision ";
}

/// `failureMessage` texts that are not about clusters.
pub mod failures {
    pub const LICENSE_REQUIRED: &str = "license is required to manage ClusterPromotion";
}

/// `"<text> (2026-02-16T07:38:02Z)"` → `"<text>"`.
pub fn strip_timestamp(description: &str) -> &str {
    match description.rfind(" (") {
        Some(i) if description.ends_with(')') && description[i + 2..].len() == 21 => {
            &description[..i]
        }
        _ => description,
    }
}

/// The time Sveltos appended to a description, if any (`2026-02-16T07:38:02Z`).
pub fn description_time(description: &str) -> Option<&str> {
    let text = strip_timestamp(description);
    (text.len() < description.len())
        .then(|| description[text.len() + 2..description.len() - 1].trim())
}

/// A stage's waiting description (upstream's status strings, [`descriptions`]) in the words the
/// views use: "soaking until …", "waiting for its promotion window until …".
pub fn in_plain_words(description: &str) -> String {
    use descriptions::*;
    let text = strip_timestamp(description);
    if let Some(until) = text.strip_prefix(SOAKING) {
        return format!("soaking until {}", until.trim());
    }
    if let Some(rest) = text.strip_prefix(WINDOW_CLOSED) {
        let until = rest.trim_end_matches('.').trim_end_matches(')').trim();
        return format!("waiting for its promotion window until {until}");
    }
    match text {
        RUNNING_CHECKS => "its post-delay health checks are being added to its profile".into(),
        AWAITING_CHECKS => "waiting for its health checks to pass".into(),
        AWAITING_APPROVAL => "awaiting manual approval".into(),
        other => other.to_string(),
    }
}

/// The stage's trigger has been satisfied (description "Successfully provisioned").
pub fn trigger_satisfied(description: Option<&str>) -> bool {
    description.is_some_and(|d| strip_timestamp(d).starts_with(descriptions::PROMOTED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_lose_their_time() {
        let d = "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)";
        assert_eq!(strip_timestamp(d), descriptions::AWAITING_APPROVAL);
        assert_eq!(description_time(d), Some("2026-02-16T07:38:02Z"));
        assert_eq!(strip_timestamp("no time"), "no time");
        assert_eq!(description_time("no time"), None);
        assert!(trigger_satisfied(Some(
            "Successfully provisioned (2026-02-16T07:38:02Z)"
        )));
        assert!(!trigger_satisfied(None));
    }
}
