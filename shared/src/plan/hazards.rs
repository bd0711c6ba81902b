//! What will go wrong in a rollout before it runs, each with a stable code, the stages and
//! clusters involved, and the consequence in words. The upstream behaviour each message states
//! is referenced in `plugin/docs/plan.md`.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::suggest::{self, LabelIndex, Suggestion};
use crate::fleet::{Cluster, ClusterType};
use crate::model::ClusterPromotion;
use crate::selector::{Selector, SelectorError};
use crate::validation::{last_stage_window_note, PreviousGate};

/// Clusters named in a message before "and N more" (the `clusters` field lists them all).
const NAMED_IN_MESSAGE: usize = 3;
/// `profileSpec.tier` when absent (the CRD default).
const DEFAULT_TIER: i64 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HazardCode {
    /// The stage passes at once and the pipeline moves on.
    StageMatchesNoCluster,
    /// A respelling of one label key or value would make the empty stage match.
    SelectorTypo,
    /// Clusters reached by more than one stage.
    ClusterInSeveralStages,
    /// Paused clusters hold the stage.
    ClusterPaused,
    /// Clusters that are not ready are skipped by Sveltos.
    ClusterNotReady,
    /// A `promotionWindow` on the last stage holds back only the promotion's completion.
    LastStageWindow,
}

impl HazardCode {
    pub fn as_str(self) -> &'static str {
        match self {
            HazardCode::StageMatchesNoCluster => "stage-matches-no-cluster",
            HazardCode::SelectorTypo => "selector-typo",
            HazardCode::ClusterInSeveralStages => "cluster-in-several-stages",
            HazardCode::ClusterPaused => "cluster-paused",
            HazardCode::ClusterNotReady => "cluster-not-ready",
            HazardCode::LastStageWindow => "last-stage-window",
        }
    }
}

impl fmt::Display for HazardCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hazard {
    pub code: HazardCode,
    pub stages: Vec<String>,
    /// `namespace/name` of every cluster involved.
    pub clusters: Vec<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<Suggestion>,
}

/// What the plan computed, for the hazard rules to read.
pub(super) struct Facts<'a> {
    pub promotion: &'a ClusterPromotion,
    pub clusters: &'a [Cluster],
    pub selectors: &'a [Result<Selector, SelectorError>],
    /// Per stage, the clusters it matches (indices into `clusters`, in plan order).
    pub members: &'a [Vec<usize>],
    /// Per cluster, the stages that match it, in pipeline order.
    pub stages_of: &'a [Vec<usize>],
    /// Cluster indices in plan order.
    pub order: &'a [usize],
}

pub(super) fn find(f: &Facts) -> Vec<Hazard> {
    let stage_names: Vec<&str> = f
        .promotion
        .spec
        .stages
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    let overlaps = overlapping_groups(f);
    let mut index: Option<LabelIndex> = None;
    let mut out = Vec::new();
    for (s, name) in stage_names.iter().enumerate() {
        let members = &f.members[s];
        if members.is_empty() {
            out.push(no_cluster(f, s, &stage_names));
            if let Some(Ok(selector)) = f.selectors.get(s) {
                let index = index.get_or_insert_with(|| LabelIndex::new(f.clusters));
                if let Some(fix) = suggest::suggest(selector, index, f.clusters) {
                    out.push(typo(name, selector, fix));
                }
            }
            continue;
        }
        let paused: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&c| f.clusters[c].paused)
            .collect();
        if !paused.is_empty() {
            out.push(paused_hazard(f, name, members.len(), &paused));
        }
        let not_ready: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&c| !f.clusters[c].ready)
            .collect();
        if !not_ready.is_empty() {
            out.push(not_ready_hazard(f, name, members.len(), &not_ready));
        }
        for (stages, clusters) in overlaps.iter().filter(|(st, _)| st[0] == s) {
            out.push(several_stages(f, &stage_names, stages, clusters));
        }
    }
    // It concerns the last stage, so it comes last in stage order whatever the fleet.
    out.extend(last_stage_window(f.promotion));
    out
}

/// A `promotionWindow` on the last stage: it does not hold back that stage's deployment, only
/// the promotion's completion (the same words as lint's info `trigger-last-stage-window`).
fn last_stage_window(promotion: &ClusterPromotion) -> Option<Hazard> {
    let stages = &promotion.spec.stages;
    let last = stages.len().checked_sub(1)?;
    let stage = &stages[last];
    let window = stage
        .trigger
        .as_ref()?
        .auto
        .as_ref()?
        .promotion_window
        .as_ref()?;
    let previous = match last.checked_sub(1).map(|i| &stages[i]) {
        None => PreviousGate::None,
        Some(before) if before.trigger.as_ref().is_some_and(|t| t.manual.is_some()) => {
            PreviousGate::Manual(&before.name)
        }
        Some(before) => PreviousGate::Auto(&before.name),
    };
    Some(Hazard {
        code: HazardCode::LastStageWindow,
        stages: vec![stage.name.clone()],
        clusters: Vec::new(),
        message: last_stage_window_note(
            &stage.name,
            &window.from,
            &window.to,
            previous,
            last.saturating_sub(1),
        ),
        suggestion: None,
    })
}

/// Clusters matched by two or more stages, grouped by the exact set of stages (so a thousand
/// clusters of one overlap make one hazard), ordered by their stages.
fn overlapping_groups(f: &Facts) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut groups: HashMap<&[usize], Vec<usize>> = HashMap::new();
    for &c in f.order {
        let stages = f.stages_of[c].as_slice();
        if stages.len() > 1 {
            groups.entry(stages).or_default().push(c);
        }
    }
    let mut out: Vec<(Vec<usize>, Vec<usize>)> =
        groups.into_iter().map(|(k, v)| (k.to_vec(), v)).collect();
    out.sort();
    out
}

fn ids(f: &Facts, clusters: &[usize]) -> Vec<String> {
    clusters.iter().map(|&c| f.clusters[c].id()).collect()
}

/// `prod/a, prod/b, prod/c and 9 more`.
fn named(ids: &[String]) -> String {
    let shown: Vec<&str> = ids
        .iter()
        .take(NAMED_IN_MESSAGE)
        .map(String::as_str)
        .collect();
    match ids.len().saturating_sub(NAMED_IN_MESSAGE) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// "1 cluster", "2 clusters".
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn no_cluster(f: &Facts, s: usize, stage_names: &[&str]) -> Hazard {
    let name = stage_names[s];
    let stage = &f.promotion.spec.stages[s];
    let then = match stage_names.get(s + 1) {
        Some(next) => format!(
            "the pipeline moves on to {next} as soon as the trigger allows, with nothing \
             deployed at this stage"
        ),
        None => "the rollout completes without deploying anything at this stage".to_string(),
    };
    let consequence = format!(
        "Sveltos creates no ClusterSummary for it and counts it as deployed at once (\"No \
         matching clusters found … Deployment considered complete\"), so {then}"
    );
    let message = match f.selectors.get(s) {
        Some(Err(SelectorError::Empty)) => format!(
            "stage {name} has no clusterSelector (or an empty one), which Sveltos matches to no \
             cluster: {consequence}"
        ),
        Some(Err(SelectorError::Invalid { path, reason })) => format!(
            "stage {name}: clusterSelector.{path} {reason}, so Sveltos cannot convert the \
             selector and matches no cluster: {consequence}"
        ),
        _ => format!(
            "stage {name} matches no cluster (selector {}): {consequence}",
            stage
                .cluster_selector
                .as_ref()
                .map(crate::selector::to_string)
                .unwrap_or_default()
        ),
    };
    Hazard {
        code: HazardCode::StageMatchesNoCluster,
        stages: vec![name.to_string()],
        clusters: Vec::new(),
        message,
        suggestion: None,
    }
}

fn typo(stage: &str, selector: &Selector, fix: Suggestion) -> Hazard {
    let mut message = format!(
        "stage {stage} matches no cluster: did you mean {} instead of {}? {} it",
        fix.with,
        fix.replaces,
        plural(fix.carriers, "cluster carries", "clusters carry"),
    );
    if selector.requirements().len() > 1 {
        message.push_str(&format!(
            ", and the corrected selector {} reaches {}",
            fix.selector,
            plural(fix.clusters, "cluster", "clusters")
        ));
    }
    Hazard {
        code: HazardCode::SelectorTypo,
        stages: vec![stage.to_string()],
        clusters: Vec::new(),
        message,
        suggestion: Some(fix),
    }
}

fn paused_hazard(f: &Facts, stage: &str, total: usize, paused: &[usize]) -> Hazard {
    let list = ids(f, paused);
    let one = paused.len() == 1;
    let message = format!(
        "{} of stage {stage}'s {} {} paused ({}): Sveltos creates {} but deploys nothing to a \
         paused cluster, so stage {stage} is not provisioned, and the pipeline does not move past \
         it, until {} unpaused",
        paused.len(),
        plural(total, "cluster", "clusters"),
        if one { "is" } else { "are" },
        named(&list),
        if one {
            "its ClusterSummary"
        } else {
            "their ClusterSummaries"
        },
        if one { "it is" } else { "they are" },
    );
    Hazard {
        code: HazardCode::ClusterPaused,
        stages: vec![stage.to_string()],
        clusters: list,
        message,
        suggestion: None,
    }
}

fn not_ready_hazard(f: &Facts, stage: &str, total: usize, not_ready: &[usize]) -> Hazard {
    let list = ids(f, not_ready);
    let types: Vec<ClusterType> = not_ready
        .iter()
        .map(|&c| f.clusters[c].cluster_type)
        .collect();
    let what = match (
        types.contains(&ClusterType::Sveltos),
        types.contains(&ClusterType::Capi),
    ) {
        (true, false) => "SveltosCluster status.ready is not true",
        (false, true) => "the Cluster API control plane is not initialized",
        _ => {
            "SveltosCluster status.ready is not true, or the Cluster API control plane is not \
             initialized"
        }
    };
    let one = not_ready.len() == 1;
    let mut message = format!(
        "{} of stage {stage}'s {} {} not ready ({}; {what}): Sveltos neither matches nor deploys \
         to a cluster that is not ready, so unless {} ready first, stage {stage} goes ahead \
         without {} and {} the change only once {} ready",
        not_ready.len(),
        plural(total, "cluster", "clusters"),
        if one { "is" } else { "are" },
        named(&list),
        if one { "it becomes" } else { "they become" },
        if one { "it" } else { "them" },
        if one { "it receives" } else { "they receive" },
        if one { "it is" } else { "they are" },
    );
    if not_ready.len() == total {
        message.push_str(
            "; with none of its clusters ready, the stage would count as deployed at once",
        );
    }
    Hazard {
        code: HazardCode::ClusterNotReady,
        stages: vec![stage.to_string()],
        clusters: list,
        message,
        suggestion: None,
    }
}

fn several_stages(f: &Facts, stage_names: &[&str], stages: &[usize], clusters: &[usize]) -> Hazard {
    let list = ids(f, clusters);
    let names: Vec<&str> = stages.iter().map(|&s| stage_names[s]).collect();
    let first = names[0];
    let later = &names[1..];
    let spec = f.promotion.spec.profile_spec.as_ref();
    let non_empty = |v: Option<&Vec<Value>>| v.is_some_and(|l| !l.is_empty());
    let helm = spec.is_some_and(|p| non_empty(p.helm_charts.as_ref()));
    let resources = spec.is_some_and(|p| {
        non_empty(p.policy_refs.as_ref()) || non_empty(p.kustomization_refs.as_ref())
    });
    let tier = spec
        .and_then(|p| p.extra.get("tier"))
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_TIER);
    let owned = match (helm, resources) {
        (true, true) => "the Helm releases and resources",
        (true, false) => "the Helm releases",
        (false, true) => "the resources",
        (false, false) => "",
    };
    let verb = if clusters.len() == 1 { "is" } else { "are" };
    let they = if clusters.len() == 1 { "it" } else { "them" };
    let targets = if later.len() == 1 {
        format!("The ClusterProfile of {} also targets {they}", later[0])
    } else {
        format!(
            "The ClusterProfiles of {} also target {they}",
            and_list(later)
        )
    };
    let receive = if clusters.len() == 1 {
        "it receives"
    } else {
        "they receive"
    };
    let mut message = format!(
        "{} ({}) {verb} selected by stages {}: {receive} the change at {first}, the first of \
         them. {targets}",
        plural(clusters.len(), "cluster", "clusters"),
        named(&list),
        and_list(&names),
    );
    if owned.is_empty() {
        message.push_str(" (the profile deploys no Helm chart or resource, so nothing conflicts)");
    } else {
        let helm_detail = if helm {
            " (Helm: FailedNonRetriable \"cannot manage chart …\")"
        } else {
            ""
        };
        message.push_str(&format!(
            ": every stage profile has the same tier ({tier}), and at the same tier the profile \
             that deployed first keeps {owned}, so the later ClusterSummaries for {they} report a \
             conflict{helm_detail} and {} never counts as provisioned: the pipeline stalls there",
            later[0]
        ));
    }
    Hazard {
        code: HazardCode::ClusterInSeveralStages,
        stages: names.iter().map(|s| s.to_string()).collect(),
        clusters: list,
        message,
        suggestion: None,
    }
}
