//! The webhook goes down: with `failurePolicy: Fail` (as installed) the API server refuses
//! ClusterPromotion writes with a message naming the webhook and the failed call; with
//! `Ignore` it admits them unexamined. Updates the installed `matchConditions` exclude (a label)
//! never need the webhook, and a pause alone goes to the pause webhooks, which fail open.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::{FailurePolicy, User};
use promotion_shared::admission::SPEC_CHANGE_ANNOTATION;
use promotion_shared::pause::{paused, PAUSED_ANNOTATION};

use super::support::{example, kubectl, Expect};

pub fn webhook_down_fail_refuses_and_ignore_admits(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let mut webhook = cluster
        .start_webhook(&[])
        .or_fail(cluster, "starting promotion-webhook");
    let configs = webhook
        .configurations()
        .or_fail(cluster, "rendering manifests/");
    cluster
        .register_webhooks(configs.clone())
        .or_fail(cluster, "registering the webhook");
    let url = webhook.base_url();

    // Admitted while the webhook is up.
    let existing = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let existing_name = existing["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let existing_path = cluster
        .write_manifest("gate.yaml", &existing)
        .or_fail(cluster, "writing the manifest");
    let out = kubectl(
        cluster,
        User::Admin,
        &["apply", "-f", &existing_path.to_string_lossy()],
    );
    assert_eq!(out.code, 0, "[{backend}] webhook up: {out}");

    webhook.stop();

    // The installed matchConditions skip the webhook for updates that change neither spec nor
    // annotations, so labelling (or removing a finalizer) never depends on it being up.
    let out = kubectl(
        cluster,
        User::Admin,
        &["label", "clusterpromotion", &existing_name, "team=platform"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{existing_name} labeled\n").as_str()
        ),
        "[{backend}] label with the webhook down: {out}"
    );

    // The plugin says which failurePolicy refused the approval, when the user may read it.
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    // Cluster::register_webhooks names the configurations after the scenario's session.
    let configuration = format!("promotion-webhook-{}", cluster.session());
    let addr = url.trim_start_matches("https://").to_string();
    let approve = [
        "promotion",
        "approve",
        &existing_name,
        "--stage",
        "staging",
        "--pre-approve",
    ];
    let refused = |policy: &str| {
        format!(
            "error: cannot patch clusterpromotions.config.projectsveltos.io {existing_name:?}: \
             admission webhook \"mutate.kubectl-promotion.dev\" did not answer (failed to call \
             webhook: Post \"{url}/mutate?timeout=5s\": dial tcp {addr}: connect: connection \
             refused); {policy}\n"
        )
    };
    let out = kubectl(cluster, User::Admin, &approve);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "",
            refused(&format!(
                "its failurePolicy is Fail (MutatingWebhookConfiguration {configuration:?}), so \
                 the API server refuses every change to ClusterPromotions until the webhook \
                 answers again: check the promotion-webhook pods and their Service"
            ))
            .as_str()
        ),
        "[{backend}] approve under Fail, as admin: {out}"
    );
    let out = kubectl(cluster, User::ReleaseManager, &approve);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            refused(
                "its failurePolicy is not readable (forbidden: list \
                 mutatingwebhookconfigurations.admissionregistration.k8s.io); under Fail (the \
                 default) every change to ClusterPromotions is refused until the webhook \
                 answers again"
            )
            .as_str()
        ),
        "[{backend}] approve under Fail, as release manager: {out}"
    );

    // The emergency brake: a pause alone goes to the pause webhooks, which fail open, so it
    // is admitted (unrecorded); a resume goes to the main ones and is refused.
    let pause_arg = format!("{PAUSED_ANNOTATION}=webhook outage");
    let out = kubectl(
        cluster,
        User::Admin,
        &["annotate", "clusterpromotion", &existing_name, &pause_arg],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{existing_name} annotated\n")
                .as_str()
        ),
        "[{backend}] pause with the webhook down: {out}"
    );
    let stored = cluster
        .promotion(&existing_name)
        .or_fail(cluster, "reading")
        .unwrap_or_else(|| panic!("[{backend}] {existing_name} is gone"));
    let pause = paused(&stored).unwrap_or_else(|| panic!("[{backend}] not paused: {stored}"));
    assert_eq!(
        (pause.reason.as_deref(), pause.record),
        (Some("webhook outage"), None),
        "[{backend}] the pause is in force, unrecorded"
    );
    let resume_arg = format!("{PAUSED_ANNOTATION}-");
    let out = kubectl(
        cluster,
        User::Admin,
        &["annotate", "clusterpromotion", &existing_name, &resume_arg],
    );
    assert_eq!(
        out.code, 1,
        "[{backend}] resume with the webhook down: {out}"
    );
    assert!(
        out.stderr.contains(
            "failed calling webhook \"mutate.kubectl-promotion.dev\": failed to call webhook"
        ),
        "[{backend}] resume with the webhook down: {out}"
    );

    let promotion = cluster.adopt(example("payment-four-stages.yaml"));
    let name = promotion["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let path = cluster
        .write_manifest("payment.yaml", &promotion)
        .or_fail(cluster, "writing the manifest");
    let path = path.to_string_lossy();

    let out = kubectl(cluster, User::Admin, &["apply", "-f", &path]);
    let context = format!("[{backend}] failurePolicy Fail: {out}");
    assert_eq!(out.code, 1, "{context}");
    assert_eq!(
        out.stderr,
        format!(
            "Error from server (InternalError): error when creating \"{path}\": Internal error \
             occurred: failed calling webhook \"mutate.kubectl-promotion.dev\": failed to call \
             webhook: Post \"{url}/mutate?timeout=5s\": dial tcp {addr}: connect: connection \
             refused\n",
            addr = url.trim_start_matches("https://")
        ),
        "{context}"
    );
    assert!(
        cluster
            .promotion(&name)
            .or_fail(cluster, "reading")
            .is_none(),
        "{context}"
    );

    cluster
        .register_webhooks(configs.with_failure_policy(FailurePolicy::Ignore))
        .or_fail(cluster, "switching to failurePolicy Ignore");
    let out = kubectl(cluster, User::Admin, &["apply", "-f", &path]);
    let context = format!("[{backend}] failurePolicy Ignore: {out}");
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{name} created\n").as_str()
        ),
        "{context}"
    );
    let stored = cluster
        .promotion(&name)
        .or_fail(cluster, "reading")
        .unwrap_or_else(|| panic!("{context}: not stored"));
    assert!(
        stored["metadata"]["annotations"][SPEC_CHANGE_ANNOTATION].is_null(),
        "no webhook saw it: {context}"
    );

    // Under Ignore the approval goes through without its record, and the plugin says why.
    let out = kubectl(cluster, User::Admin, &approve);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            format!(
                "clusterpromotion.config.projectsveltos.io/{existing_name} approved (stage \
                 staging → production), pre-approved ahead of the pipeline\n"
            )
            .as_str(),
            format!(
                "warning: the approval of stage \"staging\" carries no record of who gave it: \
                 webhook \"mutate.kubectl-promotion.dev\" did not answer and its failurePolicy \
                 is Ignore (MutatingWebhookConfiguration {configuration:?}), so the API server \
                 stored the change without it\n{existing_name} is paused (who paused it is not \
                 recorded: the admission webhook did not see the pause): \"webhook outage\": \
                 the approval is used once it is resumed (kubectl promotion resume \
                 {existing_name})\n"
            )
            .as_str()
        ),
        "[{backend}] approve under Ignore (the promotion paused above, unrecorded): {out}"
    );
}
