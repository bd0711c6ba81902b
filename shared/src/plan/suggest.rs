//! "Did you mean": for a stage selector that matches no cluster, a correction of one label key
//! or value that would make it match, as the fleet spells it (`env=production` → `env=prod`).
//!
//! Only `In` (and `matchLabels`) and `Exists` requirements can be misspelt into matching
//! nothing; `NotIn` and `DoesNotExist` match clusters that lack the key. A correction replaces a
//! value the fleet never uses with one it does, or a key no cluster carries with one they do,
//! and is kept only if the whole corrected selector then matches at least one cluster.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::fleet::Cluster;
use crate::selector::{Operator, Requirement, Selector};

/// At most this many spellings are tried per requirement (the most similar first), so a key with
/// thousands of distinct values costs one similarity pass, not thousands of fleet scans.
const CANDIDATES_PER_REQUIREMENT: usize = 5;
/// Jaro-Winkler similarity from which two spellings count as the same word mistyped.
const MIN_SIMILARITY: f64 = 0.85;

/// The correction, in `kubectl -l` syntax.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Suggestion {
    /// The requirement as written, e.g. `env=production`.
    pub replaces: String,
    /// The corrected requirement, e.g. `env=prod`.
    pub with: String,
    /// The whole corrected selector.
    pub selector: String,
    /// Clusters that satisfy the corrected requirement.
    pub carriers: usize,
    /// Clusters the corrected selector matches.
    pub clusters: usize,
}

/// Every label key of the fleet with its values and how many clusters carry each.
pub struct LabelIndex {
    keys: HashMap<String, BTreeMap<String, usize>>,
}

impl LabelIndex {
    pub fn new(clusters: &[Cluster]) -> Self {
        let mut keys: HashMap<String, BTreeMap<String, usize>> = HashMap::new();
        for c in clusters {
            for (k, v) in &c.labels {
                *keys
                    .entry(k.clone())
                    .or_default()
                    .entry(v.clone())
                    .or_default() += 1;
            }
        }
        LabelIndex { keys }
    }
}

/// The best correction of `selector`, or `None` when no single respelling makes it match.
pub fn suggest(
    selector: &Selector,
    index: &LabelIndex,
    clusters: &[Cluster],
) -> Option<Suggestion> {
    let mut best: Option<(f64, Suggestion)> = None;
    for (i, req) in selector.requirements().iter().enumerate() {
        for (score, fixed) in respellings(req, index) {
            let corrected = selector.replacing(i, fixed.clone());
            let matched = clusters
                .iter()
                .filter(|c| corrected.matches(&c.labels))
                .count();
            if matched == 0 {
                continue;
            }
            let candidate = Suggestion {
                replaces: req.to_string(),
                with: fixed.to_string(),
                selector: corrected.to_string(),
                carriers: clusters.iter().filter(|c| fixed.matches(&c.labels)).count(),
                clusters: matched,
            };
            let better = match &best {
                None => true,
                Some((s, b)) => {
                    (
                        score,
                        candidate.clusters,
                        std::cmp::Reverse(&candidate.with),
                    ) > (*s, b.clusters, std::cmp::Reverse(&b.with))
                }
            };
            if better {
                best = Some((score, candidate));
            }
        }
    }
    best.map(|(_, s)| s)
}

/// Corrected versions of one requirement, most similar first.
fn respellings(req: &Requirement, index: &LabelIndex) -> Vec<(f64, Requirement)> {
    let mut out: Vec<(f64, Requirement)> = Vec::new();
    match (req.operator, index.keys.get(&req.key)) {
        (Operator::In, Some(values)) => {
            for (slot, wrong) in req.values.iter().enumerate() {
                if values.contains_key(wrong) {
                    continue;
                }
                for right in values.keys() {
                    if let Some(score) = similarity(wrong, right) {
                        let mut fixed = req.clone();
                        fixed.values[slot] = right.clone();
                        out.push((score, fixed));
                    }
                }
            }
        }
        (Operator::In | Operator::Exists, None) => {
            for (key, values) in &index.keys {
                let Some(score) = similarity(&req.key, key) else {
                    continue;
                };
                let carried = req.operator == Operator::Exists
                    || req.values.iter().any(|v| values.contains_key(v));
                if carried {
                    let mut fixed = req.clone();
                    fixed.key = key.clone();
                    out.push((score, fixed));
                }
            }
        }
        _ => {}
    }
    out.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.to_string().cmp(&b.1.to_string()))
    });
    out.truncate(CANDIDATES_PER_REQUIREMENT);
    out
}

/// How likely `right` is what `wrong` meant (`None`: a different word). Case and the
/// separators `-`, `_`, `.` are ignored; an abbreviation (`prod` for `production`) counts;
/// spellings that differ only in their digits (`eu-west-1`, `eu-west-2`) are different names.
pub fn similarity(wrong: &str, right: &str) -> Option<f64> {
    if wrong == right {
        return None;
    }
    let (a, b) = (normalize(wrong), normalize(right));
    if a == b {
        return Some(1.0);
    }
    let letters = |s: &str| {
        s.chars()
            .filter(|c| !c.is_ascii_digit())
            .collect::<String>()
    };
    if letters(&a) == letters(&b) {
        return None;
    }
    let shorter = a.len().min(b.len());
    if shorter >= 3 && (a.starts_with(&b) || b.starts_with(&a)) {
        return Some(0.9);
    }
    let score = strsim::jaro_winkler(&a, &b);
    (score >= MIN_SIMILARITY).then_some(score)
}

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    fn cluster(name: &str, labels: &[(&str, &str)]) -> Cluster {
        Cluster::ready_sveltos("fleet", name, labels)
    }

    fn fleet() -> Vec<Cluster> {
        let mut out = Vec::new();
        for i in 0..12 {
            let tier = if i < 8 { "web" } else { "db" };
            out.push(cluster(
                &format!("prod-{i}"),
                &[("env", "prod"), ("tier", tier)],
            ));
        }
        for i in 0..3 {
            out.push(cluster(
                &format!("stg-{i}"),
                &[("env", "staging"), ("region", "eu-west-1")],
            ));
        }
        out
    }

    fn compile(labels: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>) -> Selector {
        let s = LabelSelector {
            match_labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            match_expressions: (!exprs.is_empty()).then_some(exprs),
        };
        Selector::compile(Some(&s)).unwrap()
    }

    fn run(selector: &Selector) -> Option<Suggestion> {
        let f = fleet();
        suggest(selector, &LabelIndex::new(&f), &f)
    }

    #[test]
    fn value_abbreviation_is_found_with_its_count() {
        let s = run(&compile(&[("env", "production")], vec![])).unwrap();
        assert_eq!(s.replaces, "env=production");
        assert_eq!(s.with, "env=prod");
        assert_eq!((s.carriers, s.clusters), (12, 12));
    }

    #[test]
    fn the_rest_of_the_selector_still_applies() {
        let s = run(&compile(&[("env", "prodution"), ("tier", "web")], vec![])).unwrap();
        assert_eq!(s.with, "env=prod");
        assert_eq!(s.selector, "env=prod,tier=web");
        assert_eq!((s.carriers, s.clusters), (12, 8));
    }

    #[test]
    fn key_typos_and_case() {
        let s = run(&compile(&[("Env", "staging")], vec![])).unwrap();
        assert_eq!((s.with.as_str(), s.clusters), ("env=staging", 3));
        let exists = LabelSelectorRequirement {
            key: "regoin".into(),
            operator: "Exists".into(),
            values: None,
        };
        let s = run(&compile(&[], vec![exists])).unwrap();
        assert_eq!((s.with.as_str(), s.clusters), ("region", 3));
        let in_list = LabelSelectorRequirement {
            key: "env".into(),
            operator: "In".into(),
            values: Some(vec!["qa".into(), "Staging".into()]),
        };
        let s = run(&compile(&[], vec![in_list])).unwrap();
        assert_eq!(s.with, "env in (qa,staging)");
    }

    #[test]
    fn no_suggestion_for_a_different_word_number_or_combination() {
        // Another region is not a misspelling.
        assert_eq!(run(&compile(&[("region", "eu-west-2")], vec![])), None);
        assert_eq!(run(&compile(&[("env", "dev")], vec![])), None);
        // Each label exists; they never occur together.
        assert_eq!(
            run(&compile(
                &[("env", "prod"), ("region", "eu-west-1")],
                vec![]
            )),
            None
        );
        // A correction that still matches nothing is no help.
        assert_eq!(
            run(&compile(
                &[("env", "production"), ("region", "eu-west-1")],
                vec![]
            )),
            None
        );
        let not_in = LabelSelectorRequirement {
            key: "env".into(),
            operator: "NotIn".into(),
            values: Some(vec!["prodd".into()]),
        };
        assert_eq!(run(&compile(&[("tier", "cache")], vec![not_in])), None);
    }

    #[test]
    fn similarity_rules() {
        assert_eq!(similarity("prod", "prod"), None);
        assert_eq!(similarity("Prod", "prod"), Some(1.0));
        assert_eq!(similarity("eu_west", "eu-west"), Some(1.0));
        assert_eq!(similarity("production", "prod"), Some(0.9));
        assert_eq!(similarity("eu-west-1", "eu-west-2"), None);
        assert!(similarity("stagign", "staging").is_some());
        assert_eq!(similarity("dev", "prod"), None);
        assert_eq!(similarity("qa", "ca"), None);
    }
}
