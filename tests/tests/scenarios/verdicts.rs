//! Every example through `kubectl apply --dry-run=server` with the real webhook registered as
//! installed, judged by `examples/VERDICTS.md` (every error and warning path, as
//! `promotion_examples` reads the table), then a plain `kubectl apply` of the valid ones.

use std::collections::BTreeSet;

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::User;
use promotion_e2e::fixtures;
use promotion_shared::admission::SPEC_CHANGE_ANNOTATION;

use super::support::{assert_contains, kubectl, Expect};

pub fn every_example_gets_its_verdict_at_dry_run_and_apply(cluster: &Cluster) {
    let webhook = cluster
        .start_webhook(&[])
        .or_fail(cluster, "starting promotion-webhook");
    let configs = webhook
        .configurations()
        .or_fail(cluster, "rendering manifests/");
    cluster
        .register_webhooks(configs)
        .or_fail(cluster, "registering the webhook");

    let verdicts = promotion_examples::verdicts();
    let examples = fixtures::load_examples().unwrap_or_else(|e| panic!("{e}"));
    let files: BTreeSet<&str> = examples.iter().map(|e| e.file.as_str()).collect();
    let judged: BTreeSet<&str> = verdicts.iter().map(|v| v.file.as_str()).collect();
    assert_eq!(
        files, judged,
        "examples/ and VERDICTS.md list the same files"
    );

    let mut valid = Vec::new();
    for example in &examples {
        let manifest = cluster.adopt(example.promotion.clone());
        let name = manifest["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let path = cluster
            .write_manifest(&example.file, &manifest)
            .or_fail(cluster, "writing a manifest");
        let path = path.to_string_lossy();
        let verdict = verdicts
            .iter()
            .find(|v| v.file == example.file)
            .unwrap_or_else(|| panic!("no verdict for {}", example.file));
        let out = kubectl(
            cluster,
            User::Admin,
            &["apply", "--dry-run=server", "-f", &path],
        );
        let context = format!("[{}] {}: {out}", cluster.kind().name(), example.file);
        if verdict.valid {
            assert_eq!(out.code, 0, "{context}");
            assert_eq!(
                out.stdout,
                format!(
                    "clusterpromotion.config.projectsveltos.io/{name} created (server dry run)\n"
                ),
                "{context}"
            );
            let warnings = verdict.warnings();
            for field in &warnings {
                assert_contains(&out.stderr, &[&format!("Warning: {field}: ")], &context);
            }
            assert_eq!(
                out.stderr.matches("Warning:").count(),
                warnings.len(),
                "exactly the warnings of VERDICTS.md, one line each: {context}"
            );
            valid.push((example.file.clone(), name.clone(), path.to_string()));
        } else {
            assert_eq!(out.code, 1, "{context}");
            let mut expected = vec![format!("The ClusterPromotion \"{name}\" is invalid: ")];
            expected.extend(verdict.errors().iter().map(|field| format!("{field}: ")));
            let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
            assert_contains(&out.stderr, &expected, &context);
        }
        let stored = cluster.promotion(&name).or_fail(cluster, "reading back");
        assert!(stored.is_none(), "a dry run stores nothing: {context}");
    }

    let mut created = BTreeSet::new();
    for (file, name, path) in valid {
        let out = kubectl(cluster, User::Admin, &["apply", "-f", &path]);
        let context = format!("[{}] {file}: {out}", cluster.kind().name());
        // Two examples define the same promotion: the second one updates it.
        let action = if created.insert(name.clone()) {
            "created"
        } else {
            "configured"
        };
        assert_eq!(out.code, 0, "{context}");
        assert_eq!(
            out.stdout,
            format!("clusterpromotion.config.projectsveltos.io/{name} {action}\n"),
            "{context}"
        );
        let stored = cluster
            .promotion(&name)
            .or_fail(cluster, "reading back")
            .unwrap_or_else(|| panic!("{context}: not stored"));
        let record = stored["metadata"]["annotations"][SPEC_CHANGE_ANNOTATION]
            .as_str()
            .unwrap_or_else(|| panic!("{context}: no {SPEC_CHANGE_ANNOTATION} on {stored}"));
        let record: serde_json::Value = serde_json::from_str(record).expect("JSON record");
        assert_eq!(
            record["user"], "admin",
            "the webhook saw who applied: {context}"
        );
    }
}
