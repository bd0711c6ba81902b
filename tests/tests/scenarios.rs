//! End-to-end scenarios, each run on both backends from the same body: the stand-in API server
//! (`standin::…`) and a real kube-apiserver with etcd (`envtest::…`, see
//! `promotion_e2e::envtest`). A scenario that passes on one and fails on the other is a bug in
//! the stand-in or in the plugin.
//!
//! Real-server scenarios need `KUBEBUILDER_ASSETS`. Without it (and without `CI=true`) they are
//! reported as *ignored*, never as passed, and one line says how to enable them; this file uses
//! its own harness (libtest-mimic, `harness = false`) because the built-in one can only ignore a
//! test at compile time. Under `CI=true` they always run, so missing assets fail the run.

mod scenarios {
    pub mod approve;
    pub mod bound;
    pub mod consumed;
    pub mod diff_sorted_reorder;
    pub mod empty_manual;
    pub mod forged;
    pub mod gitops;
    pub mod kubeconfig_list;
    pub mod last_stage;
    pub mod lint_agreement;
    pub mod revocation;
    pub mod rollout;
    pub mod states;
    pub mod support;
    pub mod unseen;
    pub mod verdicts;
    pub mod viewer;
    pub mod webhook_down;
}

use std::time::Instant;

use libtest_mimic::{Arguments, Failed, Trial};
use promotion_e2e::backend::{BackendKind, Cluster};
use promotion_e2e::envtest::{self, Envtest, Gate};

type Scenario = fn(&Cluster);

const SCENARIOS: &[(&str, Scenario)] = &[
    (
        "gitops_flows_keep_or_lose_a_pending_approval_as_documented",
        scenarios::gitops::gitops_flows_keep_or_lose_a_pending_approval_as_documented,
    ),
    (
        "a_spec_change_the_webhook_did_not_see_is_named_so",
        scenarios::unseen::a_spec_change_the_webhook_did_not_see_is_named_so,
    ),
    (
        "sveltos_flipping_automatic_reset_is_shown_with_the_approval_it_cost",
        scenarios::unseen::sveltos_flipping_automatic_reset_is_shown_with_the_approval_it_cost,
    ),
    (
        "an_unrecorded_approval_used_and_removed_is_credited_to_nobody",
        scenarios::unseen::an_unrecorded_approval_used_and_removed_is_credited_to_nobody,
    ),
    (
        "an_approval_for_a_rollout_sveltos_has_not_started_is_not_used",
        scenarios::bound::an_approval_for_a_rollout_sveltos_has_not_started_is_not_used,
    ),
    (
        "an_approval_is_revoked_and_the_revocation_recorded",
        scenarios::bound::an_approval_is_revoked_and_the_revocation_recorded,
    ),
    (
        "a_revocation_shows_the_approval_it_withdrew",
        scenarios::revocation::a_revocation_shows_the_approval_it_withdrew,
    ),
    (
        "revoking_takes_the_right_to_approve_or_ones_own_approval",
        scenarios::revocation::revoking_takes_the_right_to_approve_or_ones_own_approval,
    ),
    (
        "an_approval_the_webhook_did_not_see_is_credited_to_nobody",
        scenarios::bound::an_approval_the_webhook_did_not_see_is_credited_to_nobody,
    ),
    (
        "a_release_manager_approves_and_a_developer_is_refused",
        scenarios::approve::a_release_manager_approves_and_a_developer_is_refused,
    ),
    (
        "a_forged_approval_record_is_refused",
        scenarios::forged::a_forged_approval_record_is_refused,
    ),
    (
        "a_new_rollout_resets_the_approval_and_a_sorted_reorder_does_not",
        scenarios::rollout::a_new_rollout_resets_the_approval_and_a_sorted_reorder_does_not,
    ),
    (
        "diff_predicts_no_reset_for_a_sorted_reorder",
        scenarios::diff_sorted_reorder::diff_predicts_no_reset_for_a_sorted_reorder,
    ),
    (
        "a_gate_on_the_last_stage_is_approved_and_approve_wait_sees_it_complete",
        scenarios::last_stage::a_gate_on_the_last_stage_is_approved_and_approve_wait_sees_it_complete,
    ),
    (
        "a_kubeconfig_list_naming_a_missing_file_works_as_in_kubectl",
        scenarios::kubeconfig_list::a_kubeconfig_list_naming_a_missing_file_works_as_in_kubectl,
    ),
    (
        "a_consumed_approval_is_removed_on_the_next_update",
        scenarios::consumed::a_consumed_approval_is_removed_on_the_next_update,
    ),
    (
        "describe_list_diff_and_wait_follow_the_documented_states",
        scenarios::states::describe_list_diff_and_wait_follow_the_documented_states,
    ),
    (
        "an_empty_manual_trigger_is_linted_and_breaks_server_side_apply_as_documented",
        scenarios::empty_manual::an_empty_manual_trigger_is_linted_and_breaks_server_side_apply_as_documented,
    ),
    (
        "lint_fails_exactly_where_kubectl_apply_does",
        scenarios::lint_agreement::lint_fails_exactly_where_kubectl_apply_does,
    ),
    (
        "every_example_gets_its_verdict_at_dry_run_and_apply",
        scenarios::verdicts::every_example_gets_its_verdict_at_dry_run_and_apply,
    ),
    (
        "a_viewer_reads_promotions_and_core_events_but_not_events_k8s_io",
        scenarios::viewer::a_viewer_reads_promotions_and_core_events_but_not_events_k8s_io,
    ),
    (
        "webhook_down_fail_refuses_and_ignore_admits",
        scenarios::webhook_down::webhook_down_fail_refuses_and_ignore_admits,
    ),
];

fn main() {
    let args = Arguments::from_args();
    let gate = envtest::gate();
    if let Gate::Skip(reason) = &gate {
        eprintln!("envtest scenarios ignored: {reason}");
    }
    let skip_real = matches!(gate, Gate::Skip(_));
    let trials = BackendKind::ALL
        .iter()
        .flat_map(|&kind| {
            SCENARIOS.iter().map(move |&(name, scenario)| {
                Trial::test(format!("{}::{name}", kind.name()), move || {
                    run(kind, scenario)
                })
                .with_ignored_flag(kind == BackendKind::Envtest && skip_real)
            })
        })
        .collect();
    let began = Instant::now();
    let conclusion = libtest_mimic::run(&args, trials);
    if let Some(server) = Envtest::shared_if_started() {
        eprintln!(
            "envtest: {} ready in {:.1?} (etcd, kube-apiserver, CRDs, RBAC); scenarios took {:.1?} in all",
            server.version(),
            server.startup(),
            began.elapsed()
        );
    }
    conclusion.exit();
}

fn run(kind: BackendKind, scenario: Scenario) -> Result<(), Failed> {
    let cluster = Cluster::new(kind).map_err(|e| Failed::from(e.to_string()))?;
    scenario(&cluster);
    Ok(())
}
