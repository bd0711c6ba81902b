//! Cobra's `__complete` protocol, which kubectl uses for plugins (through the
//! `kubectl_complete-promotion` shim) and our shell scripts use too.
//!
//! Request: `kubectl-promotion __complete WORD… PARTIAL` (the words after the program name; the
//! last one is being completed, possibly empty). Response on stdout: one candidate per line,
//! optionally `\t`description, then `:<directive>`. Directives are bit flags: 1 error,
//! 2 no space after, 4 no file completion.

use std::time::Duration;

use clap::{Arg, Command, Parser};

use promotion_shared::gate::approval_target;
use promotion_shared::pipeline::{Phase, Pipeline, StageView};

use crate::cluster::connection::{self, ConnectionFlags};
use crate::cluster::kube_client::Kube;
use crate::view;

pub const ERROR: u8 = 1;
pub const NO_SPACE: u8 = 2;
pub const NO_FILE_COMP: u8 = 4;

/// Cluster look-ups during completion must never hang a prompt.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Default, PartialEq)]
pub struct Answer {
    pub candidates: Vec<(String, String)>,
    pub directive: u8,
}

impl Answer {
    fn none() -> Answer {
        Answer {
            candidates: Vec::new(),
            directive: NO_FILE_COMP,
        }
    }

    fn files() -> Answer {
        Answer {
            candidates: Vec::new(),
            directive: 0,
        }
    }

    fn of(items: Vec<(String, String)>, prefix: &str) -> Answer {
        Answer {
            candidates: items
                .into_iter()
                .filter(|(v, _)| v.starts_with(prefix))
                .collect(),
            directive: NO_FILE_COMP,
        }
    }

    pub fn render(&self, descriptions: bool) -> String {
        let mut out = String::new();
        for (value, desc) in &self.candidates {
            out.push_str(value);
            if descriptions && !desc.is_empty() {
                out.push('\t');
                out.push_str(&desc.replace(['\n', '\t'], " "));
            }
            out.push('\n');
        }
        out.push_str(&format!(":{}\n", self.directive));
        out
    }
}

fn directive_name(d: u8) -> String {
    let mut names = Vec::new();
    if d == 0 {
        names.push("ShellCompDirectiveDefault");
    }
    if d & ERROR != 0 {
        names.push("ShellCompDirectiveError");
    }
    if d & NO_SPACE != 0 {
        names.push("ShellCompDirectiveNoSpace");
    }
    if d & NO_FILE_COMP != 0 {
        names.push("ShellCompDirectiveNoFileComp");
    }
    names.join(", ")
}

/// What the words say: the subcommand reached, its positionals, the flag tokens seen, and the
/// flag (if any) whose value is being completed.
struct Parsed<'a> {
    cmd: &'a Command,
    positionals: Vec<String>,
    flag_tokens: Vec<String>,
    stage_flag: Option<String>,
}

fn find_long<'a>(cmd: &'a Command, name: &str) -> Option<&'a Arg> {
    cmd.get_arguments().find(|a| {
        a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|al| al.contains(&name))
    })
}

fn find_short(cmd: &Command, c: char) -> Option<&Arg> {
    cmd.get_arguments().find(|a| a.get_short() == Some(c))
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values() && arg.get_num_args().is_none_or(|n| n.min_values() > 0)
}

fn parse<'a>(root: &'a Command, words: &[String]) -> Parsed<'a> {
    let mut p = Parsed {
        cmd: root,
        positionals: Vec::new(),
        flag_tokens: Vec::new(),
        stage_flag: None,
    };
    let mut i = 0;
    let mut only_positionals = false;
    while i < words.len() {
        let w = &words[i];
        if only_positionals || w == "-" || !w.starts_with('-') {
            if w == "--" && !only_positionals {
                only_positionals = true;
            } else if p.positionals.is_empty() && p.cmd.has_subcommands() {
                match p.cmd.find_subcommand(w) {
                    Some(sub) => p.cmd = sub,
                    None => p.positionals.push(w.clone()),
                }
            } else {
                p.positionals.push(w.clone());
            }
            i += 1;
            continue;
        }
        let (arg, inline) = if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            (find_long(p.cmd, name), value)
        } else {
            let mut chars = w[1..].chars();
            let c = chars.next().unwrap_or(' ');
            let rest: String = chars.collect();
            let arg = find_short(p.cmd, c);
            let inline = (!rest.is_empty()).then(|| rest.trim_start_matches('=').to_string());
            (arg, inline)
        };
        let mut value = inline.clone();
        if let Some(a) = arg {
            if takes_value(a) && inline.is_none() && i + 1 < words.len() {
                value = Some(words[i + 1].clone());
                i += 1;
            }
            if a.is_global_set() {
                p.flag_tokens
                    .push(format!("--{}", a.get_long().unwrap_or_default()));
                if let Some(v) = &value {
                    p.flag_tokens.push(v.clone());
                }
            }
            if a.get_id() == "stage" {
                p.stage_flag = value;
            }
        }
        i += 1;
    }
    p
}

/// Connection flags typed so far, so that look-ups use the same cluster the command would.
fn connection_from(tokens: &[String]) -> ConnectionFlags {
    #[derive(Parser)]
    struct OnlyConnection {
        #[command(flatten)]
        connection: ConnectionFlags,
    }
    let mut argv = vec!["kubectl-promotion".to_string()];
    argv.extend(tokens.iter().cloned());
    OnlyConnection::try_parse_from(argv)
        .map(|o| o.connection)
        .unwrap_or_default()
}

/// Answer a completion request against the program's command definition `root`.
pub async fn answer(root: &Command, words: &[String]) -> Answer {
    let mut root = root.clone();
    root.build();
    let (to_complete, before) = match words.split_last() {
        Some((last, rest)) => (last.clone(), rest.to_vec()),
        None => (String::new(), Vec::new()),
    };
    let parsed = parse(&root, &before);
    let conn = connection_from(&parsed.flag_tokens);

    // `--flag=partial`
    if let Some(long) = to_complete.strip_prefix("--") {
        if let Some((name, partial)) = long.split_once('=') {
            let Some(arg) = find_long(parsed.cmd, name) else {
                return Answer::none();
            };
            let mut a = flag_values(arg, partial, &parsed, &conn).await;
            for c in &mut a.candidates {
                c.0 = format!("--{name}={}", c.0);
            }
            return a;
        }
    }
    // The previous word is a flag waiting for its value.
    if let Some(prev) = before.last() {
        let arg = if let Some(long) = prev.strip_prefix("--") {
            (!long.contains('='))
                .then(|| find_long(parsed.cmd, long))
                .flatten()
        } else if prev.len() == 2 && prev.starts_with('-') {
            prev.chars().nth(1).and_then(|c| find_short(parsed.cmd, c))
        } else {
            None
        };
        if let Some(arg) = arg.filter(|a| takes_value(a)) {
            return flag_values(arg, &to_complete, &parsed, &conn).await;
        }
    }
    if to_complete.starts_with('-') {
        return flags(parsed.cmd, &to_complete);
    }
    if parsed.cmd.get_name() == root.get_name() {
        let subs = root
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| {
                (
                    s.get_name().to_string(),
                    s.get_about().map(|a| a.to_string()).unwrap_or_default(),
                )
            })
            .collect();
        return Answer::of(subs, &to_complete);
    }
    match parsed.cmd.get_name() {
        "describe" | "approve" | "diff" | "history" | "undo" | "wait" | "plan"
            if parsed.positionals.is_empty() =>
        {
            promotion_names(&conn, &to_complete).await
        }
        // Several names: each one not typed yet, only those the command changes.
        "pause" | "resume" => {
            let pausing = parsed.cmd.get_name() == "pause";
            let mut a = promotion_names(&conn, &to_complete).await;
            a.candidates.retain(|(name, phase)| {
                !parsed.positionals.contains(name) && (phase == Phase::Paused.label()) != pausing
            });
            a
        }
        // One name: the promotions the command applies to, by the phase an abort gives.
        "abort" | "rollback" | "retry" if parsed.positionals.is_empty() => {
            let command = parsed.cmd.get_name();
            let mut a = promotion_names(&conn, &to_complete).await;
            a.candidates.retain(|(_, phase)| {
                let aborted = [Phase::Aborted, Phase::RollingBack, Phase::RolledBack]
                    .iter()
                    .any(|p| p.label() == phase);
                let rolled_back = [Phase::RollingBack, Phase::RolledBack]
                    .iter()
                    .any(|p| p.label() == phase);
                match command {
                    "abort" => !aborted && phase != Phase::NotStarted.label(),
                    // A rollback replaces an abort of the same rollout.
                    "rollback" => !rolled_back,
                    _ => aborted,
                }
            });
            a
        }
        "get" | "list" | "version" => Answer::none(),
        "completion" if parsed.positionals.is_empty() => {
            let arg = parsed.cmd.get_arguments().find(|a| a.get_id() == "shell");
            match arg {
                Some(a) => Answer::of(possible_values(a), &to_complete),
                None => Answer::none(),
            }
        }
        "lint" => Answer::files(),
        _ => Answer::none(),
    }
}

fn flags(cmd: &Command, prefix: &str) -> Answer {
    let items = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .filter_map(|a| {
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            a.get_long().map(|l| (format!("--{l}"), help))
        })
        .chain([("--help".to_string(), "Print help".to_string())])
        .collect::<Vec<_>>();
    let mut seen = std::collections::BTreeSet::new();
    let items = items
        .into_iter()
        .filter(|(v, _)| seen.insert(v.clone()))
        .collect();
    Answer::of(items, prefix)
}

fn possible_values(arg: &Arg) -> Vec<(String, String)> {
    arg.get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| {
            (
                v.get_name().to_string(),
                v.get_help().map(|h| h.to_string()).unwrap_or_default(),
            )
        })
        .collect()
}

async fn flag_values(
    arg: &Arg,
    partial: &str,
    parsed: &Parsed<'_>,
    conn: &ConnectionFlags,
) -> Answer {
    let id = arg.get_id().as_str();
    match id {
        "stage" => match parsed.positionals.first() {
            Some(name) => stage_names(conn, name, partial, parsed.cmd.get_name()).await,
            None => Answer::none(),
        },
        "condition" => {
            let mut items = vec![
                ("complete".to_string(), "the last stage is done".to_string()),
                (
                    "approval".to_string(),
                    "a stage waits for manual approval".to_string(),
                ),
                ("paused".to_string(), "the promotion is paused".to_string()),
                (
                    "aborted".to_string(),
                    "the current rollout is aborted or rolled back".to_string(),
                ),
                (
                    "rolled-back".to_string(),
                    "every stage runs the revision rolled back to".to_string(),
                ),
            ];
            if let Some(name) = parsed.positionals.first() {
                let stages = stage_names(conn, name, "", "wait").await;
                items.extend(
                    stages
                        .candidates
                        .into_iter()
                        .map(|(s, d)| (format!("stage={s}"), d)),
                );
            } else {
                items.push(("stage=".into(), "the pipeline reached a stage".into()));
            }
            Answer::of(items, partial)
        }
        "context" => Answer::of(
            connection::context_names(conn)
                .into_iter()
                .map(|c| (c, String::new()))
                .collect(),
            partial,
        ),
        "filename"
        | "kubeconfig"
        | "certificate_authority"
        | "client_certificate"
        | "client_key" => Answer::files(),
        _ => {
            let values = possible_values(arg);
            if values.is_empty() {
                Answer::none()
            } else {
                Answer::of(values, partial)
            }
        }
    }
}

async fn promotion_names(conn: &ConnectionFlags, prefix: &str) -> Answer {
    let lookup = async {
        let kube = Kube::connect(conn).await.ok()?;
        // The phase shown is `list`'s STATE, from the same view model as `describe`.
        let (rows, _) = crate::commands::list::rows(&kube, None).await.ok()?;
        Some(
            rows.into_iter()
                .map(|r| (r.name, r.phase.label().to_string()))
                .collect::<Vec<_>>(),
        )
    };
    match tokio::time::timeout(LOOKUP_TIMEOUT, lookup).await {
        Ok(Some(items)) => Answer::of(items, prefix),
        _ => Answer::none(),
    }
}

async fn stage_names(conn: &ConnectionFlags, name: &str, prefix: &str, command: &str) -> Answer {
    let lookup = async {
        let kube = Kube::connect(conn).await.ok()?;
        // Stage states as `describe` shows them (the same snapshot and derived pipeline).
        let snap = crate::cluster::fetch::snapshot(&kube, name).await.ok()?;
        let pipeline = view::pipeline_of(snap.borrow(), &view::typed(&snap.object).ok()?);
        Some(
            pipeline
                .stages
                .iter()
                .filter(|s| command != "approve" || approves(&pipeline, s))
                .filter(|s| command != "diff" || s.next_stage.is_some())
                .map(|s| (s.name.clone(), s.state.label()))
                .collect::<Vec<_>>(),
        )
    };
    match tokio::time::timeout(LOOKUP_TIMEOUT, lookup).await {
        Ok(Some(items)) => Answer::of(items, prefix),
        _ => Answer::none(),
    }
}

/// Whether `approve --stage NAME` approves this very stage, as `approve` decides it: its gate,
/// with `--pre-approve` where the pipeline is not at it (so every manual gate is offered, and a
/// later stage of a repeated name, which the name never reaches, is not).
fn approves(pipeline: &Pipeline, stage: &StageView) -> bool {
    approval_target(pipeline, Some(&stage.name), true).is_ok_and(|g| g.index == stage.index)
}

/// Entry point for `__complete` / `__completeNoDesc`.
pub async fn run(root: &Command, words: &[String], descriptions: bool) -> u8 {
    let a = answer(root, words).await;
    print!("{}", a.render(descriptions));
    eprintln!(
        "Completion ended with directive: {}",
        directive_name(a.directive)
    );
    crate::error::exit::OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::CommandFactory;

    async fn answer(words: &[String]) -> Answer {
        super::answer(&Cli::command(), words).await
    }

    fn w(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn subcommands_at_the_root() {
        let a = answer(&w(&[""])).await;
        let names: Vec<&str> = a.candidates.iter().map(|c| c.0.as_str()).collect();
        for expected in [
            "approve",
            "completion",
            "describe",
            "diff",
            "list",
            "wait",
            "version",
        ] {
            assert!(names.contains(&expected), "{names:?}");
        }
        assert!(!names.iter().any(|n| n.starts_with("__")));
        assert_eq!(a.directive, NO_FILE_COMP);
        let a = answer(&w(&["de"])).await;
        assert_eq!(a.candidates[0].0, "describe");
        assert_eq!(a.candidates.len(), 1);
    }

    #[tokio::test]
    async fn flags_and_their_values() {
        let a = answer(&w(&["approve", "p", "--dr"])).await;
        assert_eq!(a.candidates[0].0, "--dry-run");
        let a = answer(&w(&["approve", "p", "--dry-run="])).await;
        let values: Vec<&str> = a.candidates.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            values,
            vec!["--dry-run=none", "--dry-run=client", "--dry-run=server"]
        );
        let a = answer(&w(&["list", "-o", ""])).await;
        let values: Vec<&str> = a.candidates.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            values,
            vec![
                "json",
                "yaml",
                "name",
                "wide",
                "jsonpath",
                "jsonpath-file",
                "jsonpath-as-json",
                "custom-columns",
                "custom-columns-file"
            ]
        );
        let a = answer(&w(&["completion", ""])).await;
        assert_eq!(a.candidates.len(), 4);
        let a = answer(&w(&["describe", "-f", ""])).await;
        assert_eq!(a.directive, 0);
        let a = answer(&w(&["describe", "--cont"])).await;
        assert_eq!(a.candidates[0].0, "--context");
    }

    #[test]
    fn wire_format() {
        let a = Answer {
            candidates: vec![
                ("dev".into(), "promoted".into()),
                ("prod".into(), String::new()),
            ],
            directive: NO_FILE_COMP,
        };
        assert_eq!(a.render(true), "dev\tpromoted\nprod\n:4\n");
        assert_eq!(a.render(false), "dev\nprod\n:4\n");
        assert_eq!(directive_name(4), "ShellCompDirectiveNoFileComp");
    }

    #[test]
    fn approve_offers_the_stages_it_approves() {
        let snap = view::Snapshot::offline(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"stages": [
                {"name": "dev", "trigger": {"auto": {}}},
                {"name": "staging", "trigger": {"manual": {}}},
                {"name": "qa", "trigger": {"manual": {"approved": true}}},
                {"name": "prod"},
                {"name": "staging", "trigger": {"manual": {}}}
            ]},
            "status": {"stages": [{"name": "dev"}]}
        }));
        let pipeline = view::pipeline_of(snap.borrow(), &view::typed(&snap.object).unwrap());
        let offered: Vec<(usize, &str)> = pipeline
            .stages
            .iter()
            .filter(|s| approves(&pipeline, s))
            .map(|s| (s.index, s.name.as_str()))
            .collect();
        // Gates not reached yet (with --pre-approve) and already approved ones, but neither
        // triggers that are not gates nor a repeated name's later stage.
        assert_eq!(offered, vec![(1, "staging"), (2, "qa")]);
    }

    #[test]
    fn words_are_parsed_like_the_cli() {
        let mut root = Cli::command();
        root.build();
        let p = parse(
            &root,
            &w(&[
                "--context",
                "ctx",
                "approve",
                "-n",
                "x",
                "p",
                "--stage",
                "staging",
            ]),
        );
        assert_eq!(p.cmd.get_name(), "approve");
        assert_eq!(p.positionals, vec!["p"]);
        assert_eq!(p.stage_flag.as_deref(), Some("staging"));
        let c = connection_from(&p.flag_tokens);
        assert_eq!(c.context.as_deref(), Some("ctx"));
        assert_eq!(c.namespace.as_deref(), Some("x"));
    }
}
