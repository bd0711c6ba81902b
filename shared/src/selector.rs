//! Label selectors: rendering in `kubectl` syntax, and matching against cluster labels the way
//! Sveltos does.
//!
//! Sveltos turns a stage's `clusterSelector` into a selector with apimachinery's
//! `metav1.LabelSelectorAsSelector` (libsveltos `lib/clusterproxy` `GetMatchingClusters`), after
//! one rule of its own: a selector without `matchLabels` and `matchExpressions` matches **no**
//! cluster (Kubernetes would match every object). [`Selector::compile`] ports that conversion,
//! including its validation (`labels.NewRequirement`): a selector Go refuses to convert matches
//! nothing, because Sveltos then creates no ClusterSummary at all.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::validation::names;

/// `env=prod,tier in (a,b),!legacy` — the form `kubectl get -l` accepts.
pub fn to_string(selector: &LabelSelector) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(labels) = &selector.match_labels {
        parts.extend(labels.iter().map(|(k, v)| format!("{k}={v}")));
    }
    for expr in selector.match_expressions.iter().flatten() {
        let values = expr.values.clone().unwrap_or_default().join(",");
        parts.push(match expr.operator.as_str() {
            "In" => format!("{} in ({values})", expr.key),
            "NotIn" => format!("{} notin ({values})", expr.key),
            "Exists" => expr.key.clone(),
            "DoesNotExist" => format!("!{}", expr.key),
            other => format!("{} {other} ({values})", expr.key),
        });
    }
    parts.join(",")
}

/// Sveltos semantics: an empty selector matches no cluster (unlike Kubernetes, where it matches
/// everything), and so does a selector Kubernetes would refuse (unknown operator, `In` without
/// values, an invalid key or value).
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    Selector::compile(Some(selector)).is_ok_and(|s| s.matches(labels))
}

/// The four operators of `metav1.LabelSelectorRequirement`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One condition on one label key. `matchLabels` entries become `In` with a single value, as
/// `LabelSelectorAsSelector` makes them `=` requirements, which match the same labels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

impl Requirement {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let current = labels.get(&self.key);
        match self.operator {
            Operator::In => current.is_some_and(|c| self.values.contains(c)),
            // A cluster without the key satisfies NotIn and DoesNotExist (`Requirement.Matches`).
            Operator::NotIn => current.is_none_or(|c| !self.values.contains(c)),
            Operator::Exists => current.is_some(),
            Operator::DoesNotExist => current.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.operator, self.values.as_slice()) {
            (Operator::In, [one]) => write!(f, "{}={one}", self.key),
            (Operator::In, values) => write!(f, "{} in ({})", self.key, values.join(",")),
            (Operator::NotIn, values) => write!(f, "{} notin ({})", self.key, values.join(",")),
            (Operator::Exists, _) => write!(f, "{}", self.key),
            (Operator::DoesNotExist, _) => write!(f, "!{}", self.key),
        }
    }
}

/// Why a stage selector matches no cluster before any cluster is looked at.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// No `clusterSelector`, or one with neither `matchLabels` nor `matchExpressions`.
    #[error("the clusterSelector is empty")]
    Empty,
    /// What `LabelSelectorAsSelector` rejects; `path` is relative to the selector.
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
}

/// A stage selector ready to match clusters: the conjunction of its requirements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Convert a stage's `clusterSelector` as Sveltos does (see the module documentation).
    pub fn compile(selector: Option<&LabelSelector>) -> Result<Selector, SelectorError> {
        let Some(selector) = selector else {
            return Err(SelectorError::Empty);
        };
        let labels = selector.match_labels.as_ref();
        let exprs = selector.match_expressions.as_deref().unwrap_or(&[]);
        if labels.is_none_or(BTreeMap::is_empty) && exprs.is_empty() {
            return Err(SelectorError::Empty);
        }
        let mut requirements = Vec::new();
        for (key, value) in labels.into_iter().flatten() {
            let path = format!("matchLabels.{key}");
            check_key(key, &path)?;
            check_value(value, &path)?;
            requirements.push(Requirement {
                key: key.clone(),
                operator: Operator::In,
                values: vec![value.clone()],
            });
        }
        for (i, expr) in exprs.iter().enumerate() {
            let path = format!("matchExpressions[{i}]");
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(invalid(
                        format!("{path}.operator"),
                        format!("{other:?} is not a valid label selector operator (In, NotIn, Exists, DoesNotExist)"),
                    ))
                }
            };
            check_key(&expr.key, &format!("{path}.key"))?;
            let values = expr.values.clone().unwrap_or_default();
            match operator {
                Operator::In | Operator::NotIn if values.is_empty() => {
                    return Err(invalid(
                        format!("{path}.values"),
                        format!("must be specified when operator is {}", expr.operator),
                    ))
                }
                Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                    return Err(invalid(
                        format!("{path}.values"),
                        format!("may not be specified when operator is {}", expr.operator),
                    ))
                }
                _ => {}
            }
            for (j, v) in values.iter().enumerate() {
                check_value(v, &format!("{path}.values[{j}]"))?;
            }
            requirements.push(Requirement {
                key: expr.key.clone(),
                operator,
                values,
            });
        }
        Ok(Selector { requirements })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// This selector with requirement `index` replaced (for "did you mean" corrections).
    pub fn replacing(&self, index: usize, requirement: Requirement) -> Selector {
        let mut requirements = self.requirements.clone();
        if let Some(slot) = requirements.get_mut(index) {
            *slot = requirement;
        }
        Selector { requirements }
    }

    /// The labels of a matching cluster that the selector looked at and found: the value of
    /// every key an `In`, `NotIn` or `Exists` requirement names (keys the cluster lacks, which
    /// `NotIn` and `DoesNotExist` accept, have no value to show).
    pub fn matched_labels(&self, labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        self.requirements
            .iter()
            .filter(|r| r.operator != Operator::DoesNotExist)
            .filter_map(|r| labels.get_key_value(&r.key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

fn invalid(path: String, reason: String) -> SelectorError {
    SelectorError::Invalid { path, reason }
}

fn check_key(key: &str, path: &str) -> Result<(), SelectorError> {
    names::qualified_name(key)
        .map_err(|e| invalid(path.to_string(), format!("label key {key:?} {e}")))
}

fn check_value(value: &str, path: &str) -> Result<(), SelectorError> {
    names::label_value(value)
        .map_err(|e| invalid(path.to_string(), format!("label value {value:?} {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| v.to_string()).collect())
            },
        }
    }

    fn exprs(list: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(list),
            match_labels: None,
        }
    }

    fn labels_selector(pairs: &[(&str, &str)]) -> LabelSelector {
        LabelSelector {
            match_labels: Some(set(pairs)),
            match_expressions: None,
        }
    }

    /// apimachinery `labels/selector_test.go` `TestRequirementSelectorMatching` (the rows that a
    /// LabelSelector can express; `Gt`/`Lt` exist only in the string syntax), plus the
    /// `TestSelectorMatches` rows written as LabelSelectors.
    #[test]
    fn semantics_table() {
        let rows: Vec<(LabelSelector, BTreeMap<String, String>, bool)> = vec![
            (
                exprs(vec![
                    expr("x", "In", &["foo"]),
                    expr("y", "NotIn", &["alpha"]),
                ]),
                set(&[("x", "foo"), ("y", "baz")]),
                true,
            ),
            (
                exprs(vec![expr("x", "In", &["foo"]), expr("y", "In", &["alpha"])]),
                set(&[("x", "foo"), ("y", "baz")]),
                false,
            ),
            // NotIn and DoesNotExist match objects without the key.
            (
                exprs(vec![expr("x", "NotIn", &[""]), expr("y", "Exists", &[])]),
                set(&[("y", "")]),
                true,
            ),
            (
                exprs(vec![
                    expr("x", "DoesNotExist", &[]),
                    expr("y", "Exists", &[]),
                ]),
                set(&[("y", "")]),
                true,
            ),
            (
                exprs(vec![
                    expr("x", "NotIn", &[""]),
                    expr("y", "DoesNotExist", &[]),
                ]),
                set(&[("y", "")]),
                false,
            ),
            (
                exprs(vec![expr("x", "In", &[""])]),
                set(&[("y", "baz")]),
                false,
            ),
            // TestSelectorMatches
            (labels_selector(&[("x", "y")]), set(&[("x", "y")]), true),
            (
                labels_selector(&[("x", "y"), ("z", "w")]),
                set(&[("x", "y"), ("z", "w")]),
                true,
            ),
            (
                exprs(vec![expr("x", "NotIn", &["y"]), expr("z", "NotIn", &["w"])]),
                set(&[("x", "z"), ("z", "a")]),
                true,
            ),
            (
                labels_selector(&[("notin", "in")]),
                set(&[("notin", "in")]),
                true,
            ),
            (
                exprs(vec![expr("x", "Exists", &[])]),
                set(&[("x", "z")]),
                true,
            ),
            (
                exprs(vec![expr("x", "DoesNotExist", &[])]),
                set(&[("y", "z")]),
                true,
            ),
            (labels_selector(&[("x", "z")]), set(&[]), false),
            (labels_selector(&[("x", "y")]), set(&[("x", "z")]), false),
            (
                labels_selector(&[("x", "y"), ("z", "w")]),
                set(&[("x", "w"), ("z", "w")]),
                false,
            ),
            (
                exprs(vec![expr("x", "NotIn", &["y"]), expr("z", "NotIn", &["w"])]),
                set(&[("x", "z"), ("z", "w")]),
                false,
            ),
            (
                exprs(vec![expr("x", "Exists", &[])]),
                set(&[("y", "z")]),
                false,
            ),
            (
                exprs(vec![expr("x", "DoesNotExist", &[])]),
                set(&[("x", "z")]),
                false,
            ),
            (
                labels_selector(&[("foo", "bar"), ("foobar", "bar"), ("baz", "blah")]),
                set(&[("foo", "bar"), ("baz", "blah")]),
                false,
            ),
            // matchLabels and matchExpressions are ANDed.
            (
                LabelSelector {
                    match_labels: Some(set(&[("env", "prod")])),
                    match_expressions: Some(vec![expr("region", "In", &["eu", "us"])]),
                },
                set(&[("env", "prod"), ("region", "us")]),
                true,
            ),
            (
                LabelSelector {
                    match_labels: Some(set(&[("env", "prod")])),
                    match_expressions: Some(vec![expr("region", "In", &["eu", "us"])]),
                },
                set(&[("env", "prod"), ("region", "ap")]),
                false,
            ),
        ];
        for (i, (selector, labels, want)) in rows.iter().enumerate() {
            assert_eq!(
                matches(selector, labels),
                *want,
                "row {i}: {} against {labels:?}",
                to_string(selector)
            );
        }
    }

    /// Sveltos `GetMatchingClusters`: an empty selector matches no cluster, not every cluster.
    #[test]
    fn empty_selectors_match_nothing() {
        let anything = set(&[("env", "prod")]);
        assert_eq!(Selector::compile(None), Err(SelectorError::Empty));
        let empty = LabelSelector::default();
        assert_eq!(Selector::compile(Some(&empty)), Err(SelectorError::Empty));
        let empty_lists = LabelSelector {
            match_labels: Some(BTreeMap::new()),
            match_expressions: Some(Vec::new()),
        };
        assert_eq!(
            Selector::compile(Some(&empty_lists)),
            Err(SelectorError::Empty)
        );
        assert!(!matches(&empty, &anything));
    }

    /// apimachinery `TestRequirementConstructor` and `TestLabelSelectorAsSelector`: what Go
    /// refuses to convert (and Sveltos therefore matches with nothing).
    #[test]
    fn invalid_selectors_are_refused_and_match_nothing() {
        let cases: Vec<(LabelSelector, &str)> = vec![
            (
                exprs(vec![expr("x", "In", &[])]),
                "matchExpressions[0].values",
            ),
            (
                exprs(vec![expr("x", "NotIn", &[])]),
                "matchExpressions[0].values",
            ),
            (
                exprs(vec![expr("baz", "Exists", &["qux", "norf"])]),
                "matchExpressions[0].values",
            ),
            (
                exprs(vec![expr("baz", "DoesNotExist", &["qux"])]),
                "matchExpressions[0].values",
            ),
            (
                exprs(vec![expr(&"a".repeat(254), "Exists", &[])]),
                "matchExpressions[0].key",
            ),
            (
                exprs(vec![expr("x", "in", &["a"])]),
                "matchExpressions[0].operator",
            ),
            (
                exprs(vec![expr("x", "Gt", &["1"])]),
                "matchExpressions[0].operator",
            ),
            (labels_selector(&[("env", "prod east")]), "matchLabels.env"),
            (labels_selector(&[("bad key", "x")]), "matchLabels.bad key"),
            (
                exprs(vec![
                    expr("x", "DoesNotExist", &[]),
                    expr("y", "In", &["ok", "-no"]),
                ]),
                "matchExpressions[1].values[1]",
            ),
        ];
        for (selector, path) in cases {
            match Selector::compile(Some(&selector)) {
                Err(SelectorError::Invalid { path: p, .. }) => {
                    assert_eq!(p, path, "{}", to_string(&selector))
                }
                other => panic!("{}: {other:?}", to_string(&selector)),
            }
            // A DoesNotExist that would match everything still matches nothing once refused.
            assert!(!matches(&selector, &set(&[])));
            assert!(!matches(&selector, &set(&[("x", "a"), ("y", "ok")])));
        }
        // Valid keys and values from `TestRequirementConstructor`.
        for key in [
            "1foo",
            "1234",
            "this-is-a-dns.domain.com/key-with-dash",
            "0.1.2.domain/99",
        ] {
            assert!(Selector::compile(Some(&exprs(vec![expr(key, "In", &["bar"])]))).is_ok());
        }
    }

    #[test]
    fn renders_in_kubectl_syntax_and_reports_matched_labels() {
        let selector = LabelSelector {
            match_labels: Some(set(&[("env", "prod")])),
            match_expressions: Some(vec![
                expr("region", "In", &["eu", "us"]),
                expr("legacy", "DoesNotExist", &[]),
                expr("ring", "NotIn", &["canary"]),
                expr("team", "Exists", &[]),
            ]),
        };
        let s = Selector::compile(Some(&selector)).unwrap();
        assert_eq!(
            s.to_string(),
            "env=prod,region in (eu,us),!legacy,ring notin (canary),team"
        );
        let labels = set(&[
            ("env", "prod"),
            ("region", "eu"),
            ("team", "a"),
            ("other", "x"),
        ]);
        assert!(s.matches(&labels));
        assert_eq!(
            s.matched_labels(&labels),
            set(&[("env", "prod"), ("region", "eu"), ("team", "a")])
        );
    }
}
