//! Command-line definition. Every command documents itself with examples; the program is named
//! `kubectl promotion` because kubectl runs it as a plugin.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands::lint::LintArgs;
use crate::connection::ConnectionFlags;
use crate::duration;

pub const PROGRAM: &str = "kubectl promotion";

const ABOUT: &str = "Inspect, approve and diff Sveltos ClusterPromotions";

const LONG_ABOUT: &str = "\
Inspect, approve and diff Sveltos ClusterPromotions (config.projectsveltos.io/v1beta1).

A ClusterPromotion rolls one ClusterProfile spec through ordered stages of clusters. This plugin
shows where each rollout stands, approves the right manual gate without being able to hit the
wrong one, shows what the next stage will receive, and waits with honest exit codes.

ClusterPromotion is cluster-scoped: -n/--namespace and -A/--all-namespaces are accepted for
kubectl compatibility and ignored. Flags go after `promotion` (kubectl does not pass flags placed
before a plugin name).";

const AFTER_HELP: &str = "\
Examples:
  # Where does every rollout stand?
  kubectl promotion list

  # One rollout, stage by stage, with its clusters, approvals and events
  kubectl promotion describe kyverno-rollout

  # What will production receive when staging is promoted?
  kubectl promotion diff kyverno-rollout --stage staging

  # Approve the stage that waits for approval, and say why
  kubectl promotion approve kyverno-rollout --reason \"CAB-1234 signed off\"

  # In CI: block until the rollout completes (exit 2 if it fails, 3 on timeout)
  kubectl promotion wait kyverno-rollout --for=complete --timeout=30m

Environment:
  KUBECONFIG              colon-separated kubeconfig files, merged as kubectl does
  NO_COLOR, TERM=dumb     turn colour and symbols off (also --no-color)
  KUBECTL_EXTERNAL_DIFF   program used by `diff -f` instead of the built-in unified diff";

#[derive(Parser, Debug)]
#[command(
    name = PROGRAM,
    bin_name = PROGRAM,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    version,
    subcommand_required = true,
    arg_required_else_help = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub connection: ConnectionFlags,
    /// When to use colour and symbols: auto (on a terminal), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto,
          value_name = "WHEN", help_heading = "Display")]
    pub color: ColorChoice,
    /// Same as --color=never
    #[arg(long, global = true, help_heading = "Display")]
    pub no_color: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    #[command(
        about = "Show a ClusterPromotion's pipeline: stages, clusters, approvals and events",
        long_about = "\
Show a ClusterPromotion's pipeline at a glance: one block per stage in order with its derived
state (not started, provisioning, provisioned, soaking until T, running health checks, waiting
for window until T, awaiting approval, approved and pending, promoted, failed), selector, trigger,
the matching clusters with their per-feature status (from the generated ClusterProfile
<promotion>-<stage> and its ClusterSummaries), times and messages; then who approved what and
who last changed the spec (the admission webhook's audit annotations), and the object's Events.

With -f, describes a manifest offline (no cluster needed; cluster status is then unknown).
With -o json|yaml, prints the computed model instead (field reference: plugin/docs/output.md).",
        after_help = "\
Examples:
  kubectl promotion describe kyverno-rollout
  kubectl promotion describe kyverno-rollout --all-clusters
  kubectl promotion describe -f rollout.yaml            # offline, no cluster
  kubectl promotion describe kyverno-rollout -o json | jq '.stages[] | {name, state}'
  kubectl promotion describe kyverno-rollout -w         # follow until complete or failed

Exit status: 0; 1 on error. With -w: 0 when the pipeline completes, 2 when it fails."
    )]
    Describe(DescribeArgs),

    #[command(
        visible_alias = "get",
        about = "List ClusterPromotions with their current stage and state",
        after_help = "\
Columns: NAME, STAGES (reached/total), CURRENT (stage), STATE (pipeline phase),
AWAITING-APPROVAL (the gate to approve, as stage → next), AGE. -o wide adds the frontier
stage's message and the last promotion time.

Examples:
  kubectl promotion list
  kubectl promotion get -l team=platform -o wide
  kubectl promotion list -o name | xargs -n1 kubectl promotion describe
  kubectl promotion list -o json | jq '.items[] | select(.phase == \"awaitingApproval\") | .name'"
    )]
    List(ListArgs),

    #[command(
        about = "Approve a stage's manual gate so the pipeline promotes to the next stage",
        long_about = "\
Approve a stage's manual gate (spec.stages[i].trigger.manual.approved = true), which lets the
pipeline promote from that stage to the next one.

Without --stage, approves the stage that is awaiting approval. Refuses an unknown stage, a stage
whose trigger is auto or absent, and the last stage, listing the stages that can be approved.
Approving a stage the pipeline has not reached yet needs --pre-approve. Approving an already
approved stage changes nothing.

The write is a single JSON Patch guarded by `test` operations on the stage name at its index and
on the stage's current manual trigger, so it can never approve a different stage or undo a
concurrent change; on a conflict it re-reads and retries (bounded). No other field is touched
(automaticReset stays as it is). --reason travels in the same patch as the annotation
kubectl-promotion.dev/approval-reason, which the admission webhook records with your identity.",
        after_help = "\
Examples:
  kubectl promotion approve kyverno-rollout
  kubectl promotion approve kyverno-rollout --stage staging --reason \"CAB-1234\"
  kubectl promotion approve kyverno-rollout --stage staging --dry-run=server -o yaml
  kubectl promotion approve kyverno-rollout --stage staging --pre-approve
  kubectl promotion approve kyverno-rollout --wait --timeout=10m

Exit status: 0 approved (or already approved); 1 refused or error; with --wait, 2 if the pipeline
fails and 3 if the next stage has not started within --timeout."
    )]
    Approve(ApproveArgs),

    #[command(
        about = "Show what a manifest change or a promotion would change",
        long_about = "\
Two comparisons, with `kubectl diff` conventions (exit 0: no differences, 1: differences,
>1: error; KUBECTL_EXTERNAL_DIFF honoured; coloured unified YAML on a terminal):

  diff [NAME] -f FILE   the live ClusterPromotion against FILE as the server would store it
                        (a server-side dry run, so defaults and the admission webhook's
                        mutations show), then the consequences: whether the pipeline restarts
                        from the first stage, which approvals the webhook resets, stages added
                        or removed.
  diff NAME --stage S   what promoting past stage S changes at the next stage: the ClusterProfile
                        spec deployed at S against the one at the next stage, leaving out the
                        stage selector and the post-delay health checks Sveltos appends.",
        after_help = "\
Examples:
  kubectl promotion diff -f rollout.yaml
  kubectl promotion diff kyverno-rollout -f rollout.yaml
  KUBECTL_EXTERNAL_DIFF=\"colordiff -N -u\" kubectl promotion diff -f rollout.yaml
  kubectl promotion diff kyverno-rollout --stage staging"
    )]
    Diff(DiffArgs),

    #[command(
        about = "Wait until a pipeline completes, awaits approval, or reaches a stage",
        after_help = "\
Conditions:
  --for=complete      the last stage is done
  --for=approval      a stage waits for manual approval (to notify an approver from CI)
  --for=stage=NAME    the pipeline has reached stage NAME

Exit status: 0 the condition holds; 2 the pipeline failed first; 3 the timeout elapsed;
1 any other error. Follows watch events (re-listing when a watch drops), not polling.

Examples:
  kubectl promotion wait kyverno-rollout --for=complete --timeout=30m
  kubectl promotion wait kyverno-rollout --for=approval --timeout=1h && notify-approvers
  kubectl promotion wait kyverno-rollout --for=stage=production --timeout=0   # check once"
    )]
    Wait(WaitArgs),

    #[command(
        about = "Print a shell completion script (bash, zsh, fish) or the kubectl shim",
        long_about = "\
Print a shell completion script. Candidates (commands, flags, promotion names and stage names from
the cluster) come from the hidden `__complete` command, which speaks Cobra's protocol, so the same
binary also completes `kubectl promotion …` once the kubectl shim is installed.",
        after_help = "\
Examples:
  # bash (current shell; add to ~/.bashrc to keep)
  source <(kubectl-promotion completion bash)

  # zsh
  kubectl-promotion completion zsh > \"${fpath[1]}/_kubectl-promotion\"

  # fish
  kubectl-promotion completion fish > ~/.config/fish/completions/kubectl-promotion.fish

  # `kubectl promotion <TAB>` (kubectl >= 1.26 runs kubectl_complete-promotion from PATH)
  kubectl-promotion completion kubectl-shim > ~/bin/kubectl_complete-promotion
  chmod +x ~/bin/kubectl_complete-promotion"
    )]
    Completion(CompletionArgs),

    #[command(
        about = "Print the plugin version, git commit and target",
        after_help = "\
Examples:
  kubectl promotion version
  kubectl promotion version --short
  kubectl promotion version -o json"
    )]
    Version(VersionArgs),

    #[command(
        about = "Check ClusterPromotion manifests offline (schema, CEL, Lua, schedules)",
        after_help = "\
Examples:
  kubectl promotion lint -f rollout.yaml
  kubectl promotion lint -f manifests/"
    )]
    Lint(LintArgs),

    Plan(crate::commands::plan::PlanArgs),
}

#[derive(Args, Debug)]
pub struct DescribeArgs {
    /// ClusterPromotion name (omit with -f)
    #[arg(value_name = "NAME", required_unless_present = "filename")]
    pub name: Option<String>,
    /// Describe the ClusterPromotion in this manifest offline ("-" reads stdin)
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "watch"
    )]
    pub filename: Option<PathBuf>,
    /// Output format: the computed model as json or yaml (default: human-readable)
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ModelFormat>,
    /// Keep watching: redraw in place on a terminal, print changes otherwise; ends when the
    /// pipeline completes or fails
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// List every cluster of every stage (default: the ones not provisioned, then a count)
    #[arg(long)]
    pub all_clusters: bool,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Label selector to filter ClusterPromotions (e.g. team=platform,env!=dev)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ListFormat>,
    /// Do not print the header row
    #[arg(long)]
    pub no_headers: bool,
}

#[derive(Args, Debug)]
pub struct ApproveArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Stage whose gate to approve (default: the stage awaiting approval)
    #[arg(long, value_name = "STAGE")]
    pub stage: Option<String>,
    /// Why; recorded with your identity by the admission webhook
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// none: approve; client: show the patch without sending it; server: let the server
    /// validate and show the result without storing it
    #[arg(long, value_enum, value_name = "MODE", default_value_t = DryRun::None,
          num_args = 0..=1, require_equals = true, default_missing_value = "client")]
    pub dry_run: DryRun,
    /// Allow approving a stage the pipeline has not reached yet
    #[arg(long)]
    pub pre_approve: bool,
    /// Wait until the next stage has started
    #[arg(long)]
    pub wait: bool,
    /// With --wait: how long to wait (e.g. 10m)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration::parse_flag,
          requires = "wait")]
    pub timeout: Duration,
    /// Print the object as stored by the server instead of the confirmation
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ObjectFormat>,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// ClusterPromotion name (taken from FILE when omitted with -f)
    #[arg(value_name = "NAME", required_unless_present = "filename")]
    pub name: Option<String>,
    /// Manifest to compare with the live object ("-" reads stdin)
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "stage"
    )]
    pub filename: Option<PathBuf>,
    /// Show what promoting past this stage changes at the next stage
    #[arg(long, value_name = "STAGE", requires = "name")]
    pub stage: Option<String>,
}

#[derive(Args, Debug)]
pub struct WaitArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Condition: complete, approval, or stage=NAME
    #[arg(long = "for", value_name = "CONDITION", value_parser = parse_condition)]
    pub condition: WaitFor,
    /// How long to wait (e.g. 30s, 10m, 1h); 0 checks once
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration::parse_flag)]
    pub timeout: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitFor {
    Complete,
    Approval,
    Stage(String),
}

impl std::fmt::Display for WaitFor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitFor::Complete => write!(f, "complete"),
            WaitFor::Approval => write!(f, "approval"),
            WaitFor::Stage(s) => write!(f, "stage={s}"),
        }
    }
}

fn parse_condition(text: &str) -> Result<WaitFor, String> {
    match text {
        "complete" | "completed" => Ok(WaitFor::Complete),
        "approval" | "awaiting-approval" => Ok(WaitFor::Approval),
        _ => match text.strip_prefix("stage=") {
            Some(s) if !s.is_empty() => Ok(WaitFor::Stage(s.to_string())),
            _ => Err("expected complete, approval or stage=NAME".into()),
        },
    }
}

#[derive(Args, Debug)]
pub struct CompletionArgs {
    /// Shell, or kubectl-shim for the kubectl_complete-promotion executable
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    /// The `kubectl_complete-promotion` script kubectl runs to complete `kubectl promotion …`
    KubectlShim,
}

#[derive(Args, Debug)]
pub struct VersionArgs {
    /// Print only the version number
    #[arg(long)]
    pub short: bool,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ModelFormat>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelFormat {
    Json,
    Yaml,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Json,
    Yaml,
    Name,
    Wide,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ObjectFormat {
    Json,
    Yaml,
    Name,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    None,
    Client,
    Server,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_visible_command_has_examples() {
        let cmd = Cli::command();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let after = sub
                .get_after_help()
                .map(|s| s.to_string())
                .unwrap_or_default();
            assert!(
                after.contains("Examples:") && after.contains("kubectl"),
                "{} has no examples",
                sub.get_name()
            );
        }
    }

    #[test]
    fn conditions_parse() {
        assert_eq!(parse_condition("complete"), Ok(WaitFor::Complete));
        assert_eq!(parse_condition("approval"), Ok(WaitFor::Approval));
        assert_eq!(
            parse_condition("stage=prod"),
            Ok(WaitFor::Stage("prod".into()))
        );
        assert!(parse_condition("stage=").is_err());
        assert!(parse_condition("ready").is_err());
    }

    #[test]
    fn connection_flags_work_after_the_subcommand() {
        let cli = Cli::try_parse_from([
            "kubectl-promotion",
            "describe",
            "x",
            "--context",
            "c",
            "-n",
            "ignored",
            "--as-group",
            "a",
            "--as-group",
            "b",
        ])
        .unwrap();
        assert_eq!(cli.connection.context.as_deref(), Some("c"));
        assert_eq!(cli.connection.as_group, vec!["a", "b"]);
    }

    #[test]
    fn dry_run_forms() {
        let parse = |args: &[&str]| {
            let mut v = vec!["kubectl-promotion", "approve", "p"];
            v.extend_from_slice(args);
            match Cli::try_parse_from(v).unwrap().command {
                Command::Approve(a) => a.dry_run,
                _ => unreachable!(),
            }
        };
        assert_eq!(parse(&[]), DryRun::None);
        assert_eq!(parse(&["--dry-run"]), DryRun::Client);
        assert_eq!(parse(&["--dry-run=server"]), DryRun::Server);
    }
}
