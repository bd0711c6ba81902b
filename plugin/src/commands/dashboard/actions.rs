//! An action sent from a page is the CLI command of the same name, run in this process: its
//! arguments are parsed by the same command line (`kubectl promotion approve NAME --stage S
//! --reason R`), so it makes the same guarded patch and gives the same refusals, with the
//! caller's credentials. What the command would print, its notes and warnings included, is the
//! answer shown on the page.

use clap::{Args, FromArgMatches};

use super::model::ActionKind;
use crate::cluster::connection::ConnectionFlags;
use crate::commands::{self, Ctx, Output};
use crate::render::Style;

/// The form of an action: what the page sends.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Form {
    pub stage: Option<String>,
    pub reason: Option<String>,
}

impl Form {
    /// `application/x-www-form-urlencoded`; unknown fields are refused, so that a page of
    /// another version cannot send something silently ignored.
    pub fn parse(body: &[u8]) -> Result<Form, String> {
        let mut form = Form::default();
        for (k, v) in form_urlencoded::parse(body) {
            let v = v.trim().to_string();
            match k.as_ref() {
                "stage" => form.stage = Some(v).filter(|v| !v.is_empty()),
                "reason" => form.reason = Some(v).filter(|v| !v.is_empty()),
                other => return Err(format!("unknown form field {other:?}")),
            }
        }
        Ok(form)
    }
}

/// The command line the action runs (after the program name).
pub fn argv(kind: ActionKind, name: &str, form: &Form) -> Result<Vec<String>, String> {
    // The name comes from the URL: one that is not an object name (`--all`) must not become a
    // flag.
    if !is_object_name(name) {
        return Err(format!("{name:?} is not a ClusterPromotion name"));
    }
    let mut args = vec![
        match kind {
            ActionKind::Revoke => "approve",
            k => k.path(),
        }
        .to_string(),
        name.to_string(),
    ];
    let stage = |args: &mut Vec<String>| -> Result<(), String> {
        match &form.stage {
            Some(s) => {
                args.push(format!("--stage={s}"));
                Ok(())
            }
            None => Err("no stage given".into()),
        }
    };
    match kind {
        ActionKind::Approve => stage(&mut args)?,
        ActionKind::Revoke => {
            stage(&mut args)?;
            args.push("--revoke".into());
        }
        _ if form.stage.is_some() => {
            return Err(format!("{} takes no stage", kind.path()));
        }
        _ => {}
    }
    match (
        &form.reason,
        matches!(kind, ActionKind::Resume | ActionKind::Retry),
    ) {
        (Some(_), true) => return Err(format!("{} takes no reason", kind.path())),
        (Some(r), false) => args.push(format!("--reason={r}")),
        (None, _) => {}
    }
    Ok(args)
}

/// A DNS subdomain, as the API server requires of a ClusterPromotion's name.
pub fn is_object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// What the command said.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub ok: bool,
    /// Its result (`clusterpromotion…/NAME approved`) or its error.
    pub message: String,
    /// Its notes and warnings.
    pub notes: String,
}

/// The command's arguments, parsed by its own definition (`argv[0]` names the command).
pub fn parse<A: Args + FromArgMatches>(argv: &[String]) -> Result<A, String> {
    let command = A::augment_args(clap::Command::new("kubectl-promotion"));
    command
        .try_get_matches_from(argv)
        .and_then(|m| A::from_arg_matches(&m))
        .map_err(|e| e.render().to_string())
}

/// The commands the dashboard runs.
#[derive(Debug)]
enum Parsed {
    Approve(commands::approve::ApproveArgs),
    Pause(commands::pause::PauseArgs),
    Resume(commands::pause::ResumeArgs),
    Abort(commands::abort::AbortArgs),
    Rollback(commands::abort::RollbackArgs),
    Retry(commands::abort::RetryArgs),
}

fn parsed(argv: &[String]) -> Result<Parsed, String> {
    Ok(match argv.first().map(String::as_str) {
        Some("approve") => Parsed::Approve(parse(argv)?),
        Some("pause") => Parsed::Pause(parse(argv)?),
        Some("resume") => Parsed::Resume(parse(argv)?),
        Some("abort") => Parsed::Abort(parse(argv)?),
        Some("rollback") => Parsed::Rollback(parse(argv)?),
        Some("retry") => Parsed::Retry(parse(argv)?),
        other => return Err(format!("not an action of the dashboard: {other:?}")),
    })
}

/// Run the action as the caller would from a terminal.
pub async fn run(connection: &ConnectionFlags, args: Vec<String>) -> Outcome {
    let command = match parsed(&args) {
        Ok(c) => c,
        Err(message) => {
            return Outcome {
                ok: false,
                message,
                notes: String::new(),
            }
        }
    };
    let ctx = Ctx {
        connection: connection.clone(),
        out: Style { color: false },
        err: Style { color: false },
        out_is_tty: false,
        stdout: Output::memory(),
        stderr: Output::memory(),
        started: std::time::Instant::now(),
        in_flight: Default::default(),
    };
    let result = match &command {
        Parsed::Approve(a) => commands::approve::run(&ctx, a).await,
        Parsed::Pause(a) => commands::pause::run_pause(&ctx, a).await,
        Parsed::Resume(a) => commands::pause::run_resume(&ctx, a).await,
        Parsed::Abort(a) => commands::abort::run_abort(&ctx, a).await,
        Parsed::Rollback(a) => commands::abort::run_rollback(&ctx, a).await,
        Parsed::Retry(a) => commands::abort::run_retry(&ctx, a).await,
    };
    let Ctx { stdout, stderr, .. } = ctx;
    let printed = String::from_utf8_lossy(&stdout.into_bytes())
        .trim()
        .to_string();
    let notes = String::from_utf8_lossy(&stderr.into_bytes())
        .trim()
        .to_string();
    match result {
        Ok(0) => Outcome {
            ok: true,
            message: printed,
            notes,
        },
        Ok(code) => Outcome {
            ok: false,
            message: if printed.is_empty() {
                format!("the command ended with exit status {code}")
            } else {
                printed
            },
            notes,
        },
        Err(e) => Outcome {
            ok: false,
            message: format!("error: {e}"),
            notes,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(stage: Option<&str>, reason: Option<&str>) -> Form {
        Form {
            stage: stage.map(String::from),
            reason: reason.map(String::from),
        }
    }

    #[test]
    fn each_action_is_its_cli_command() {
        let cases: &[(ActionKind, Form, &[&str])] = &[
            (
                ActionKind::Approve,
                form(Some("staging"), Some("CAB-1")),
                &["approve", "p", "--stage=staging", "--reason=CAB-1"],
            ),
            (
                ActionKind::Revoke,
                form(Some("staging"), None),
                &["approve", "p", "--stage=staging", "--revoke"],
            ),
            (
                ActionKind::Pause,
                form(None, Some("INC")),
                &["pause", "p", "--reason=INC"],
            ),
            (ActionKind::Resume, form(None, None), &["resume", "p"]),
            (ActionKind::Abort, form(None, None), &["abort", "p"]),
            (
                ActionKind::Rollback,
                form(None, Some("x")),
                &["rollback", "p", "--reason=x"],
            ),
            (ActionKind::Retry, form(None, None), &["retry", "p"]),
        ];
        for (kind, f, want) in cases {
            let line = argv(*kind, "p", f).unwrap();
            assert_eq!(line, *want, "{kind:?}");
            assert!(parsed(&line).is_ok(), "{line:?} parses");
        }
    }

    #[test]
    fn a_reason_cannot_smuggle_a_flag() {
        let line = argv(ActionKind::Pause, "p", &form(None, Some("--all"))).unwrap();
        let Ok(Parsed::Pause(p)) = parsed(&line) else {
            panic!("{line:?}")
        };
        assert_eq!(p.reason.as_deref(), Some("--all"));
        assert!(!p.targets.all);
    }

    #[test]
    fn a_name_from_the_url_cannot_become_a_flag() {
        for bad in ["--all", "-l", "", "a..b", "A", "a/b", "-a"] {
            assert!(
                argv(ActionKind::Pause, bad, &form(None, None)).is_err(),
                "{bad:?}"
            );
        }
        assert!(is_object_name("kyverno-rollout.v2"));
    }

    #[test]
    fn malformed_forms_are_refused() {
        assert!(argv(ActionKind::Approve, "p", &form(None, None)).is_err());
        assert!(argv(ActionKind::Pause, "p", &form(Some("dev"), None)).is_err());
        assert!(argv(ActionKind::Retry, "p", &form(None, Some("why"))).is_err());
        assert_eq!(
            Form::parse(b"stage=dev&reason=a+b").unwrap(),
            form(Some("dev"), Some("a b"))
        );
        assert_eq!(Form::parse(b"reason=").unwrap(), form(None, None));
        assert!(Form::parse(b"dry_run=server").is_err());
    }
}
