//! One promotion's objects (a ClusterPromotion with any status, ClusterProfiles,
//! ClusterSummaries, Events; [`input`]) through the code that builds `describe`'s view and
//! `list`'s row, with their invariants checked: the entry point of the cargo-fuzz target `view`
//! (`fuzz/`) and of the bounded run in `tests/fuzz_bounded_view.rs`.
//!
//! The objects go through the four ways the plugin describes a promotion: `describe NAME` (every
//! list as read), `describe -f` (offline), `list --watch` (no Events) and `list` (only the
//! ClusterSummaries of each promotion's frontier stage). Invariants (a violation panics with a
//! description, which is what fuzzers report):
//! - nothing panics; building the view fails exactly when the object does not deserialize into
//!   the ClusterPromotion model, and then with an error that names the field;
//! - every stage of `spec.stages` appears once in the description, at its own position, in spec
//!   order, with its own name and its successor. "Once" is per entry of `spec.stages`: when two
//!   entries share a name (the API server refuses that; `describe -f` can still see it), each
//!   entry keeps its place, only the first can have been reached (Sveltos finds a stage's status,
//!   ClusterProfile and clusters by name, so they are the first entry's), and a warning says so;
//! - the stage states, approvals, the gate offered and the phase agree with [`oracle`], a naive
//!   re-derivation from the raw JSON written from `examples/STATES.md` and
//!   `docs/reference/sveltos-clusterpromotion.md` (not from `view/` or `promotion_shared::pipeline`),
//!   wherever those documents decide; `list`'s count of reached stages is the oracle's;
//! - the view agrees with itself: a promoted stage's successor is reached, and so is the stage
//!   after a gate whose approval is shown as used; "complete" only when the last stage is,
//!   "failed", "degraded" and "blocked" only with a stage in that state;
//! - a stale status (Sveltos has not picked up the change) is said, in `list`'s row too, and
//!   never offers an approval; an approval is offered only on a stage awaiting it behind a
//!   manual gate, and `list`'s gate is `describe`'s;
//! - a failed stage has a failed cluster; cluster counts add up; without cluster data no
//!   cluster is claimed; the Events shown are those read; a list that could not be read is a
//!   warning, and every warning is about something read;
//! - `list --watch`'s row is `describe`'s row; `list`'s row (fewer ClusterSummaries) has the
//!   same current stage, and is the same row whenever the status is one Sveltos writes (its
//!   stages a prefix of the spec's, names unique), since a stage's state depends on its own
//!   clusters only;
//! - the text view has each stage's block, in order; `-o json` parses back to the model and
//!   `-o yaml` reads back as the same value (the online view's; the offline one's is only
//!   written); `list`'s table and wide table render, its JSON and YAML read back as the rows.

pub mod cluster;
pub mod input;
pub mod oracle;
pub mod promotion;

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::Value;

use promotion_manifest::parse_documents;
use promotion_shared::model::ClusterPromotion;
use promotion_shared::pipeline::{Approval, Phase, StageState, TriggerKind};

use crate::commands::list::{self, Row};
use crate::render::describe::{render, Options};
use crate::render::output;
use crate::render::printers::{OutputFormat, PrintOptions};
use crate::render::Style;
use crate::view::{shared, Description, SnapshotRef};
use input::{decode, Form};

/// The time the views are rendered at (the generated times lie around it).
pub const NOW: &str = "2026-02-16T08:00:00Z";

/// What happened to one input, for the statistics of the bounded run.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// `None`: text starting with `{` that is not JSON, so no input.
    pub form: Option<Form>,
    /// The view was built (the object fits the model).
    pub built: bool,
    pub has_status: bool,
    pub phase: Option<Phase>,
    /// Why the status is stale, when it is.
    pub stale: Option<String>,
    pub duplicate_names: bool,
    /// The status is one Sveltos writes: a prefix of the spec's stages, names unique.
    pub sveltos_shaped: bool,
    pub reached: usize,
    pub clusters: usize,
    pub failed_clusters: usize,
    pub taken_profiles: usize,
    pub awaiting_approval: bool,
    pub warnings: usize,
    /// [`oracle`] decided the state of a reached stage that is not promoted (the frontier).
    pub oracle_frontier: bool,
    /// [`oracle`] decided the phase of a status that is not empty.
    pub oracle_phase: bool,
}

/// Describe and list the promotion in `bytes` every way the plugin does, checking every
/// invariant.
pub fn describe_and_check(bytes: &[u8]) -> Outcome {
    let Some(input) = decode(bytes) else {
        return Outcome::default();
    };
    let mut outcome = Outcome {
        form: Some(input.form),
        ..Outcome::default()
    };
    let online = SnapshotRef {
        object: &input.object,
        profiles: shared(&input.profiles),
        summaries: shared(&input.summaries),
        events: shared(&input.events),
        owners: &crate::view::Owners::default(),
    };
    let typed = serde_json::from_value::<ClusterPromotion>(input.object.clone());
    let (promotion, described) = match (typed, Description::build_shared(online)) {
        (Ok(promotion), Ok(d)) => (promotion, d),
        (Err(_), Err(e)) => {
            let message = e.to_string();
            let field = message
                .split_once("does not match the ClusterPromotion schema: ")
                .map(|(_, rest)| rest);
            assert!(
                field.is_some_and(|f| {
                    [".", "apiVersion", "kind", "metadata", "spec", "status"]
                        .iter()
                        .any(|top| f.starts_with(top))
                }),
                "an error that does not say which field is wrong: {message}"
            );
            return outcome;
        }
        (Err(e), Ok(_)) => panic!("a view of an object the model refuses ({e})"),
        (Ok(_), Err(e)) => panic!("no view of an object the model reads: {e}"),
    };
    check(&promotion, online, &described);
    record(&mut outcome, &promotion, &described);
    let expected = oracle::expect(online.object, online.profiles.ok(), online.summaries.ok());
    outcome.oracle_frontier = expected
        .stages
        .iter()
        .any(|s| s.reached && !matches!(s.state, None | Some(oracle::State::Promoted)));
    outcome.oracle_phase = expected.has_status && expected.phase.is_some();
    outcome.built = true;

    let offline = SnapshotRef {
        object: &input.object,
        profiles: Err(""),
        summaries: Err(""),
        events: Err(""),
        owners: &crate::view::Owners::default(),
    };
    let offline_view = Description::build_shared(offline).expect("the online view was built");
    check(&promotion, offline, &offline_view);

    let row = list::row(&described);
    check_row(&row, &described, &input.object);
    let fleet = SnapshotRef {
        events: Err(""),
        ..online
    };
    let fleet = Description::build_shared(fleet).expect("the online view was built");
    assert_eq!(
        list::row(&fleet),
        row,
        "`list --watch` and `describe` disagree"
    );

    let frontier = frontier_summaries(&promotion, &input.summaries);
    let listed = SnapshotRef {
        summaries: shared(&frontier),
        events: Err(""),
        ..online
    };
    let listed = list::row(&Description::build_shared(listed).expect("the online view was built"));
    assert_eq!(
        listed.current_stage, row.current_stage,
        "`list` and `describe` disagree"
    );
    if outcome.sveltos_shaped {
        assert_eq!(
            listed, row,
            "`list` (frontier clusters only) and `describe` disagree"
        );
    }

    // Reading YAML back costs more than all the rest; the offline view's YAML is only written.
    check_rendering(&described, true);
    check_rendering(&offline_view, false);
    check_list_rendering(&[row, listed]);
    outcome
}

fn record(outcome: &mut Outcome, promotion: &ClusterPromotion, d: &Description) {
    let names: Vec<&str> = promotion
        .spec
        .stages
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    let reached: Vec<&str> = promotion
        .stage_statuses()
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    outcome.has_status = !reached.is_empty();
    outcome.duplicate_names = unique.len() < names.len();
    outcome.sveltos_shaped = !outcome.duplicate_names && names.starts_with(&reached);
    outcome.phase = Some(d.phase.clone());
    outcome.stale = d.stale.clone();
    outcome.reached = d
        .stages
        .iter()
        .filter(|s| s.view.state != StageState::NotStarted)
        .count();
    for s in &d.stages {
        if let Some(c) = &s.cluster_counts {
            outcome.clusters += c.total;
            outcome.failed_clusters += c.failed;
        }
        outcome.taken_profiles += usize::from(s.cluster_profile_taken.is_some());
    }
    outcome.awaiting_approval = d.awaiting_approval.is_some();
    outcome.warnings = d.warnings.len();
}

/// The invariants of the description `d` of `promotion`, built from `snap`.
fn check(promotion: &ClusterPromotion, snap: SnapshotRef<'_>, d: &Description) {
    let online = !matches!((snap.profiles, snap.summaries), (Err(""), Err("")));
    let clusters_known = snap.profiles.is_ok() && snap.summaries.is_ok();
    let spec = &promotion.spec.stages;
    assert_eq!(d.name, promotion.name());
    assert_eq!(
        d.stages.len(),
        spec.len(),
        "{} stages in the spec, {} in the view",
        spec.len(),
        d.stages.len()
    );
    oracle::check(snap, d);
    for (i, (stage, detail)) in spec.iter().zip(&d.stages).enumerate() {
        let v = &detail.view;
        assert_eq!(
            (v.index, v.name.as_str()),
            (i, stage.name.as_str()),
            "stage {i}"
        );
        assert_eq!(
            v.next_stage.as_deref(),
            spec.get(i + 1).map(|s| s.name.as_str()),
            "successor of stage {i}"
        );
        let reached = v.state != StageState::NotStarted;
        let next_reached = d
            .stages
            .get(i + 1)
            .is_some_and(|n| n.view.state != StageState::NotStarted);
        if v.state == StageState::Promoted {
            assert!(next_reached, "stage {i} promoted to a stage not reached");
        }
        if v.approval == Approval::Consumed {
            let used = match spec.get(i + 1) {
                Some(_) => next_reached,
                None => reached,
            };
            assert!(
                used,
                "stage {i}'s approval used, but its stage was not left"
            );
        }
        if let StageState::Failed { .. } = v.state {
            // A failed cluster says so, or the stage's ClusterProfile is another's.
            let failed = detail.cluster_counts.as_ref().map_or(0, |c| c.failed);
            assert!(
                failed > 0 || detail.cluster_profile_taken.is_some(),
                "stage {i} failed without a failed cluster or a taken profile: {detail:?}"
            );
        }
        if let Some(c) = &detail.cluster_counts {
            assert_eq!(c.provisioned + c.failed + c.pending, c.total, "{c:?}");
            assert!(c.without_summary <= c.pending, "{c:?}");
        }
        assert!(
            detail.cluster_profile.is_none() || detail.cluster_profile_taken.is_none(),
            "stage {i}'s profile both belongs to the promotion and is taken: {detail:?}"
        );
        if detail.approve_unblocks.is_some() {
            assert_eq!(v.state, StageState::AwaitingApproval, "stage {i}");
            assert!(
                matches!(v.trigger.kind, TriggerKind::Manual | TriggerKind::Both),
                "an approval offered on stage {i} without a manual trigger"
            );
        }
        if !clusters_known {
            assert!(
                v.clusters.is_none() && detail.cluster_counts.is_none(),
                "clusters shown without both their profiles and summaries read"
            );
        }
    }

    let states = || d.stages.iter().map(|s| &s.view.state);
    // A pause hides the phase the stages show; every rule below holds for that phase.
    let annotated = promotion_shared::pause::paused(snap.object);
    assert_eq!(
        d.paused.as_ref().map(|p| &p.pause),
        annotated.as_ref(),
        "the pause shown and the annotations"
    );
    if let Some(p) = &d.paused {
        assert_eq!(
            d.phase == Phase::Paused,
            d.deleting.is_none(),
            "paused is the phase exactly when not being deleted"
        );
        assert!(
            !matches!(p.stages_phase, Phase::Paused),
            "the phase beneath the pause is the stages'"
        );
        assert!(
            d.next_step.as_deref().is_some_and(|s| d.deleting.is_some()
                || s.starts_with(&format!("kubectl promotion resume {}", d.name))),
            "a paused promotion whose next step is not its resume: {:?}",
            d.next_step
        );
    }
    let phase = d.paused.as_ref().map_or(&d.phase, |p| &p.stages_phase);
    match phase {
        Phase::Complete => assert!(
            d.stages
                .last()
                .is_some_and(|s| s.view.state == StageState::Complete),
            "complete, but the last stage is not"
        ),
        Phase::Failed => assert!(
            states().any(|s| matches!(
                s,
                StageState::Failed {
                    retriable: false,
                    ..
                }
            )),
            "failed without a stage failed for good"
        ),
        Phase::Degraded => assert!(
            states().any(|s| matches!(s, StageState::Failed { .. })),
            "degraded without a failed stage"
        ),
        Phase::Blocked => assert!(
            states().any(|s| matches!(s, StageState::Blocked { .. })),
            "blocked without a blocked stage"
        ),
        Phase::AwaitingApproval => assert!(d.awaiting_approval.is_some()),
        Phase::Stale => assert!(d.stale.is_some(), "stale without a reason"),
        Phase::Deleting => assert!(
            d.deleting.is_some() && d.awaiting_approval.is_none(),
            "deleting without a deletion time, or with a gate awaiting approval"
        ),
        Phase::NotStarted | Phase::Progressing => {}
        Phase::Paused => assert!(d.paused.is_some(), "paused without the pause annotation"),
        Phase::Aborted | Phase::RollingBack | Phase::RolledBack => assert!(
            promotion_shared::abort::aborted(snap.object).is_some(),
            "aborted without the abort annotation"
        ),
        Phase::Unknown => assert!(
            online && !clusters_known,
            "unknown with the clusters known, or offline"
        ),
    }
    if d.stale.is_some() {
        assert!(
            matches!(phase, Phase::Stale | Phase::Blocked),
            "a stale status in phase {phase:?}"
        );
        assert!(
            d.awaiting_approval.is_none(),
            "an approval offered on a stale status"
        );
        assert!(d.stages.iter().all(|s| s.approve_unblocks.is_none()));
    }
    let gate = d.stages.iter().find(|s| s.approve_unblocks.is_some());
    assert_eq!(
        d.awaiting_approval.as_deref(),
        gate.map(|s| s.view.name.as_str()),
        "the stage awaiting approval and the one offered"
    );
    assert_eq!(d.online, online);
    assert_eq!(
        d.events.as_ref().map(Vec::len),
        snap.events.ok().map(<[Value]>::len),
        "Events shown and read"
    );
    for (what, read) in [
        ("ClusterProfiles", snap.profiles.err()),
        ("ClusterSummaries", snap.summaries.err()),
        ("Events", snap.events.err()),
    ] {
        let said = d.warnings.iter().any(|w| w.starts_with(what));
        let unreadable = read.is_some_and(|why| !why.is_empty());
        assert_eq!(said, unreadable, "{what} ({read:?}): {:?}", d.warnings);
    }
    for w in &d.warnings {
        assert!(
            [
                "ClusterProfiles: ",
                "ClusterSummaries: ",
                "Events: ",
                "annotation ",
                "spec.stages["
            ]
            .iter()
            .any(|p| w.starts_with(p)),
            "a warning about something not read: {w}"
        );
    }
}

fn check_row(row: &Row, d: &Description, object: &Value) {
    assert_eq!(row.name, d.name);
    assert_eq!(row.phase, d.phase);
    assert_eq!(row.current_stage, d.current_stage);
    assert_eq!(row.stages, d.stages.len());
    assert_eq!(
        row.reached_stages,
        oracle::reached_stages(object),
        "oracle: `list`'s reached stages"
    );
    assert_eq!(row.awaiting_approval, d.awaiting_approval);
    let offered = d.stages.iter().find_map(|s| s.approve_unblocks.as_ref());
    assert_eq!(row.approve_unblocks.as_ref(), offered, "`list`'s gate");
    if let Some(stale) = &d.stale {
        assert!(
            row.message
                .as_deref()
                .is_some_and(|m| m.contains(stale.as_str())),
            "the row hides that the status is stale: {row:?}"
        );
    }
}

/// The ClusterSummaries `list` reads for a promotion: those of its frontier stage's profile.
fn frontier_summaries(
    promotion: &ClusterPromotion,
    summaries: &Result<Vec<Value>, String>,
) -> Result<Vec<Value>, String> {
    let Some(stage) = promotion.stage_statuses().last().map(|s| &s.name) else {
        return Ok(Vec::new());
    };
    if !promotion.spec.stages.iter().any(|s| &s.name == stage) {
        return Ok(Vec::new());
    }
    // The stage's ClusterProfile is `<promotion>-<stage>` (sveltos-clusterpromotion.md §3.2),
    // and its ClusterSummaries carry its name in this label (§4).
    let profile = format!("{}-{stage}", promotion.name());
    let label = "projectsveltos.io/cluster-profile-name";
    summaries.clone().map(|all| {
        all.into_iter()
            .filter(|s| {
                s.pointer("/metadata/labels")
                    .and_then(|l| l.get(label))
                    .and_then(Value::as_str)
                    == Some(profile.as_str())
            })
            .collect()
    })
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(NOW)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

fn check_rendering(d: &Description, read_yaml_back: bool) {
    let plain = render(
        d,
        &Style { color: false },
        &Options {
            all_clusters: false,
            now: now(),
        },
    );
    // Each stage's block starts with its number, name and state, in spec order.
    let mut from = 0;
    for s in &d.stages {
        let head = format!(
            "\n  {}. {}  {}\n",
            s.view.index + 1,
            s.view.name,
            s.view.state.label()
        );
        let Some(at) = plain[from..].find(&head) else {
            panic!(
                "the block of stage {} is missing or out of order:\n{plain}",
                s.view.index
            );
        };
        from += at + head.len() - 1;
    }
    render(
        d,
        &Style { color: true },
        &Options {
            all_clusters: true,
            now: now(),
        },
    );

    let model = serde_json::to_value(d).expect("the model serializes");
    let json = output::to_json(d).expect("-o json");
    let parsed: Value = serde_json::from_str(&json).expect("-o json parses");
    assert_eq!(parsed, model, "-o json");
    assert_eq!(
        parsed["stages"].as_array().map(Vec::len),
        Some(d.stages.len())
    );
    let yaml = output::to_yaml(d).expect("-o yaml");
    if !read_yaml_back {
        return;
    }
    assert_eq!(
        read_yaml(&yaml),
        model,
        "-o yaml reads back as another value:\n{yaml}"
    );
}

fn check_list_rendering(rows: &[Row]) {
    let options = PrintOptions::default();
    let style = Style { color: false };
    for format in [OutputFormat::Default, OutputFormat::Wide] {
        let table = list::render(rows, &format, options, &style, now()).expect("a table");
        assert!(table.starts_with("NAME "), "{table}");
    }
    let json = list::render(rows, &OutputFormat::Json, options, &style, now()).expect("-o json");
    let parsed: Value = serde_json::from_str(&json).expect("list -o json parses");
    let items = serde_json::to_value(rows).expect("rows serialize");
    assert_eq!(parsed["items"], items, "list -o json");
    let yaml = list::render(rows, &OutputFormat::Yaml, options, &style, now()).expect("-o yaml");
    let read = read_yaml(&yaml);
    assert_eq!(
        read["items"], items,
        "list -o yaml reads back as another value:\n{yaml}"
    );
}

/// `-o yaml` output read as kubectl reads YAML (sigs.k8s.io/yaml: go-yaml v2's scalars, where an
/// unquoted `on` is a boolean), with the reader `lint` uses for manifests.
fn read_yaml(yaml: &str) -> Value {
    match parse_documents(yaml) {
        Ok(mut docs) if docs.len() == 1 => docs.remove(0).value,
        Ok(docs) => panic!("-o yaml is {} documents:\n{yaml}", docs.len()),
        Err(e) => panic!("-o yaml does not parse ({e}):\n{yaml}"),
    }
}
