//! Human and structured output of `health`. Human: one block per check with one line per
//! object, each CEL rule's result, and the error Sveltos would record. `-o json|yaml`: one
//! element per (check, object) pair (plugin/docs/health.md has the fields).

use serde::Serialize;

use health_runtime::{CheckReport, Evaluation, Status};

use super::HealthFormat;
use crate::commands::Ctx;
use crate::error::{exit::health as exit, Error, Result};
use crate::render::output;
use crate::render::{Style, Tone};

/// The results for one cluster (live) or for the object files (offline).
pub struct Section {
    /// `namespace/name (Kind)` of the managed cluster; `None` offline.
    pub cluster: Option<String>,
    pub reports: Vec<CheckReport>,
    /// Why the cluster could not be checked (one line), or a note (pull mode).
    pub error: Option<String>,
    /// A line to show instead of results that is not an error (pull mode).
    pub note: Option<String>,
}

impl Section {
    pub fn offline(reports: Vec<CheckReport>) -> Section {
        Section {
            cluster: None,
            reports,
            error: None,
            note: None,
        }
    }
}

#[derive(Serialize)]
struct Row<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<&'a str>,
    #[serde(flatten)]
    evaluation: &'a Evaluation,
}

/// Print the sections and return the exit status.
pub fn print(ctx: &Ctx, format: Option<HealthFormat>, sections: &[Section]) -> Result<u8> {
    let text = match format {
        Some(f) => {
            let rows: Vec<Row> = sections
                .iter()
                .flat_map(|s| {
                    s.reports.iter().flat_map(move |r| {
                        r.evaluations.iter().map(move |e| Row {
                            cluster: s.cluster.as_deref(),
                            evaluation: e,
                        })
                    })
                })
                .collect();
            for s in sections {
                if let (Some(c), Some(e)) = (&s.cluster, &s.error) {
                    crate::error::report(&Error::Io(format!("cluster {c}: {e}")), ctx.err.color);
                }
            }
            match f {
                HealthFormat::Json => output::to_json(&rows)?,
                HealthFormat::Yaml => output::to_yaml(&rows)?,
            }
        }
        None => human(sections, &ctx.out),
    };
    ctx.write_out(&text)?;
    eprintln!("{}", ctx.err.paint(&summary(sections), Tone::Dim));
    Ok(exit_code(sections))
}

pub fn exit_code(sections: &[Section]) -> u8 {
    if sections.iter().any(|s| s.error.is_some()) {
        exit::ERROR
    } else if sections
        .iter()
        .flat_map(|s| &s.reports)
        .any(|r| r.status().fails())
    {
        exit::UNHEALTHY
    } else {
        exit::OK
    }
}

fn tone(status: Status) -> Tone {
    match status {
        Status::Healthy => Tone::Good,
        Status::Unhealthy | Status::Error => Tone::Bad,
        Status::Stopped => Tone::Waiting,
        Status::NotEvaluated => Tone::Dim,
    }
}

fn symbol(style: &Style, status: Status) -> String {
    if !style.color {
        return String::new();
    }
    let sym = match status {
        Status::Healthy => "✔",
        Status::Unhealthy | Status::Error => "✖",
        Status::Stopped => "◷",
        Status::NotEvaluated => "○",
    };
    format!("{} ", style.paint(sym, tone(status)))
}

pub fn human(sections: &[Section], style: &Style) -> String {
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if let Some(c) = &s.cluster {
            match (&s.error, &s.note) {
                (Some(e), _) => {
                    out.push_str(&format!(
                        "{} {c}: {}\n",
                        style.paint("Cluster", Tone::Strong),
                        style.paint(e, Tone::Bad)
                    ));
                    continue;
                }
                (None, Some(n)) => {
                    out.push_str(&format!(
                        "{} {c}: {n}\n",
                        style.paint("Cluster", Tone::Strong)
                    ));
                    continue;
                }
                _ => out.push_str(&format!("{} {c}\n", style.paint("Cluster", Tone::Strong))),
            }
        }
        if s.reports.is_empty() {
            out.push_str("  no health checks to run (none declared for this stage)\n");
        }
        for (j, r) in s.reports.iter().enumerate() {
            if j > 0 {
                out.push('\n');
            }
            check_block(
                &mut out,
                r,
                style,
                if s.cluster.is_some() { "  " } else { "" },
            );
        }
    }
    out
}

fn check_block(out: &mut String, r: &CheckReport, style: &Style, indent: &str) {
    let c = &r.check;
    let scope = match &c.stage {
        Some(s) => format!("stage {s}"),
        None => "profileSpec".to_string(),
    };
    out.push_str(&format!(
        "{indent}{} {}  ({scope}, feature {})\n",
        style.paint("Check", Tone::Strong),
        style.paint(&c.name, Tone::Strong),
        if c.feature.is_empty() {
            "?"
        } else {
            &c.feature
        }
    ));
    out.push_str(&format!("{indent}  path:     {}\n", c.path));
    if !c.kind.is_empty() {
        let mut sel = format!("{} {}", c.api_version(), c.kind);
        if !c.namespace.is_empty() {
            sel.push_str(&format!(" in namespace {}", c.namespace));
        }
        let labels = health_runtime::select::label_selector(&c.label_filters);
        if !labels.is_empty() {
            sel.push_str(&format!(" with labels {labels}"));
        }
        out.push_str(&format!("{indent}  selects:  {sel}\n"));
    }
    for e in &r.evaluations {
        let what = match &e.object {
            Some(o) => o.display(),
            None if c.kind.is_empty() => "metrics".to_string(),
            None => "(no object)".to_string(),
        };
        out.push_str(&format!(
            "{indent}  {}{:<13} {what}: {}\n",
            symbol(style, e.status),
            style.paint(e.status.label(), tone(e.status)),
            e.message
        ));
        for rule in &e.rules {
            let text = match (&rule.result, &rule.error) {
                (Some(true), _) => style.paint("true", Tone::Good),
                (Some(false), _) => style.paint("false", Tone::Bad),
                (None, Some(err)) => format!(
                    "{} {err} (Sveltos skips this rule)",
                    style.paint("error:", Tone::Waiting)
                ),
                (None, None) => "error".into(),
            };
            out.push_str(&format!("{indent}      rule {}: {text}\n", rule.name));
        }
    }
    if let Some(err) = r.sveltos_error() {
        out.push_str(&format!(
            "{indent}  {} {}\n",
            style.paint("Sveltos records:", Tone::Dim),
            err
        ));
    }
}

fn summary(sections: &[Section]) -> String {
    let reports: Vec<&CheckReport> = sections.iter().flat_map(|s| &s.reports).collect();
    let count = |st: Status| reports.iter().filter(|r| r.status() == st).count();
    let mut parts = vec![];
    for st in [
        Status::Healthy,
        Status::Unhealthy,
        Status::Error,
        Status::Stopped,
        Status::NotEvaluated,
    ] {
        let n = count(st);
        if n > 0 {
            parts.push(format!("{n} {}", st.label()));
        }
    }
    let unreachable = sections.iter().filter(|s| s.error.is_some()).count();
    if unreachable > 0 {
        parts.push(format!(
            "{unreachable} cluster{} not checked",
            if unreachable == 1 { "" } else { "s" }
        ));
    }
    format!(
        "{} check run{}: {}",
        reports.len(),
        if reports.len() == 1 { "" } else { "s" },
        if parts.is_empty() {
            "nothing to report".to_string()
        } else {
            parts.join(", ")
        }
    )
}
