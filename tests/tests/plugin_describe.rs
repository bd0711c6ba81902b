//! `kubectl promotion describe` and `list` against the stand-in API server loaded with the
//! example manifests, their ClusterProfiles, ClusterSummaries and Events (states per
//! examples/STATES.md).

mod plugin_common;

use plugin_common::*;
use promotion_e2e::fixtures::{Cluster, WorldBuilder};
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";

fn stage_line<'a>(text: &'a str, stage: &str) -> &'a str {
    text.lines()
        .find(|l| {
            let t = l.trim_start();
            t.split_once(". ").is_some_and(|(n, rest)| {
                n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(&format!("{stage} "))
            })
        })
        .unwrap_or_else(|| panic!("no block for stage {stage} in:\n{text}"))
}

/// The header line of `describe` that starts with `label` (`Phase:`), or "" without one.
fn header<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_default()
}

#[test]
fn auto_rollout_soaks_at_the_last_stage() {
    let env = Env::start(auto_rollout_two_clusters_each());
    let out = env.run(&["describe", "kyverno-rollout-auto"]).expect(0);
    let t = &out.stdout;
    assert!(t.contains("Phase:          progressing"), "{t}");
    assert!(stage_line(t, "dev").ends_with("promoted"));
    assert!(stage_line(t, "staging").ends_with("promoted"));
    assert!(
        stage_line(t, "production").ends_with("soaking until 2026-02-16T06:36:24Z"),
        "{t}"
    );
    assert!(t.contains(
        "Pipeline:       dev [promoted] → staging [promoted] → production [soaking until 2026-02-16T06:36:24Z]"
    ));
    assert!(t.contains("2 clusters: 2 provisioned"), "{t}");
    assert!(t.contains("prod/prod02"), "{t}");
    assert!(t.contains("Helm Provisioned"), "{t}");
    assert!(
        t.contains("[ClusterProfile kyverno-rollout-auto-production]"),
        "{t}"
    );
    assert!(t.contains("Status:         Delayed: Waiting for Time Window: 2026-02-16T06:36:24Z"));
    assert!(t.contains("Stage production provisioned"), "events: {t}");
    // A pipe gets no colour and no symbols.
    assert!(!t.contains('\u{1b}') && !t.contains('✔'));
}

#[test]
fn manual_gate_awaits_approval_and_says_how_to_approve() {
    let mut world = example_world("kyverno-manual-gate.yaml");
    let promotion = world.find_mut("ClusterPromotion", GATE).unwrap();
    promotion["metadata"]["annotations"] = json!({
        "audit.kubectl-promotion.dev/approvals":
            "{\"staging\":{\"user\":\"alice\",\"groups\":[\"release-managers\"],\"time\":\"2026-02-15T10:00:00Z\",\"reason\":\"CAB-1234\"}}",
        "audit.kubectl-promotion.dev/spec-change": "{\"user\":\"bob\",\"time\":\"2026-02-16T07:25:00Z\"}"
    });
    let env = Env::start(world);
    let t = env
        .run(&["describe", "kyverno-rollout-man"])
        .expect(0)
        .stdout;
    assert!(t.contains("Phase:          awaiting approval"), "{t}");
    assert!(stage_line(&t, "dev").ends_with("promoted"));
    assert!(stage_line(&t, "staging").ends_with("awaiting approval"));
    assert!(stage_line(&t, "production").ends_with("not started"));
    assert!(t.contains(
        "Next step:      kubectl promotion approve kyverno-rollout-man --stage staging   (staging → production)"
    ), "{t}");
    assert!(t.contains("Trigger:        manual: approved: false"), "{t}");
    assert!(
        t.contains("Clusters:       none yet (no ClusterProfile for this stage)"),
        "{t}"
    );
    // Audit annotations: who approved (earlier rollout) and who changed the spec.
    assert!(
        t.contains("staging   approved   alice   2026-02-15T10:00:00Z   CAB-1234"),
        "{t}"
    );
    assert!(
        t.contains("Spec changed:   by bob at 2026-02-16T07:25:00Z"),
        "{t}"
    );
    assert!(t.contains("Provisioning stage staging"), "{t}");
}

#[test]
fn failed_dev_is_failed_once_the_cluster_summaries_are_read() {
    let env = Env::start(example_world("kyverno-failed-dev.yaml"));
    let out = env.run(&["describe", "kyverno-rollout-auto"]).expect(0);
    let t = &out.stdout;
    // STATES.md: failed; the feature is `Failed`, which Sveltos retries: degraded, not lost.
    assert!(t.contains("Phase:          degraded"), "{t}");
    assert!(
        stage_line(t, "dev").ends_with("failed (Sveltos retries)"),
        "{t}"
    );
    assert!(stage_line(t, "staging").ends_with("not started"));
    assert!(t.contains("1 cluster: 0 provisioned, 1 failed"), "{t}");
    assert!(t.contains("dev/dev01"), "{t}");
    assert!(
        t.contains("cannot unmarshal bool into Go struct field DeploymentSpec.spec.replicas"),
        "{t}"
    );
    assert!(t.contains(
        "Message:        ClusterSummary kyverno-rollout-auto-dev-sveltos-dev01 is not yet provisioned."
    ));

    // The same promotion alone (offline) only knows it is provisioning.
    let offline = env
        .run(&[
            "describe",
            "-f",
            example_path("kyverno-failed-dev.yaml").to_str().unwrap(),
        ])
        .expect(0);
    assert!(stage_line(&offline.stdout, "dev").ends_with("provisioning"));
    assert!(offline
        .stdout
        .contains("Clusters:       not read (offline)"));

    let json: Value = serde_json::from_str(
        &env.run(&["describe", "kyverno-rollout-auto", "-o", "json"])
            .expect(0)
            .stdout,
    )
    .expect("describe -o json is JSON");
    assert_eq!(json["kind"], "PromotionDescription");
    assert_eq!(json["phase"], "degraded");
    assert_eq!(json["stages"][0]["state"], "failed");
    assert_eq!(json["stages"][0]["retriable"], true);
    assert!(json["stages"][0]["message"]
        .as_str()
        .unwrap()
        .starts_with("1 cluster failing: dev/dev01 Helm Failed: "));
    assert_eq!(json["stages"][0]["clusterCounts"]["failed"], 1);
    assert_eq!(
        json["stages"][0]["clusters"][0]["features"][0]["status"],
        "Failed"
    );
}

#[test]
fn empty_status_is_explained_in_plain_words() {
    let env = Env::start(example_world("payment-four-stages.yaml"));
    let t = env
        .run(&["describe", "core-payment-processor-ci"])
        .expect(0)
        .stdout;
    assert!(t.contains("Phase:          not started"), "{t}");
    assert!(
        t.contains("Status:         empty: not reconciled yet"),
        "{t}"
    );
    for stage in ["development", "uat", "staging", "production"] {
        assert!(stage_line(&t, stage).ends_with("not started"));
    }
    assert!(t.contains("Events:         <none>"));

    // With Sveltos's finalizer but still no status: a build without the reconciler. On
    // open-source Sveltos the answer is promotion-controller, installed by the default install
    // (manifests.rs checks it holds the controller); Sveltos Enterprise is the other.
    let mut p = example("payment-four-stages.yaml");
    p["metadata"]["finalizers"] = json!(["config.projectsveltos.io/clusterpromotion"]);
    env.put(p);
    let t = env
        .run(&["describe", "core-payment-processor-ci"])
        .expect(0)
        .stdout;
    let status = t
        .lines()
        .find(|l| l.starts_with("Status:"))
        .unwrap_or_else(|| panic!("{t}"));
    assert_eq!(
        status,
        "Status:         empty: Sveltos added its finalizer but never wrote a status: this \
         Sveltos build has no ClusterPromotion reconciler (open-source Sveltos since v1.14 runs \
         none): install promotion-controller (`kubectl apply -k manifests/` of kubectl-promotion, \
         see docs/controller.md), or use Sveltos Enterprise",
        "{t}"
    );
}

#[test]
fn describe_offline_needs_no_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(plugin_bin())
        .args(["describe", "-f"])
        .arg(example_path("kyverno-manual-gate.yaml"))
        .env_clear()
        .env("HOME", dir.path())
        .env("KUBECONFIG", dir.path().join("missing"))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.contains("Phase:          awaiting approval"));
    assert!(t.contains("unblocks staging → production"));

    let yaml = std::process::Command::new(plugin_bin())
        .args(["describe", "-o", "yaml", "-f"])
        .arg(example_path("kyverno-rollout-auto.yaml"))
        .env_clear()
        .output()
        .unwrap();
    let v: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&yaml.stdout))
        .expect("describe -o yaml is YAML");
    // The file's status hashes are chart 3.5.2's (a real run, promotion-controller.md 7.6) under
    // a 3.6.2 spec: read exactly, Sveltos has not picked this spec up. The stage states are still
    // the status' own.
    assert_eq!(v["phase"], "stale");
    assert!(
        v["stale"]
            .as_str()
            .unwrap()
            .contains("status.profileSpecHash"),
        "{v}"
    );
    assert_eq!(v["stages"][2]["state"], "soaking");
    assert_eq!(v["stages"][2]["until"], "2026-02-16T06:36:24Z");
    assert_eq!(v["online"], false);
}

#[test]
fn list_shows_every_promotion() {
    let mut payment = example("payment-four-stages.yaml");
    payment["metadata"]["labels"] = json!({"team": "payments"});
    let env = Env::start(world_of(
        WorldBuilder::new(),
        vec![
            (
                "kyverno-manual-gate.yaml",
                example("kyverno-manual-gate.yaml"),
            ),
            (
                "kyverno-failed-dev.yaml",
                example("kyverno-failed-dev.yaml"),
            ),
            ("payment-four-stages.yaml", payment),
        ],
    ));

    let out = env.run(&["list"]).expect(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "STAGES",
            "CURRENT",
            "STATE",
            "AWAITING-APPROVAL",
            "AGE"
        ]
    );
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    let row = |name: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name}"))
            .to_string()
    };
    assert!(
        row("core-payment-processor-ci").contains("0/4      -         not started"),
        "{}",
        out.stdout
    );
    assert!(
        row("kyverno-rollout-auto").contains("1/3      dev       degraded"),
        "{}",
        out.stdout
    );
    assert!(
        row("kyverno-rollout-man")
            .contains("2/3      staging   awaiting approval   staging → production"),
        "{}",
        out.stdout
    );

    let names = env
        .run(&["get", "-o", "name", "-l", "team=payments"])
        .expect(0);
    assert_eq!(
        names.stdout,
        "clusterpromotion.config.projectsveltos.io/core-payment-processor-ci\n"
    );

    let headless = env.run(&["list", "--no-headers"]).expect(0);
    assert_eq!(headless.stdout.lines().count(), 3);
    assert!(headless.stdout.starts_with("core-payment-processor-ci"));

    let wide = env.run(&["list", "-o", "wide"]).expect(0);
    assert!(wide
        .stdout
        .lines()
        .next()
        .unwrap()
        .ends_with("LAST-PROMOTION   MESSAGE"));
    assert!(
        wide.stdout.contains("Paused: Awaiting Manual Approval"),
        "{}",
        wide.stdout
    );

    let json: Value =
        serde_json::from_str(&env.run(&["list", "-o", "json"]).expect(0).stdout).unwrap();
    assert_eq!(json["kind"], "PromotionList");
    let items = json["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[2]["awaitingApproval"], "staging");
    assert_eq!(items[1]["phase"], "degraded");

    let yaml: Value =
        serde_saphyr::from_str(&env.run(&["list", "-o", "yaml"]).expect(0).stdout).unwrap();
    assert_eq!(yaml["items"][0]["name"], "core-payment-processor-ci");

    // kubectl's template printers see the rows that -o json prints.
    let names: Vec<String> = items
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    let jsonpath = env
        .run(&["list", "-o", "jsonpath={.items[*].name}"])
        .expect(0);
    assert_eq!(jsonpath.stdout, names.join(" "));
    let columns = env
        .run(&[
            "list",
            "-o",
            "custom-columns=NAME:.name,GATE:.awaitingApproval",
        ])
        .expect(0);
    let expected: Vec<(String, String)> = items
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().to_string(),
                i["awaitingApproval"]
                    .as_str()
                    .unwrap_or("<none>")
                    .to_string(),
            )
        })
        .collect();
    let got: Vec<(String, String)> = columns
        .stdout
        .lines()
        .skip(1)
        .map(|l| {
            let mut parts = l.split_whitespace();
            (
                parts.next().unwrap().to_string(),
                parts.next().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(got, expected, "{}", columns.stdout);
    let missing = env
        .run(&[
            "list",
            "-o",
            "jsonpath={.items[0].nope}",
            "--allow-missing-template-keys=false",
        ])
        .expect(1);
    assert!(
        missing
            .stderr
            .starts_with("error: error executing jsonpath"),
        "{}",
        missing.stderr
    );
    assert_eq!(missing.stdout, "");
    let unknown = env.run(&["list", "-o", "go-template={{.}}"]).expect(1);
    assert!(unknown.stderr.contains("allowed formats are: custom-columns,custom-columns-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,wide,yaml"), "{}", unknown.stderr);
    let phase = env
        .run(&["describe", "kyverno-rollout-man", "-o", "jsonpath={.phase}"])
        .expect(0);
    assert_eq!(phase.stdout, "awaitingApproval");

    let none = env.run(&["list", "-l", "team=nobody"]).expect(0);
    assert_eq!(none.stdout, "");
    assert!(none.stderr.contains("No resources found"));
}

#[test]
fn many_clusters_are_summarised_unless_asked() {
    // 25 dev clusters that are done and one still installing its chart.
    let dev = |name: &str| Cluster::new("dev", name, &[("env", "dev")]);
    let mut clusters: Vec<Cluster> = (0..25).map(|i| dev(&format!("dev{i:02}"))).collect();
    clusters.push(dev("slow"));
    let file = "kyverno-manual-gate.yaml";
    let mut world = world_of(
        WorldBuilder::new().with_clusters(clusters),
        vec![(file, example(file))],
    );
    let slow = world
        .find_mut("ClusterSummary", "kyverno-rollout-man-dev-sveltos-slow")
        .unwrap();
    set_features(
        slow,
        &[
            ("Helm", "Provisioning", None),
            ("Resources", "Provisioned", None),
        ],
    );
    let env = Env::start(world);
    let t = env
        .run(&["describe", "kyverno-rollout-man"])
        .expect(0)
        .stdout;
    assert!(
        t.contains("26 clusters: 25 provisioned, 1 in progress"),
        "{t}"
    );
    assert!(
        t.contains("dev/slow   Helm Provisioning, Resources Provisioned"),
        "{t}"
    );
    assert!(
        t.contains("… and 25 more provisioned (--all-clusters lists every cluster)"),
        "{t}"
    );
    assert!(!t.contains("dev/dev07"));
    let all = env
        .run(&["describe", "kyverno-rollout-man", "--all-clusters"])
        .expect(0)
        .stdout;
    assert!(all.contains("dev/dev07"));
}

#[test]
fn many_clusters_all_provisioned_are_counted_not_said_to_be_more() {
    let dev = |name: &str| Cluster::new("dev", name, &[("env", "dev")]);
    let file = "kyverno-manual-gate.yaml";
    let world = |n: usize| {
        world_of(
            WorldBuilder::new().with_clusters((0..n).map(|i| dev(&format!("dev{i:02}"))).collect()),
            vec![(file, example(file))],
        )
    };
    // Beyond 10: none listed, and the line says what the unlisted ones are.
    let env = Env::start(world(12));
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(t.contains("12 clusters: 12 provisioned"), "{t}");
    assert!(
        t.contains(
            "\n       all 12 provisioned, not listed (--all-clusters lists every cluster)\n"
        ),
        "{t}"
    );
    assert!(!t.contains("… and") && !t.contains("dev/dev00"), "{t}");
    // Up to 10: all of them, as the help says.
    let env = Env::start(world(10));
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(t.contains("dev/dev00") && t.contains("dev/dev09"), "{t}");
    assert!(!t.contains("not listed"), "{t}");
    let help = env.run(&["describe", "--help"]).expect(0).stdout;
    assert!(
        help.contains("default: all of a stage's clusters up to 10; beyond"),
        "{help}"
    );
}

#[test]
fn colour_follows_the_flags_and_the_environment() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let forced = env
        .run(&["describe", "kyverno-rollout-man", "--color=always"])
        .expect(0);
    assert!(forced.stdout.contains('\u{1b}'));
    assert!(forced.stdout.contains("॥"));
    for args in [vec!["--color=always", "--no-color"], vec!["--color=never"]] {
        let mut a = vec!["describe", "kyverno-rollout-man"];
        a.extend(args);
        assert!(!env.run(&a).expect(0).stdout.contains('\u{1b}'));
    }
    // A pipe is not a terminal: NO_COLOR / TERM=dumb are moot there, and auto gives plain text.
    let auto = env.run_env(
        &["describe", "kyverno-rollout-man"],
        &[("TERM", "xterm-256color")],
    );
    assert!(!auto.stdout.contains('\u{1b}'));
}

/// The plugin on a pseudo-terminal (util-linux `script`), as a person would run it.
fn tty_command(env: &Env, args: &str, extra_env: &[(&str, &str)]) -> std::process::Command {
    let mut c = std::process::Command::new("script");
    c.args([
        "-q",
        "-e",
        "-c",
        &format!("{} {args}", plugin_bin().display()),
        "/dev/null",
    ])
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", env.home())
    .env("KUBECONFIG", env.kubeconfig())
    .env("TERM", "xterm-256color")
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    for (k, v) in extra_env {
        c.env(k, v);
    }
    c
}

fn on_tty(env: &Env, args: &str, extra_env: &[(&str, &str)]) -> String {
    let out = tty_command(env, args, extra_env)
        .output()
        .expect("script(1) runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_terminal_gets_colour_and_symbols_unless_told_otherwise() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let tty = on_tty(&env, "describe kyverno-rollout-man", &[]);
    assert!(tty.contains("\u{1b}[33mawaiting approval"), "{tty}");
    assert!(
        tty.contains("✔") && tty.contains("॥") && tty.contains("○"),
        "{tty}"
    );
    for (k, v) in [("NO_COLOR", "1"), ("TERM", "dumb")] {
        let plain = on_tty(&env, "describe kyverno-rollout-man", &[(k, v)]);
        assert!(!plain.contains('\u{1b}'), "{k}={v}: {plain}");
        assert!(
            plain.contains("dev [promoted] → staging [awaiting approval]"),
            "{plain}"
        );
    }
    assert!(!on_tty(&env, "describe kyverno-rollout-man --no-color", &[]).contains('\u{1b}'));
    // Tables too: list colours the STATE column on a terminal.
    assert!(on_tty(&env, "list", &[]).contains("\u{1b}[33mawaiting approval"));
}

#[test]
fn watch_on_a_terminal_redraws_in_place() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let child = tty_command(&env, "describe kyverno-rollout-auto -w", &[])
        .spawn()
        .expect("script(1) runs");
    eventually(
        std::time::Duration::from_secs(30),
        "the plugin to watch",
        || {
            env.server
                .requests()
                .iter()
                .any(|r| r.path.contains("/clustersummaries") && r.query.contains("watch=true"))
        },
    );
    let mut p = env.promotion("kyverno-rollout-auto");
    p["status"]["stages"][2]["currentStatusDescription"] =
        json!("Successfully provisioned (2026-02-16T06:36:24Z)");
    forget_version(&mut p);
    env.put(p);
    let out = child.wait_with_output().expect("script(1) ends");
    assert_eq!(out.status.code(), Some(0));
    let out = String::from_utf8_lossy(&out.stdout);
    // Cursor home + clear screen before each full view: the first one and the final one.
    assert!(out.matches("\u{1b}[H\u{1b}[2J").count() >= 2, "{out}");
    assert!(out.contains("complete"), "{out}");
}

/// As `kubectl describe a nope b`: the promotions that exist are described, the missing one is an
/// error after them, and the command fails.
#[test]
fn several_names_with_one_missing_describe_the_others_and_fail() {
    let mut world = example_world("kyverno-manual-gate.yaml");
    world.extend(example_world("payment-four-stages.yaml"));
    let env = Env::start(world);
    let out = env
        .run(&[
            "describe",
            "kyverno-rollout-man",
            "nope",
            "core-payment-processor-ci",
        ])
        .expect(1);
    assert!(
        out.stdout.contains("Name:           kyverno-rollout-man"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("Name:           core-payment-processor-ci"),
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stderr,
        "error: clusterpromotion.config.projectsveltos.io \"nope\" not found\n"
    );
}

const AUTO: &str = "kyverno-rollout-auto";

/// Rewrite the stored ClusterProfile `name` with `change`.
fn change_profile(env: &Env, name: &str, change: impl FnOnce(&mut Value)) {
    let mut p = env
        .server
        .store()
        .get("clusterprofiles", None, name)
        .unwrap_or_else(|| panic!("clusterprofile {name} not in the store"));
    change(&mut p);
    forget_version(&mut p);
    env.put(p);
}

/// Issue 25, item 10: the dev ClusterProfile is a leftover of a deleted promotion of the same
/// name (its owner reference has another UID): describe tells it from a collision and says how
/// to clean it up.
#[test]
fn a_leftover_profile_of_a_deleted_namesake_is_an_orphan_not_a_collision() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let profile = format!("{AUTO}-dev");
    let old = "11111111-2222-4333-8444-555555555555";
    change_profile(&env, &profile, |p| {
        p["metadata"]["ownerReferences"][0]["uid"] = json!(old);
    });
    let uid = env.promotion(AUTO)["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let out = env.run(&["describe", AUTO]).expect(0);
    assert!(
        out.stdout.contains(&format!(
            "the ClusterProfile \"{profile}\" is left over from a deleted ClusterPromotion of \
             the same name (its owner has UID {old}, this one {uid}), not a collision with \
             another promotion: delete it (kubectl delete clusterprofile {profile}) so that \
             Sveltos creates this promotion's"
        )),
        "{out}"
    );
    assert!(!out.stdout.contains("is taken by"), "{out}");
}

/// Issue 25: the dev ClusterProfile `kyverno-rollout-auto-dev` is owned by a ClusterPromotion of
/// another name whose `<promotion>-<stage>` is the same (`kyverno-rollout` + `auto-dev`), and
/// that promotion no longer exists: a leftover to delete, not a collision with a live promotion,
/// in `describe` as in `list`, which reads every promotion.
#[test]
fn a_leftover_profile_of_a_deleted_promotion_of_another_name_is_an_orphan_not_a_collision() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let profile = format!("{AUTO}-dev");
    let gone = "77777777-2222-4333-8444-555555555555";
    change_profile(&env, &profile, |p| {
        p["metadata"]["labels"]["config.projectsveltos.io/promotionname"] =
            json!("kyverno-rollout");
        p["metadata"]["ownerReferences"][0]["name"] = json!("kyverno-rollout");
        p["metadata"]["ownerReferences"][0]["uid"] = json!(gone);
    });
    let orphan = format!(
        "the ClusterProfile \"{profile}\" is left over from ClusterPromotion \"kyverno-rollout\" \
         (UID {gone}), which no longer exists, not a collision with a live promotion: delete it \
         (kubectl delete clusterprofile {profile}) so that Sveltos creates this promotion's"
    );
    let out = env.run(&["describe", AUTO]).expect(0);
    assert!(out.stdout.contains(&orphan), "{out}");
    assert!(!out.stdout.contains("is taken by"), "{out}");
    let json = env.run(&["describe", AUTO, "-o", "json"]).expect(0);
    let d: Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(
        d["stages"][0]["clusterProfileTaken"],
        json!(orphan),
        "{json}"
    );
    let listed = env.run(&["list", "-o", "json"]).expect(0);
    assert!(!listed.stdout.contains("is taken by"), "{listed}");
}

/// Issue 25, item 11: a reached stage whose ClusterProfile another promotion wrote (a real
/// `<promotion>-<stage>` collision: `kyverno-rollout` + `auto-dev`, which exists) makes the
/// pipeline failed, in `list` as in `describe` (both from one derivation), with the collision as
/// the reason.
#[test]
fn a_profile_name_collision_fails_the_victim_in_list_and_describe_alike() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let owner = "kyverno-rollout";
    let owner_uid = "99999999-2222-4333-8444-555555555555";
    let mut other = env.promotion(AUTO);
    other["metadata"] = json!({"name": owner, "uid": owner_uid});
    other["spec"]["stages"] = json!([other["spec"]["stages"][0].clone()]);
    other["spec"]["stages"][0]["name"] = json!("auto-dev");
    other.as_object_mut().expect("object").remove("status");
    env.put(other);
    let profile = format!("{AUTO}-dev");
    change_profile(&env, &profile, |p| {
        p["metadata"]["labels"]["config.projectsveltos.io/promotionname"] = json!(owner);
        p["metadata"]["ownerReferences"][0]["name"] = json!(owner);
        p["metadata"]["ownerReferences"][0]["uid"] = json!(owner_uid);
    });
    // Rows are sorted by name: `kyverno-rollout` first, the victim second.
    let list = env
        .run(&["list", "-o", "jsonpath={.items[1].phase}"])
        .expect(0);
    assert_eq!(list.stdout, "failed", "{list}");
    let describe = env.run(&["describe", AUTO, "-o", "json"]).expect(0);
    let d: Value = serde_json::from_str(&describe.stdout).expect("json");
    assert_eq!(d["phase"], "failed", "{describe}");
    let table = env.run(&["list"]).expect(0);
    let row = table
        .stdout
        .lines()
        .find(|l| l.starts_with(AUTO))
        .unwrap_or_default();
    assert!(row.contains("failed"), "{table}");
    let text = env.run(&["describe", AUTO]).expect(0);
    assert!(
        text.stdout.contains(&format!(
            "the ClusterProfile name \"{profile}\" is taken by ClusterPromotion \"{owner}\""
        )),
        "{text}"
    );
}

/// Between a reconciler's commit (the approval used and the `promoting` annotation written in one
/// patch) and its status write, the stage is promoting: not awaiting approval, and `approve` is
/// not what the next step says.
#[test]
fn a_committed_step_reads_as_promoting_not_awaiting_approval() {
    use promotion_shared::promoting::{Promoting, PROMOTING_ANNOTATION};
    let file = "kyverno-manual-gate.yaml";
    let mut p = example(file);
    // The status of a reconciler that writes the hashes.
    p["status"]["stagesHash"] = json!("");
    promotion_e2e::fixtures::hash_status_as_sveltos(&mut p);
    let typed: promotion_shared::model::ClusterPromotion =
        serde_json::from_value(p.clone()).expect("a ClusterPromotion");
    let rollout = typed.status_rollout().expect("hashes in the status");
    let step = Promoting {
        stage: "staging".into(),
        rollout,
    };
    p["metadata"]["annotations"][PROMOTING_ANNOTATION] = json!(step.to_annotation());
    let env = Env::start(world_of(
        promotion_e2e::fixtures::WorldBuilder::new(),
        vec![(file, p)],
    ));
    let json: Value = serde_json::from_str(
        &env.run(&["describe", "kyverno-rollout-man", "-o", "json"])
            .expect(0)
            .stdout,
    )
    .expect("describe -o json is JSON");
    assert_eq!(json["phase"], "progressing", "{json}");
    assert_eq!(json["stages"][1]["state"], "approvedPending", "{json}");
    let text = env
        .run(&["describe", "kyverno-rollout-man"])
        .expect(0)
        .stdout;
    assert!(!text.contains("awaiting approval"), "{text}");
    assert!(!text.contains("kubectl promotion approve"), "{text}");
}

/// A promotion being deleted (finalizer pending) waits for nothing: every view says it is being
/// deleted and what that does to the clusters, and no approval is proposed or accepted.
#[test]
fn a_promotion_being_deleted_is_not_awaiting_approval() {
    let mut world = example_world("kyverno-manual-gate.yaml");
    let promotion = world.find_mut("ClusterPromotion", GATE).unwrap();
    promotion["metadata"]["deletionTimestamp"] = json!("2026-02-16T08:00:00Z");
    promotion["metadata"]["finalizers"] = json!([promotion_shared::model::FINALIZER]);
    let env = Env::start(world);

    let json: Value =
        serde_json::from_str(&env.run(&["describe", GATE, "-o", "json"]).expect(0).stdout)
            .expect("describe -o json is JSON");
    assert_eq!(json["phase"], "deleting", "{json}");
    assert_eq!(json["deleting"], "2026-02-16T08:00:00Z", "{json}");
    assert!(json.get("awaitingApproval").is_none(), "{json}");

    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(t.contains("Phase:          being deleted"), "{t}");
    assert!(!t.contains("kubectl promotion approve"), "{t}");
    assert!(
        t.contains("withdraws the add-on from every cluster of every stage"),
        "{t}"
    );

    let list = env.run(&["list"]).expect(0).stdout;
    let row = list.lines().find(|l| l.starts_with(GATE)).expect("a row");
    assert!(row.contains("being deleted"), "{list}");
    assert!(!row.contains("staging →"), "{list}");

    let refused = env.run(&["approve", GATE, "--stage", "staging"]).expect(1);
    assert!(
        refused
            .stderr
            .contains("is being deleted (since 2026-02-16T08:00:00Z)"),
        "{}",
        refused.stderr
    );
    let wait = env.run(&["wait", GATE, "--for=approval", "--timeout=5s"]);
    assert!(wait.stderr.contains("being deleted"), "{}", wait.stderr);
    assert_ne!(wait.code, 0, "{}", wait.stderr);
}

/// Before deletion, describe says what deleting would do, and how to keep the add-ons.
#[test]
fn describe_says_what_deleting_does_to_the_clusters() {
    let mut world = example_world("kyverno-manual-gate.yaml");
    let env = Env::start(world.clone());
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains("On delete:      deleting this promotion deletes its stage ClusterProfiles, so Sveltos withdraws the add-on from every cluster of every stage at once; set spec.preserveClusterProfilesOnDelete: true first to keep them"),
        "{t}"
    );
    let promotion = world.find_mut("ClusterPromotion", GATE).unwrap();
    promotion["spec"]["preserveClusterProfilesOnDelete"] = json!(true);
    let env = Env::start(world);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains("On delete:      deleting this promotion keeps its stage ClusterProfiles"),
        "{t}"
    );
}

/// Messages name who runs the promotion as `Reconciled by` does: promotion-controller once it
/// wrote the status, or — before its first status — once it added the finalizer; then an empty
/// status is "starting", not "no reconciler" (issue: `wait` said the build had no reconciler one
/// second before promotion-controller wrote the status).
#[test]
fn messages_name_the_reconciler_that_runs_the_promotion() {
    let controller_entry = |fields: Value| {
        json!({"manager": "promotion-controller", "operation": "Apply",
               "time": "2026-02-16T07:25:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
    };
    // Written by promotion-controller, staging approved and not used yet.
    let mut world = example_world("kyverno-manual-gate.yaml");
    let promotion = world.find_mut("ClusterPromotion", GATE).unwrap();
    promotion["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    let mut status_entry = controller_entry(json!({"f:status": {"f:stages": {}}}));
    status_entry["subresource"] = json!("status");
    promotion["metadata"]["managedFields"] = json!([status_entry]);
    let env = Env::start(world);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains("Reconciled by:  promotion-controller (kubectl-promotion)"),
        "{t}"
    );
    assert!(
        t.contains("(pending: promotion-controller promotes on its next pass)"),
        "{t}"
    );
    assert!(!t.contains("Sveltos promotes"), "{t}");

    // Just created: promotion-controller added the finalizer, the status is not written yet;
    // it leads (its Lease is fresh).
    env.put(controller_lease(chrono::Utc::now()));
    let mut p = example("payment-four-stages.yaml");
    p["metadata"]["finalizers"] = json!([promotion_shared::model::FINALIZER]);
    p["metadata"]["managedFields"] = json!([controller_entry(
        json!({"f:metadata": {"f:finalizers": {}}})
    )]);
    env.put(p);
    let t = env
        .run(&["describe", "core-payment-processor-ci"])
        .expect(0)
        .stdout;
    assert!(
        t.contains(
            "Status:         empty: promotion-controller took this promotion on (it added its \
             finalizer) and writes its first status next"
        ),
        "{t}"
    );
    assert!(!t.contains("no ClusterPromotion reconciler"), "{t}");
    assert!(!t.contains("addon-controller"), "{t}");
    let wait = env.run(&[
        "wait",
        "core-payment-processor-ci",
        "--for=complete",
        "--timeout=1s",
    ]);
    assert!(
        !wait.stderr.contains("no ClusterPromotion reconciler"),
        "{}",
        wait.stderr
    );
    assert!(
        wait.stderr
            .contains("promotion-controller took this promotion on"),
        "{}",
        wait.stderr
    );

    // Nothing took it on: one piece of advice, covering both reconcilers.
    env.put(example("payment-four-stages.yaml"));
    let t = env
        .run(&["describe", "core-payment-processor-ci"])
        .expect(0)
        .stdout;
    assert_eq!(t.matches("promotion-controller").count(), 1, "{t}");
}

/// Each stage says which configuration it runs: after a change of the chart version, the stages
/// the new rollout has not reached keep the previous rollout's profile, and a ClusterSummary
/// Sveltos has not updated yet counts as still on the previous spec, not as provisioned.
#[test]
fn each_stage_says_which_configuration_it_runs() {
    let mut world = auto_rollout_two_clusters_each();
    let name = "kyverno-rollout-auto";
    // The new rollout: 3.6.3 in the spec (the status hashed for it, as the reconciler writes it).
    let promotion = world.find_mut("ClusterPromotion", name).unwrap();
    promotion["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.6.3");
    promotion["status"]["stagesHash"] = json!("");
    promotion_e2e::fixtures::hash_status_as_sveltos(promotion);
    // The reconciler applied dev's profile; Sveltos has not updated dev's ClusterSummaries.
    let dev = world
        .find_mut("ClusterProfile", "kyverno-rollout-auto-dev")
        .unwrap();
    dev["spec"]["helmCharts"][0]["chartVersion"] = json!("3.6.3");
    let env = Env::start(world);

    let t = env.run(&["describe", name]).expect(0).stdout;
    let block = |stage: &str| {
        let start = t
            .find(&format!(". {stage}  "))
            .unwrap_or_else(|| panic!("{t}"));
        let rest = &t[start..];
        rest[..rest.find("\n\n").unwrap_or(rest.len())].to_string()
    };
    let dev = block("dev");
    assert!(
        dev.contains("Runs:           spec.profileSpec (this rollout's configuration)"),
        "{dev}"
    );
    assert!(
        dev.contains("2 clusters: 0 provisioned, 2 still on the previous spec"),
        "{dev}"
    );
    assert!(
        dev.contains("still on the previous spec (Sveltos is updating it)"),
        "{dev}"
    );
    for stage in ["staging", "production"] {
        let b = block(stage);
        assert!(
            b.contains(
                "Runs:           another rollout's configuration: helm kyverno/kyverno 3.6.2 as \
                 kyverno/kyverno-latest (to the spec: kyverno/kyverno 3.6.2 → 3.6.3)"
            ),
            "{b}"
        );
        assert!(b.contains("2 clusters: 2 provisioned"), "{b}");
    }
    let json: Value =
        serde_json::from_str(&env.run(&["describe", name, "-o", "json"]).expect(0).stdout)
            .expect("JSON");
    assert_eq!(json["stages"][0]["runs"]["spec"], true, "{json}");
    assert_eq!(json["stages"][1]["runs"]["spec"], false, "{json}");
    assert_eq!(
        json["stages"][1]["runs"]["toSpec"],
        "kyverno/kyverno 3.6.2 → 3.6.3"
    );
    assert_eq!(json["stages"][0]["clusterCounts"]["previousSpec"], 2);
    assert_eq!(json["stages"][0]["clusterCounts"]["provisioned"], 0);
}

/// The webhook's approval records as describe shows them (issue "Every screen true…", items 5
/// and 17): a revocation is a revocation by its author, with the approval it withdrew; an
/// approval taken away by an update names who took it; an approval in effect says how to
/// withdraw it. Records written before the revocation kept its approval still read.
#[test]
fn revocations_and_removals_say_who_did_what() {
    let records = |staging: Value| {
        let mut world = example_world("kyverno-manual-gate.yaml");
        let promotion = world.find_mut("ClusterPromotion", GATE).unwrap();
        promotion["metadata"]["generation"] = json!(3);
        promotion["metadata"]["annotations"] = json!({
            "audit.kubectl-promotion.dev/approvals": json!({"staging": staging}).to_string(),
        });
        world
    };
    let alice = json!({"user": "alice", "groups": ["release-managers"],
                       "time": "2026-02-16T07:40:00Z", "reason": "CAB-7", "generation": 2});

    // alice approved, bob revoked.
    let mut revocation = json!({"user": "bob", "groups": ["developers"],
                                "time": "2026-02-16T07:45:00Z", "reason": "wrong build",
                                "generation": 3, "revoked": true, "revokedApproval": alice});
    let env = Env::start(records(revocation.clone()));
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains(
            "     Last approval:  revoked by bob at 2026-02-16T07:45:00Z: \"wrong build\" \
             (withdrew alice's approval given at 2026-02-16T07:40:00Z: \"CAB-7\")\n"
        ),
        "{t}"
    );
    let table: Vec<&str> = t
        .lines()
        .skip_while(|l| *l != "Approvals:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        table,
        [
            "  STAGE     ACTION     BY      AT                     REASON",
            "  staging   approved   alice   2026-02-16T07:40:00Z   CAB-7",
            "  staging   revoked    bob     2026-02-16T07:45:00Z   wrong build",
        ],
        "{t}"
    );
    // Nothing is in effect: nothing to withdraw.
    assert!(!t.contains("Revoke:"), "{t}");
    let json: Value =
        serde_json::from_str(&env.run(&["describe", GATE, "-o", "json"]).expect(0).stdout)
            .expect("describe -o json");
    assert_eq!(
        json["approvals"][0]["revokedApproval"]["user"], "alice",
        "{json}"
    );

    // A revocation recorded before it kept the approval it withdrew.
    revocation
        .as_object_mut()
        .unwrap()
        .remove("revokedApproval");
    env.put(
        records(revocation)
            .objects
            .into_iter()
            .find(|o| o["kind"] == "ClusterPromotion")
            .unwrap(),
    );
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains(
            "Last approval:  revoked by bob at 2026-02-16T07:45:00Z: \"wrong build\" (withdrew \
             an approval whose giver is not recorded)\n"
        ),
        "{t}"
    );

    // alice's approval, left out by carol's client-side apply.
    let mut removed = alice.clone();
    removed["removed"] = json!({"user": "carol", "time": "2026-02-16T07:50:00Z", "how": "update"});
    env.put(
        records(removed)
            .objects
            .into_iter()
            .find(|o| o["kind"] == "ClusterPromotion")
            .unwrap(),
    );
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains(
            "Last approval:  alice at 2026-02-16T07:40:00Z: \"CAB-7\" (removed by carol's update \
             at 2026-02-16T07:50:00Z, which left approved out)\n"
        ),
        "{t}"
    );
    assert!(!t.contains("no longer in effect"), "{t}");
    assert!(
        t.contains(
            "  staging   removed    carol   2026-02-16T07:50:00Z   the update left approved out"
        ),
        "{t}"
    );

    // Reset by the webhook on dave's update (a new rollout); qa's approval went with its stage.
    let mut reset = alice.clone();
    reset["removed"] = json!({"user": "dave", "time": "2026-02-16T07:55:00Z", "how": "reset",
        "detail": "reset: spec.profileSpec changed, the new rollout needs a new approval"});
    let mut world = records(reset);
    let promotion = world.find_mut("ClusterPromotion", GATE).unwrap();
    let mut all: Value = serde_json::from_str(
        promotion["metadata"]["annotations"]["audit.kubectl-promotion.dev/approvals"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    all["qa"] = json!({"user": "erin", "time": "2026-02-16T07:00:00Z",
        "removed": {"user": "carol", "time": "2026-02-16T07:56:00Z", "how": "stageRemoved"}});
    promotion["metadata"]["annotations"]["audit.kubectl-promotion.dev/approvals"] =
        json!(all.to_string());
    env.put(
        world
            .objects
            .into_iter()
            .find(|o| o["kind"] == "ClusterPromotion")
            .unwrap(),
    );
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    for line in [
        "Last approval:  alice at 2026-02-16T07:40:00Z: \"CAB-7\" (reset by the webhook on \
         dave's update at 2026-02-16T07:55:00Z: spec.profileSpec changed, the new rollout needs a \
         new approval)\n",
        "  qa        approved   erin    2026-02-16T07:00:00Z   -\n",
        "  qa        removed    carol   2026-02-16T07:56:00Z   the update removed the stage\n",
        "  staging   removed    dave    2026-02-16T07:55:00Z   reset by the webhook: \
         spec.profileSpec changed, the new rollout needs a new approval\n",
    ] {
        assert!(t.contains(line), "{line:?} in:\n{t}");
    }

    // alice's approval in effect (its record is of the stored generation): how to withdraw it.
    let mut world = records(json!({"user": "alice", "groups": ["release-managers"],
                                   "time": "2026-02-16T07:40:00Z", "generation": 3}));
    world.find_mut("ClusterPromotion", GATE).unwrap()["spec"]["stages"][1]["trigger"]["manual"]
        ["approved"] = json!(true);
    env.put(
        world
            .objects
            .into_iter()
            .find(|o| o["kind"] == "ClusterPromotion")
            .unwrap(),
    );
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains(&format!(
            "     Revoke:         kubectl promotion approve {GATE} --stage staging --revoke\n"
        )),
        "{t}"
    );
}

/// A promotion window on the last stage delays only "complete": the deployed stage is said to be
/// deployed, not to wait.
#[test]
fn a_closed_window_on_the_last_stage_delays_only_complete() {
    let mut world = auto_rollout_two_clusters_each();
    let promotion = world
        .find_mut("ClusterPromotion", "kyverno-rollout-auto")
        .unwrap();
    promotion["status"]["stages"][2]["currentStatusDescription"] = json!(
        "Window Closed: Waiting for Next Schedule (2026-02-23T09:00:00Z) (2026-02-21T10:00:00Z)"
    );
    let env = Env::start(world);
    let t = env
        .run(&["describe", "kyverno-rollout-auto"])
        .expect(0)
        .stdout;
    assert!(
        stage_line(&t, "production")
            .ends_with("deployed; marked complete when the window opens at 2026-02-23T09:00:00Z"),
        "{t}"
    );
    assert!(
        t.contains("Completes:      promotion window opens at 2026-02-23T09:00:00Z"),
        "{t}"
    );
    assert!(!t.contains("Waits:"), "{t}");
    assert!(!t.contains("waiting for window"), "{t}");
}

/// promotion-controller's Lease as its leader renews it, last at `renewed`.
fn controller_lease(renewed: chrono::DateTime<chrono::Utc>) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
           "metadata": {"name": "promotion-controller", "namespace": "kubectl-promotion-system"},
           "spec": {"holderIdentity": "promotion-controller-7d9f_1", "leaseDurationSeconds": 15,
                    "renewTime": renewed.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()}})
}

/// When promotion-controller cannot act — not installed, no leader (its Lease not renewed), or
/// its writes refused (a `WriteBlocked` Warning) — describe's Phase and Next step say so and how
/// to fix it; with a leader and no refusal, nothing is said.
#[test]
fn describe_says_when_promotion_controller_cannot_act() {
    let controller_entry = json!({"manager": "promotion-controller", "operation": "Apply",
        "subresource": "status", "time": "2026-02-16T07:25:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:stages": {}}}});
    let mut world = example_world("kyverno-manual-gate.yaml");
    let promotion = world.find_mut("ClusterPromotion", GATE).unwrap();
    promotion["metadata"]["managedFields"] = json!([controller_entry]);
    let env = Env::start(world);
    let phase = |t: &str| header(t, "Phase:").to_string();
    let next = |t: &str| header(t, "Next step:").to_string();

    // No Lease, but promotion-controller wrote the status: it may run without leader
    // election, so nothing is claimed.
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert_eq!(phase(&t), "Phase:          awaiting approval", "{t}");
    // No Lease and nothing has reconciled a promotion (its managed fields show only the
    // author's apply): none runs.
    let mut fresh = example("payment-four-stages.yaml");
    fresh["metadata"]["managedFields"] = json!([{"manager": "kubectl-client-side-apply",
        "operation": "Update", "time": "2026-02-16T07:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {}}}]);
    env.put(fresh);
    let t = env
        .run(&["describe", "core-payment-processor-ci"])
        .expect(0)
        .stdout;
    assert_eq!(
        phase(&t),
        "Phase:          not started — promotion-controller absent: see Next step",
        "{t}"
    );
    assert!(
        next(&t).contains("no promotion-controller runs in kubectl-promotion-system"),
        "{t}"
    );

    // Stuck: the Lease was last renewed five minutes ago.
    let now = chrono::Utc::now();
    env.put(controller_lease(now - chrono::Duration::minutes(5)));
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        phase(&t).ends_with("promotion-controller stuck: see Next step"),
        "{t}"
    );
    assert!(
        next(&t).contains(
            "its Lease kubectl-promotion-system/promotion-controller was last renewed 5m ago by \
             promotion-controller-7d9f_1"
        ),
        "{t}"
    );
    let json: Value =
        serde_json::from_str(&env.run(&["describe", GATE, "-o", "json"]).expect(0).stdout)
            .expect("JSON");
    assert_eq!(json["reconcilerBlocked"]["kind"], "stuck", "{json}");

    // Leading, and nothing refused: the approval is the next step again.
    env.put(controller_lease(now));
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert_eq!(phase(&t), "Phase:          awaiting approval", "{t}");
    assert!(next(&t).contains("kubectl promotion approve"), "{t}");

    // Its writes refused a minute ago: blocked, with the server's words.
    env.put(json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "kyverno-rollout-man.blocked", "namespace": "default"},
        "involvedObject": {"apiVersion": "config.projectsveltos.io/v1beta1",
                           "kind": "ClusterPromotion", "name": GATE},
        "type": "Warning", "reason": "WriteBlocked", "count": 4,
        "message": "promotion-controller could not write: admission webhook \"validate.kubectl-promotion.dev\" denied the request",
        "source": {"component": "promotion-controller"},
        "lastTimestamp": (now - chrono::Duration::minutes(1)).format("%Y-%m-%dT%H:%M:%SZ").to_string()}));
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        phase(&t).ends_with("promotion-controller blocked: see Next step"),
        "{t}"
    );
    assert!(
        next(&t).contains("promotion-controller cannot write this promotion (refused ")
            && next(&t).contains(
                " ago, 4 time(s)): admission webhook \"validate.kubectl-promotion.dev\" denied"
            ),
        "{t}"
    );
    assert!(next(&t).contains("--controller-user"), "{t}");
}

/// `lastPromotionTime` is set when the first stage starts too: until a second stage is reached
/// describe calls it the rollout's start, not a promotion.
#[test]
fn the_rollout_start_is_not_called_a_promotion() {
    let env = Env::start(example_world("kyverno-failed-dev.yaml"));
    let t = env
        .run(&["describe", "kyverno-rollout-auto"])
        .expect(0)
        .stdout;
    assert!(t.contains("Rollout start:  "), "{t}");
    assert!(!t.contains("Last promotion:"), "{t}");
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(t.contains("Last promotion: "), "{t}");
}
