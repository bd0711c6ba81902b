//! The command line: the program, its global flags, and its commands. Each command's arguments,
//! help text and examples live beside the command (`commands/<name>.rs`), as Argo Rollouts keeps
//! `cmd/<command>/`; the program is named `kubectl promotion` because kubectl runs it as a plugin.

use clap::{Parser, Subcommand};

use crate::cluster::connection::ConnectionFlags;
use crate::commands::{
    abort::AbortArgs, abort::RetryArgs, abort::RollbackArgs, approve::ApproveArgs,
    completion::CompletionArgs, dashboard::DashboardArgs, describe::DescribeArgs, diff::DiffArgs,
    health::HealthArgs, history::HistoryArgs, lint::LintArgs, list::ListArgs, pause::PauseArgs,
    pause::ResumeArgs, plan::PlanArgs, undo::UndoArgs, version::VersionArgs, version::PROGRAM,
    wait::WaitArgs,
};
use crate::render::ColorChoice;

const ABOUT: &str = "Inspect, approve, pause and diff Sveltos ClusterPromotions";

const LONG_ABOUT: &str = "\
Inspect, approve, pause and diff Sveltos ClusterPromotions (config.projectsveltos.io/v1beta1).

A ClusterPromotion rolls one ClusterProfile spec through ordered stages of clusters. This plugin
shows where each rollout stands, approves the right manual gate without being able to hit the
wrong one, pauses a rollout in an emergency, shows what the next stage will receive, and waits
with honest exit codes.

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

  # Every rollout of it so far, and what each one changed
  kubectl promotion history kyverno-rollout

  # Approve the stage that waits for approval, and say why
  kubectl promotion approve kyverno-rollout --reason \"CAB-1234 signed off\"

  # Emergency brake: no stage starts and no approval is used until it is resumed
  kubectl promotion pause kyverno-rollout --reason \"INC-4711\"
  kubectl promotion resume kyverno-rollout

  # Abort the current rollout, or set its stages back to the last completed revision
  kubectl promotion abort kyverno-rollout --reason \"INC-4711\"
  kubectl promotion rollback kyverno-rollout --reason \"INC-4711\"
  kubectl promotion retry kyverno-rollout

  # Set the spec back to the revision before: a new rollout through every gate
  kubectl promotion undo kyverno-rollout

  # In CI: block until the rollout completes (exit 2 if it fails, 3 on timeout)
  kubectl promotion wait kyverno-rollout --for=complete --timeout=30m

  # Every pipeline live in the browser, with approve and steer
  kubectl promotion dashboard --open

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
    version = env!("KUBECTL_PROMOTION_VERSION_LINE"),
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

/// The commands; each one's help and examples are on its arguments struct.
#[derive(Subcommand, Debug)]
pub enum Command {
    Describe(DescribeArgs),
    List(ListArgs),
    Approve(ApproveArgs),
    Pause(PauseArgs),
    Resume(ResumeArgs),
    Abort(AbortArgs),
    Rollback(RollbackArgs),
    Retry(RetryArgs),
    Undo(UndoArgs),
    Diff(DiffArgs),
    History(HistoryArgs),
    Wait(WaitArgs),
    Dashboard(DashboardArgs),
    Completion(CompletionArgs),
    Version(VersionArgs),
    Lint(LintArgs),
    Health(HealthArgs),
    Plan(PlanArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::DryRun;
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

    /// Whitespace collapsed, so that a phrase matches across the help's line breaks.
    fn words(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn help_states_every_exit_status() {
        use crate::error::exit;
        let tables: [(&str, &[exit::Status]); 12] = [
            ("describe", exit::describe::STATUSES),
            ("approve", exit::approve::STATUSES),
            ("pause", exit::pause::STATUSES),
            ("resume", exit::resume::STATUSES),
            ("abort", exit::abort::STATUSES),
            ("rollback", exit::rollback::STATUSES),
            ("retry", exit::retry::STATUSES),
            ("undo", exit::undo::STATUSES),
            ("diff", exit::diff::STATUSES),
            ("wait", exit::wait::STATUSES),
            ("health", exit::health::STATUSES),
            ("plan", exit::plan::STATUSES),
        ];
        let mut cmd = Cli::command();
        for (name, statuses) in tables {
            let sub = cmd.find_subcommand_mut(name).unwrap();
            let help = words(&sub.render_long_help().to_string());
            for s in statuses {
                assert!(
                    help.contains(&words(s.help)),
                    "{name} --help does not say {:?}",
                    s.help
                );
                // The phrase names its own code ("2 …", or "exit status: 0;", or ">1: error").
                let named =
                    s.help
                        .split(|c: char| !c.is_ascii_digit() && c != '>')
                        .any(|w| match w.strip_prefix('>') {
                            Some(n) => n.parse::<u8>().is_ok_and(|n| s.code > n),
                            None => w.parse::<u8>() == Ok(s.code),
                        });
                assert!(named, "{name}: {:?} does not name exit {}", s.help, s.code);
            }
        }
    }

    #[test]
    fn lint_exits_with_its_table() {
        use crate::commands::lint::{exit_status, lint_bytes};
        use crate::error::exit::lint;
        let status = |bytes: &str| {
            let (located, tally) = lint_bytes("t.yaml", bytes.as_bytes());
            (
                exit_status(&tally, &located, false),
                exit_status(&tally, &located, true),
            )
        };
        // An empty file holds no ClusterPromotion: nothing was checked, which is no pass.
        assert_eq!(status(""), (lint::NOTHING_CHECKED, lint::NOTHING_CHECKED));
        assert_eq!(
            status("apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\nmetadata: {name: p}\nspec: {}\n"),
            (lint::FINDINGS, lint::FINDINGS)
        );
        assert_eq!(
            status("a: [unclosed\n"),
            (lint::INPUT_ERROR, lint::INPUT_ERROR)
        );
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
