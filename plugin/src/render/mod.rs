//! Printing: everything that turns results into text, no cluster access. Human output
//! (`describe`, `diff`, `table`, `terminal`, and the colour [`Style`] here), the structured and
//! template formats (`output`: `-o json|yaml|name` and reading manifests; `printers`: kubectl's
//! `-o jsonpath|custom-columns|go-template…`; `custom_columns`).
//!
//! Colour and symbols only when writing to a terminal that wants them; the plain form carries
//! the same words, so nothing is lost in a pipe or a CI log.

pub mod custom_columns;
pub mod describe;
pub mod diff;
pub mod output;
pub mod printers;
pub mod table;
pub mod terminal;
pub mod timeline;

use std::io::IsTerminal;

use owo_colors::OwoColorize;
use promotion_shared::pipeline::{Phase, StageState};

use clap::ValueEnum;

/// `--color`: when to use colour and symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Whether to decorate output. `NO_COLOR` (any non-empty value) and `TERM=dumb` switch it off
/// unless colour is forced with `--color=always`.
pub fn color_enabled(
    choice: ColorChoice,
    no_color_flag: bool,
    is_tty: bool,
    no_color_env: Option<&str>,
    term: Option<&str>,
) -> bool {
    if no_color_flag {
        return false;
    }
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            is_tty && no_color_env.is_none_or(str::is_empty) && term != Some("dumb")
        }
    }
}

/// How to decorate one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

/// Semantic colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Good,
    Active,
    Waiting,
    Bad,
    Dim,
    Strong,
    Plain,
}

impl Style {
    #[cfg(test)]
    pub fn plain() -> Style {
        Style { color: false }
    }

    /// Decide for stdout (or stderr) from the flags and the environment.
    pub fn detect(choice: ColorChoice, no_color_flag: bool, stderr: bool) -> Style {
        let is_tty = if stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        let no_color = std::env::var("NO_COLOR").ok();
        let term = std::env::var("TERM").ok();
        Style {
            color: color_enabled(
                choice,
                no_color_flag,
                is_tty,
                no_color.as_deref(),
                term.as_deref(),
            ),
        }
    }

    pub fn paint(&self, text: &str, tone: Tone) -> String {
        if !self.color || text.is_empty() {
            return text.to_string();
        }
        match tone {
            Tone::Good => text.green().to_string(),
            Tone::Active => text.cyan().to_string(),
            Tone::Waiting => text.yellow().to_string(),
            Tone::Bad => text.red().bold().to_string(),
            Tone::Dim => text.dimmed().to_string(),
            Tone::Strong => text.bold().to_string(),
            Tone::Plain => text.to_string(),
        }
    }

    /// The state's symbol followed by a space, or nothing in plain output.
    pub fn symbol(&self, state: &StageState) -> String {
        if !self.color {
            return String::new();
        }
        let (sym, tone) = state_symbol(state);
        format!("{} ", self.paint(sym, tone))
    }

    pub fn state(&self, state: &StageState) -> String {
        self.paint(&state.label(), state_tone(state))
    }

    pub fn phase(&self, phase: &Phase) -> String {
        self.paint(phase.label(), phase_tone(phase))
    }
}

/// The colour of a phase, in every view.
pub fn phase_tone(phase: &Phase) -> Tone {
    {
        match phase {
            Phase::NotStarted | Phase::Unknown => Tone::Dim,
            Phase::Stale | Phase::Deleting | Phase::Paused => Tone::Waiting,
            Phase::Aborted | Phase::RolledBack => Tone::Waiting,
            Phase::RollingBack => Tone::Active,
            Phase::Progressing => Tone::Active,
            Phase::Degraded => Tone::Waiting,
            Phase::AwaitingApproval => Tone::Waiting,
            Phase::Complete => Tone::Good,
            Phase::Failed | Phase::Blocked => Tone::Bad,
        }
    }
}

pub fn state_tone(state: &StageState) -> Tone {
    match state {
        StageState::NotStarted => Tone::Dim,
        StageState::Provisioning
        | StageState::Provisioned
        | StageState::RunningHealthChecks
        | StageState::ApprovedPending => Tone::Active,
        StageState::Soaking { .. }
        | StageState::WaitingForWindow { .. }
        | StageState::AwaitingApproval => Tone::Waiting,
        StageState::Promoted
        | StageState::Complete
        | StageState::CompletesWhenWindowOpens { .. } => Tone::Good,
        StageState::Failed {
            retriable: true, ..
        } => Tone::Waiting,
        StageState::Failed { .. } | StageState::Blocked { .. } => Tone::Bad,
    }
}

/// Argo Rollouts' vocabulary: ✔ done, ◌ in progress, ◷ timed wait, ॥ paused for a person,
/// ✖ failed, ○ not started.
pub fn state_symbol(state: &StageState) -> (&'static str, Tone) {
    let tone = state_tone(state);
    let sym = match state {
        StageState::NotStarted => "○",
        StageState::Provisioning | StageState::Provisioned | StageState::RunningHealthChecks => "◌",
        StageState::Soaking { .. } | StageState::WaitingForWindow { .. } => "◷",
        StageState::AwaitingApproval => "॥",
        StageState::ApprovedPending => "»",
        StageState::Promoted
        | StageState::Complete
        | StageState::CompletesWhenWindowOpens { .. } => "✔",
        StageState::Failed {
            retriable: true, ..
        } => "⚠",
        StageState::Failed { .. } => "✖",
        StageState::Blocked { .. } => "⊘",
    };
    (sym, tone)
}

/// The clusters a stage matches that Sveltos skips, as `plan` and `describe` word them:
/// "1 paused, 2 not ready", or `None` when there are none.
pub fn skipped_clusters(paused: usize, not_ready: usize) -> Option<String> {
    let skipped: Vec<String> = [(paused, "paused"), (not_ready, "not ready")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    (!skipped.is_empty()).then(|| skipped.join(", "))
}

/// Visible width of text that may contain ANSI colour sequences.
pub fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in text.chars() {
        if in_escape {
            if c.is_ascii_alphabetic() {
                in_escape = false;
            }
        } else if c == '\u{1b}' {
            in_escape = true;
        } else {
            width += 1;
        }
    }
    width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_that_wants_it() {
        let auto = ColorChoice::Auto;
        assert!(color_enabled(auto, false, true, None, Some("xterm")));
        assert!(!color_enabled(auto, false, false, None, Some("xterm")));
        assert!(!color_enabled(auto, true, true, None, None));
        assert!(!color_enabled(auto, false, true, Some("1"), None));
        assert!(color_enabled(auto, false, true, Some(""), None));
        assert!(!color_enabled(auto, false, true, None, Some("dumb")));
        assert!(color_enabled(
            ColorChoice::Always,
            false,
            false,
            Some("1"),
            None
        ));
        assert!(!color_enabled(ColorChoice::Always, true, true, None, None));
        assert!(!color_enabled(ColorChoice::Never, false, true, None, None));
    }

    #[test]
    fn plain_style_has_no_escapes_and_no_symbols() {
        let s = Style::plain();
        assert_eq!(s.paint("x", Tone::Bad), "x");
        assert_eq!(s.symbol(&StageState::Promoted), "");
        assert_eq!(s.state(&StageState::AwaitingApproval), "awaiting approval");
    }

    #[test]
    fn coloured_style_decorates_and_width_ignores_escapes() {
        let s = Style { color: true };
        let painted = s.state(&StageState::Failed {
            message: "m".into(),
            retriable: false,
        });
        assert!(painted.contains('\u{1b}'));
        assert_eq!(visible_width(&painted), "failed".len());
        assert_eq!(visible_width(&s.symbol(&StageState::Promoted)), 2);
    }
}
