//! "Did you mean …?": the closest of the names or values a schema allows to what was written.
//!
//! Only confident suggestions are made: a different case (`continuous`), one or two edits
//! scaled by length (`dealy`, `Continous`, `chartVersoin`), or a truncation of a longer
//! allowed word (`Leave` for `LeavePolicies`). Anything else gets no suggestion rather than a
//! misleading one.

/// The best candidate for `written`, if one is close enough.
pub fn closest<'a>(
    written: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = written.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == written {
            continue;
        }
        let Some(score) = score(written, &lower, candidate) else {
            continue;
        };
        if best.is_none_or(|(s, _)| score < s) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Lower is better; `None` when the candidate is not a plausible intent.
fn score(written: &str, lower: &str, candidate: &str) -> Option<usize> {
    let candidate_lower = candidate.to_lowercase();
    if candidate_lower == lower {
        return Some(0);
    }
    // Optimal string alignment counts a swap of neighbours (`dealy`) as one edit.
    let distance = strsim::osa_distance(lower, &candidate_lower);
    let length = written.chars().count().max(candidate.chars().count());
    let allowed = match length {
        0..=3 => 1,
        4..=8 => 2,
        _ => 3,
    };
    if distance <= allowed {
        return Some(1 + distance);
    }
    let long_enough = lower.chars().count() >= 4;
    if long_enough && candidate_lower.starts_with(lower) {
        return Some(10 + candidate.len() - written.len());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn typos_find_their_field() {
        let fields = [
            "delay",
            "postDelayHealthChecks",
            "preHealthCheckDeployment",
            "promotionWindow",
        ];
        assert_eq!(closest("dealy", fields), Some("delay"));
        assert_eq!(closest("Delay", fields), Some("delay"));
        assert_eq!(
            closest("postDelayHealthCheck", fields),
            Some("postDelayHealthChecks")
        );
        assert_eq!(closest("window", fields), None);
        assert_eq!(
            closest("clusterSelectr", ["name", "clusterSelector", "trigger"]),
            Some("clusterSelector")
        );
        assert_eq!(
            closest("chartVersoin", ["chartName", "chartVersion", "releaseName"]),
            Some("chartVersion")
        );
        assert_eq!(
            closest("scirpt", ["script", "kind", "name"]),
            Some("script")
        );
        assert_eq!(closest("specs", ["spec", "status"]), Some("spec"));
    }

    #[test]
    fn values_find_their_enum_member() {
        let modes = [
            "OneTime",
            "Continuous",
            "ContinuousWithDriftDetection",
            "DryRun",
        ];
        assert_eq!(closest("Continous", modes), Some("Continuous"));
        assert_eq!(closest("continuous", modes), Some("Continuous"));
        assert_eq!(
            closest("Leave", ["WithdrawPolicies", "LeavePolicies"]),
            Some("LeavePolicies")
        );
        assert_eq!(closest("Instal", ["Install", "Uninstall"]), Some("Install"));
        assert_eq!(
            closest("Resource", ["Resources", "Helm", "Kustomize"]),
            Some("Resources")
        );
    }

    #[test]
    fn unrelated_words_get_no_suggestion() {
        let kinds = [
            "GitRepository",
            "OCIRepository",
            "Bucket",
            "ConfigMap",
            "Secret",
        ];
        assert_eq!(closest("Deployment", kinds), None);
        assert_eq!(closest("x", ["spec", "status"]), None);
        assert_eq!(closest("", ["spec"]), None);
        assert_eq!(closest("spec", ["spec"]), None);
    }
}
