//! Texts of admission answers: the denial status kubectl shows, and warnings.

use kube_core::response::{StatusCause, StatusDetails, StatusSummary};
use kube_core::Status;
use promotion_shared::model::{GROUP, KIND};

/// One problem with the field it concerns.
pub struct Problem {
    pub path: String,
    pub message: String,
    /// `FieldValueInvalid` or `FieldValueForbidden`, as in Kubernetes' own causes.
    pub reason: &'static str,
}

/// Why a request is denied, in Kubernetes' own shape so kubectl and client libraries treat it
/// like an API server validation error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denial {
    /// 422: the object is wrong.
    Invalid,
    /// 403: the object may be fine, but this user may not make this change.
    Forbidden,
}

impl Denial {
    fn code(self) -> u16 {
        match self {
            Denial::Invalid => 422,
            Denial::Forbidden => 403,
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Denial::Invalid => "Invalid",
            Denial::Forbidden => "Forbidden",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Denial::Invalid => "is invalid",
            Denial::Forbidden => "is forbidden",
        }
    }
}

/// `ClusterPromotion.config.projectsveltos.io "x" is invalid: [a: …, b: …]` (brackets only for
/// several problems, as the API server writes it), with one cause per problem.
pub fn denial(kind: Denial, name: &str, problems: &[Problem]) -> Status {
    let listed: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect();
    let list = match listed.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let message = format!("{KIND}.{GROUP} {name:?} {}: {list}", kind.verb());
    let mut status = Status::failure(&message, kind.reason()).with_code(kind.code());
    status.status = Some(StatusSummary::Failure);
    status.details = Some(StatusDetails {
        name: name.to_string(),
        group: GROUP.to_string(),
        kind: KIND.to_string(),
        uid: String::new(),
        causes: problems
            .iter()
            .map(|p| StatusCause {
                reason: p.reason.to_string(),
                message: p.message.clone(),
                field: p.path.clone(),
            })
            .collect(),
        retry_after_seconds: 0,
    });
    status
}

/// The API server passes warnings on as HTTP `Warning` headers and asks for at most 120
/// characters each. Whitespace (newlines from multi-line messages) is folded, and a longer
/// warning is split at word boundaries into continued parts rather than cut.
pub fn warning_lines(text: &str) -> Vec<String> {
    const LIMIT: usize = 120;
    const MORE: &str = " …";
    const CONTINUED: &str = "… ";
    // Both markers are two characters wide.
    const MARK: usize = 2;
    // Most warnings are short single lines: answer those without splitting into words.
    let folded = || {
        !text.contains(|c: char| c.is_whitespace() && c != ' ')
            && !text.contains("  ")
            && !text.starts_with(' ')
            && !text.ends_with(' ')
    };
    if text.len() <= LIMIT && folded() {
        return vec![text.to_string()];
    }
    let width = |s: &str| {
        if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        }
    };
    // Unicode whitespace needs decoding every character; most messages are ASCII.
    // (U+000B is whitespace to Rust but not to `split_ascii_whitespace`.)
    let words: Vec<&str> = if text.is_ascii() && !text.contains('\u{b}') {
        text.split_ascii_whitespace().collect()
    } else {
        text.split_whitespace().collect()
    };
    let total = words
        .iter()
        .map(|w| width(w) + 1)
        .sum::<usize>()
        .saturating_sub(1);
    if total <= LIMIT {
        return vec![words.join(" ")];
    }
    let mut lines = Vec::with_capacity(total / (LIMIT - 2 * MARK) + 1);
    let mut line = String::with_capacity(LIMIT + 8);
    // Characters in `line`, and whether it holds nothing but the continuation marker.
    let (mut width_so_far, mut fresh) = (0usize, true);
    for word in words {
        let mut rest = word;
        while !rest.is_empty() {
            let (piece, tail) = split_at_chars(rest, LIMIT - 2 * MARK);
            rest = tail;
            let piece_width = width(piece);
            let separator = usize::from(!fresh);
            if !line.is_empty() && width_so_far + separator + piece_width + MARK > LIMIT {
                line.push_str(MORE);
                let mut next = String::with_capacity(LIMIT + 8);
                next.push_str(CONTINUED);
                lines.push(std::mem::replace(&mut line, next));
                (width_so_far, fresh) = (MARK, true);
            }
            if !fresh {
                line.push(' ');
                width_so_far += 1;
            }
            line.push_str(piece);
            width_so_far += piece_width;
            fresh = false;
        }
    }
    if !fresh {
        lines.push(line);
    }
    lines
}

/// `word` cut after at most `max` characters.
fn split_at_chars(word: &str, max: usize) -> (&str, &str) {
    if word.len() <= max {
        return (word, "");
    }
    let end = word.char_indices().nth(max).map_or(word.len(), |(i, _)| i);
    word.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_multiple_problems() {
        let one = denial(
            Denial::Invalid,
            "p",
            &[Problem {
                path: "spec.stages[1].trigger".into(),
                message: "both auto and manual".into(),
                reason: "FieldValueInvalid",
            }],
        );
        assert_eq!(
            one.message,
            "ClusterPromotion.config.projectsveltos.io \"p\" is invalid: spec.stages[1].trigger: both auto and manual"
        );
        assert_eq!((one.code, one.reason.as_str()), (422, "Invalid"));
        let causes = &one.details.as_ref().unwrap().causes;
        assert_eq!(causes[0].field, "spec.stages[1].trigger");

        let two = denial(
            Denial::Forbidden,
            "p",
            &[
                Problem {
                    path: "a".into(),
                    message: "x".into(),
                    reason: "FieldValueForbidden",
                },
                Problem {
                    path: "b".into(),
                    message: "y".into(),
                    reason: "FieldValueInvalid",
                },
            ],
        );
        assert!(two.message.ends_with("is forbidden: [a: x, b: y]"));
        assert_eq!(two.code, 403);
    }

    #[test]
    fn warnings_are_folded_and_split_without_loss() {
        assert_eq!(warning_lines("a\n  b"), ["a b"]);
        assert_eq!(warning_lines("a  b "), ["a b"]);
        assert_eq!(warning_lines("\ta\u{a0}b"), ["a b"]);
        assert_eq!(warning_lines("a\u{b}b"), ["a b"]);
        assert_eq!(
            warning_lines("spec.x: fine as it is"),
            ["spec.x: fine as it is"]
        );
        let long = format!("spec.x: {}", "word ".repeat(60));
        let lines = warning_lines(&long);
        assert!(lines.len() > 1);
        for line in &lines {
            assert!(line.chars().count() <= 120, "{line}");
        }
        let rejoined: String = lines
            .iter()
            .map(|l| l.trim_end_matches(" …").trim_start_matches("… "))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            rejoined,
            long.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let giant = "x".repeat(500);
        let lines = warning_lines(&giant);
        assert!(lines.iter().all(|l| l.chars().count() <= 120));
        let total: usize = lines.iter().map(|l| l.matches('x').count()).sum();
        assert_eq!(total, 500);
    }
}
