//! Crash safety, proven rather than asserted: one rollout — dev (auto), staging (manual), prod
//! (manual, its gate a sign-off), then deletion — run on a real kube-apiserver once without a
//! fault, then again with promotion-controller stopped at each of its writes in turn (the crash
//! injection of `controller/src/live/fault.rs`: `before:N`, the N-th write never sent, or
//! `after:N`, the N-th write applied by the API server and its answer never read). After each
//! stop a new controller takes over, as a restarted Pod would.
//!
//! Every run must end as the fault-free one does (the same status, profiles, annotations and
//! approvals, names aside) and hold, at every poll:
//! - no stage recorded deployed before the addon-controller double's log says it deployed that
//!   stage's profile (the double's log, not the controller's own rule);
//! - no gate passed without its own approval: prod is never reached before staging's approval
//!   was given, and the rollout never completes before prod's was — one approval opens one gate,
//!   once;
//! - no approval lost: each is given once, and the rollout still completes (a lost one would
//!   wait for ever, past the deadline).
//!
//! And every kind of write must have been a stop point at least once: the finalizer added and
//! removed, the approval's commit, the status, the committed step cleared, a profile applied and
//! deleted.
//!
//! Needs `KUBEBUILDER_ASSETS` (see `scenarios.rs`); without it (and without `CI=true`) the runs
//! are reported as ignored.

use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{json, Value};

use promotion_e2e::addon_double::AddonController;
use promotion_e2e::backend::{BackendKind, Cluster, SESSION_LABEL};
use promotion_e2e::controller_process::{eventually, ControllerProcess};
use promotion_e2e::envtest::objects::CLUSTER_PROFILE;
use promotion_e2e::envtest::{self, Gate, User};
use promotion_shared::model::PROMOTION_NAME_LABEL;
use promotion_shared::promoting::PROMOTING_ANNOTATION;
use promotion_shared::status::{descriptions, strip_timestamp};

/// How long one run may take, faults and restart included (a liveness bound, generous).
const DEADLINE: Duration = Duration::from_secs(120);

/// `controller/src/live/fault.rs`: the variable, and the exit status of a stop.
const FAULT_ENV: &str = "PROMOTION_CONTROLLER_FAULT";
const FAULT_EXIT: i32 = 86;

/// The writes every sweep must have stopped at (the `what` of the controller's writes).
const KINDS: [&str; 7] = [
    "adding the finalizer",
    "using the approval",
    "writing the status",
    "clearing the committed step",
    "applying ClusterProfile",
    "deleting a ClusterProfile",
    "removing the finalizer",
];

fn main() {
    let args = Arguments::from_args();
    let gate = envtest::gate();
    if let Gate::Skip(reason) = &gate {
        eprintln!("crash-at-every-write runs ignored: {reason}");
    }
    let skip = matches!(gate, Gate::Skip(_));
    let trials = [
        (
            "a_crash_before_any_write_leaves_a_rollout_the_next_controller_completes_alike",
            "before",
        ),
        (
            "a_crash_after_any_write_applied_leaves_a_rollout_the_next_controller_completes_alike",
            "after",
        ),
    ]
    .into_iter()
    .map(|(name, when)| {
        Trial::test(format!("envtest::{name}"), move || {
            let cluster =
                Cluster::new(BackendKind::Envtest).map_err(|e| Failed::from(e.to_string()))?;
            sweep(&cluster, when).map_err(Failed::from)
        })
        .with_ignored_flag(skip)
    })
    .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn e<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |err| format!("{what}: {err}")
}

/// The fault-free run, then one run per write position, up to two past the fault-free run's
/// last write.
fn sweep(cluster: &Cluster, when: &str) -> Result<(), String> {
    promotion_e2e::rollout::stage_clusters(cluster).map_err(e("creating the SveltosClusters"))?;
    cluster
        .install_plugin()
        .map_err(e("installing the plugin"))?;
    let baseline = run(cluster, &format!("{when}-base"), None)?;
    if baseline.stopped.is_some() {
        return Err("the fault-free run stopped".into());
    }
    // Positions past the fault-free run's last write too: a run's number of status writes
    // depends on when Sveltos' events arrive, so a position may name another write, or none.
    let last = baseline.writes + 2;
    let mut stops = Vec::new();
    // The last writes (the finalizer's removal, the committed step cleared) move by a position
    // or two between runs: their positions are run again, at most twice, while a kind of write
    // has not yet been a stop point.
    let tail = last.saturating_sub(8) + 1..=last;
    let again = |stops: &Vec<String>| KINDS.iter().any(|k| !stops.iter().any(|s| s.contains(k)));
    let positions: Vec<usize> = (1..=last).collect();
    let mut extra = 0;
    let mut queue: std::collections::VecDeque<usize> = positions.into_iter().collect();
    while let Some(n) = queue.pop_front() {
        if queue.is_empty() && extra < 2 && again(&stops) {
            extra += 1;
            queue.extend(tail.clone());
        }
        let fault = format!("{when}:{n}");
        let outcome = run(cluster, &format!("{when}{n}x{extra}"), Some(&fault))?;
        let Some(at) = outcome.stopped else {
            continue;
        };
        if outcome.settled != baseline.settled {
            return Err(format!(
                "stopped {at}: the rollout ended otherwise than without a crash\n\
                 without: {}\nwith:    {}",
                baseline.settled, outcome.settled
            ));
        }
        stops.push(at);
    }
    let missing: Vec<&str> = KINDS
        .iter()
        .copied()
        .filter(|k| !stops.iter().any(|s: &String| s.contains(k)))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no stop at a write of these kinds: {missing:?}; stops: {stops:#?}"
        ));
    }
    eprintln!(
        "{when}: {} stop points ({} writes without a fault), each completed alike",
        stops.len(),
        baseline.writes
    );
    Ok(())
}

struct Outcome {
    /// Where the injected fault stopped the controller (its log's words), if it did.
    stopped: Option<String>,
    /// The state once complete and settled, the promotion's name replaced by `P`.
    settled: String,
    /// How many writes the controller made, counted in a run without a fault (0 otherwise).
    writes: usize,
}

/// One run in progress: the controller of the moment, where the injected fault stopped it, and
/// the approvals given so far.
struct Run<'c> {
    cluster: &'c Cluster,
    addon: AddonController<'c>,
    name: String,
    kubeconfig: std::path::PathBuf,
    args: Vec<String>,
    fault: Option<String>,
    ctl: ControllerProcess,
    stopped: Option<String>,
    /// staging's and prod's approval given.
    approved: [bool; 2],
}

fn run(cluster: &Cluster, base: &str, fault: Option<&str>) -> Result<Outcome, String> {
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    let kubeconfig = cluster.kubeconfig(User::Admin);
    let args = ["--selector", selector.as_str(), "--resync-period", "1h"];
    let env: Vec<(&str, &str)> = fault.map(|f| (FAULT_ENV, f)).into_iter().collect();
    let mut ctl =
        ControllerProcess::start_with_env(&kubeconfig, &args, &env).map_err(e("controller"))?;
    if let Some(f) = fault {
        ctl.wait_line("the fault armed", DEADLINE, |l| {
            l.get("point").and_then(Value::as_str) == Some(f)
        })
        .map_err(|e| e.to_string())?;
    }
    let sign_off = json!({"manual": {}});
    let manifest =
        promotion_e2e::rollout::promotion(cluster, &format!("crash-{base}"), Some(sign_off));
    let name = manifest["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let file = cluster
        .write_manifest(&format!("{base}.yaml"), &manifest)
        .map_err(e("writing the manifest"))?;
    kubectl(cluster, &["apply", "-f", &file.to_string_lossy()])?;
    let mut run = Run {
        cluster,
        addon: AddonController::new(cluster),
        name,
        kubeconfig,
        args: args.iter().map(|a| a.to_string()).collect(),
        fault: fault.map(str::to_string),
        ctl,
        stopped: None,
        approved: [false; 2],
    };
    // Each step waits for the state the controller must reach, then plays what Sveltos or a
    // release manager does next.
    for stage in ["dev", "staging"] {
        run.until_profile(stage)?;
        run.addon.sync(true).map_err(e("addon double"))?;
    }
    run.until_awaiting_approval("staging")?;
    run.approve(0, "staging")?;
    run.until_profile("prod")?;
    run.addon.sync(true).map_err(e("addon double"))?;
    run.until_awaiting_approval("prod")?;
    run.approve(1, "prod")?;
    let done = run
        .until(
            "complete, the last step cleared and both approvals used",
            |_, p| p.is_some_and(|p| complete(p) && settled_now(p)),
        )?
        .ok_or("the promotion is gone")?;
    let settled = state(cluster, &run.name, &done)?;
    kubectl(
        cluster,
        &["delete", "clusterpromotion", &run.name, "--wait=false"],
    )?;
    let name = run.name.clone();
    run.until("deleted with its profiles", |cluster, p| {
        p.is_none() && profiles(cluster, &name).is_ok_and(|l| l.is_empty())
    })?;
    let writes = match fault {
        // Counted in the fault-free run only, where one controller made every write.
        Some(_) => 0,
        None => {
            // Its last write is the finalizer's removal: once that line is read, so are the
            // others.
            run.ctl
                .wait_line("the finalizer removed", DEADLINE, |l| {
                    l.get("message").and_then(Value::as_str) == Some("finalizer removed")
                })
                .map_err(|e| e.to_string())?;
            run.ctl
                .log()
                .lines()
                .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["message"] == "write"))
                .count()
        }
    };
    Ok(Outcome {
        stopped: run.stopped,
        settled,
        writes,
    })
}

impl Run<'_> {
    /// Wait until `check` holds of the cluster and the promotion as stored (`None`: gone), and
    /// return that promotion. On every look: a controller the fault stopped is replaced by a new
    /// one, and the invariants are checked.
    fn until(
        &mut self,
        what: &str,
        check: impl Fn(&Cluster, Option<&Value>) -> bool,
    ) -> Result<Option<Value>, String> {
        let waited = eventually(what, DEADLINE, || match self.look(&check) {
            Ok(Some(found)) => Some(Ok(found)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        });
        match waited {
            Ok(result) => result,
            Err(timeout) => Err(format!(
                "{timeout} ({:?}, stopped {:?}); promotion: {}\ncontroller log:\n{}",
                self.fault,
                self.stopped,
                self.cluster
                    .promotion(&self.name)
                    .ok()
                    .flatten()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                self.ctl.log()
            )),
        }
    }

    /// One look: `Some(promotion)` when `check` holds.
    fn look(
        &mut self,
        check: &impl Fn(&Cluster, Option<&Value>) -> bool,
    ) -> Result<Option<Option<Value>>, String> {
        self.replace_a_stopped_controller()?;
        let p = self
            .cluster
            .promotion(&self.name)
            .map_err(e("reading the promotion"))?;
        if let Some(p) = &p {
            deployed_only_after_the_double(&self.addon, &self.name, p)?;
            if current_stage(p) == "prod" && !self.approved[0] {
                return Err(format!(
                    "{}: prod reached without staging's approval",
                    self.name
                ));
            }
            if complete(p) && !self.approved[1] {
                return Err(format!("{}: completed without prod's approval", self.name));
            }
        }
        Ok(check(self.cluster, p.as_ref()).then_some(p))
    }

    /// The controller stopped at the injected fault (and only there, once): a new one, as a
    /// restarted Pod.
    fn replace_a_stopped_controller(&mut self) -> Result<(), String> {
        let Some(status) = self.ctl.exited() else {
            return Ok(());
        };
        if self.stopped.is_some() || self.fault.is_none() {
            return Err(format!(
                "{}: the controller ended ({status}) without a fault to stop at; its log:\n{}",
                self.name,
                self.ctl.log()
            ));
        }
        let line = self
            .ctl
            .wait_line("the fault's line", Duration::from_secs(5), |l| {
                l.get("message").and_then(Value::as_str)
                    == Some("fault injected: the process stops")
            })
            .map_err(|e| e.to_string())?;
        if status.code() != Some(FAULT_EXIT) {
            return Err(format!("{}: exit {status} after the fault", self.name));
        }
        self.stopped = Some(line["at"].as_str().unwrap_or_default().to_string());
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.ctl = ControllerProcess::start(&self.kubeconfig, &args).map_err(e("controller"))?;
        Ok(())
    }

    fn until_profile(&mut self, stage: &str) -> Result<(), String> {
        let profile = format!("{}-{stage}", self.name);
        self.until(&format!("{stage}'s profile applied"), |cluster, _| {
            matches!(cluster.get(CLUSTER_PROFILE, None, &profile), Ok(Some(_)))
        })?;
        Ok(())
    }

    fn until_awaiting_approval(&mut self, stage: &str) -> Result<(), String> {
        self.until(&format!("{stage} awaiting approval"), |_, p| {
            p.is_some_and(|p| {
                current_stage(p) == stage
                    && description(p, stage).starts_with(descriptions::AWAITING_APPROVAL)
            })
        })?;
        Ok(())
    }

    /// Approve `stage` (gate `gate`: 0 staging, 1 prod), once.
    fn approve(&mut self, gate: usize, stage: &str) -> Result<(), String> {
        kubectl(
            self.cluster,
            &["promotion", "approve", &self.name, "--stage", stage],
        )?;
        self.approved[gate] = true;
        Ok(())
    }
}

fn kubectl(cluster: &Cluster, args: &[&str]) -> Result<String, String> {
    cluster.kubectl_ok(User::Admin, args)
}

fn current_stage(promotion: &Value) -> &str {
    promotion
        .pointer("/status/currentStageName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn stage<'p>(promotion: &'p Value, name: &str) -> Option<&'p Value> {
    promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)?
        .iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
}

fn description<'p>(promotion: &'p Value, name: &str) -> &'p str {
    stage(promotion, name)
        .and_then(|s| s.get("currentStatusDescription"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn complete(promotion: &Value) -> bool {
    current_stage(promotion) == "prod"
        && description(promotion, "prod").starts_with(descriptions::PROMOTED)
}

/// Complete, and nothing of the last step left to do: the committed step cleared and both
/// approvals used.
fn settled_now(promotion: &Value) -> bool {
    let annotated = promotion
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PROMOTING_ANNOTATION))
        .is_some();
    let approvals_left = promotion
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .is_some_and(|l| {
            l.iter()
                .any(|s| s.pointer("/trigger/manual/approved").is_some())
        });
    !annotated && !approvals_left
}

/// A stage the status records deployed (`lastSuccessfulAppliedTime`) must be one the double
/// reported it deployed.
fn deployed_only_after_the_double(
    addon: &AddonController,
    name: &str,
    promotion: &Value,
) -> Result<(), String> {
    let log = addon.deployed();
    for s in promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if s.get("lastSuccessfulAppliedTime").is_none() {
            continue;
        }
        let stage = s["name"].as_str().unwrap_or_default();
        let profile = format!("{name}-{stage}");
        if !log.iter().any(|d| d.profile == profile) {
            return Err(format!(
                "stage {stage} recorded deployed before the addon-controller double deployed \
                 {profile}: {s}"
            ));
        }
    }
    Ok(())
}

fn profiles(cluster: &Cluster, name: &str) -> Result<Vec<Value>, String> {
    Ok(cluster
        .list(CLUSTER_PROFILE, None)
        .map_err(e("listing ClusterProfiles"))?
        .into_iter()
        .filter(|p| {
            p.pointer("/metadata/labels")
                .and_then(|l| l.get(PROMOTION_NAME_LABEL))
                .and_then(Value::as_str)
                == Some(name)
        })
        .collect())
}

/// What a settled rollout left, without times, versions and UIDs, the promotion's name as `P`:
/// the status' stages and their words, the promotion's annotations and finalizers, its stages'
/// triggers, and its profiles' names, labels, annotations, owners and specs.
fn state(cluster: &Cluster, name: &str, promotion: &Value) -> Result<String, String> {
    let stages: Vec<Value> = promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| {
            json!({
                "name": s["name"],
                "description": strip_timestamp(s["currentStatusDescription"].as_str().unwrap_or("")),
                "failureMessage": s.get("failureMessage"),
                "deployed": s.get("lastSuccessfulAppliedTime").is_some(),
            })
        })
        .collect();
    let keys = |v: Option<&Value>| -> Vec<String> {
        let mut k: Vec<String> = v
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        k.retain(|k| k != "kubectl.kubernetes.io/last-applied-configuration");
        k.sort();
        k
    };
    let mut profiles: Vec<Value> = profiles(cluster, name)?
        .into_iter()
        .map(|p| {
            json!({
                "name": p["metadata"]["name"],
                "labels": p["metadata"]["labels"],
                "annotations": keys(p.pointer("/metadata/annotations")),
                "owners": p.pointer("/metadata/ownerReferences").and_then(Value::as_array)
                    .map(|o| o.iter().map(|r| json!([r["kind"], r["name"]])).collect::<Vec<_>>()),
                "spec": p["spec"],
            })
        })
        .collect();
    profiles.sort_by_key(|p| p["name"].to_string());
    let state = json!({
        "currentStageName": promotion.pointer("/status/currentStageName"),
        "stages": stages,
        "annotations": keys(promotion.pointer("/metadata/annotations")),
        "finalizers": promotion.pointer("/metadata/finalizers"),
        "triggers": promotion.pointer("/spec/stages").and_then(Value::as_array)
            .map(|l| l.iter().map(|s| s["trigger"].clone()).collect::<Vec<_>>()),
        "profiles": profiles,
    });
    Ok(state.to_string().replace(name, "P"))
}
