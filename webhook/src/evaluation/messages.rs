//! Texts of admission answers: the denial status kubectl shows, and warnings shaped to the
//! API server's limits on them.

use std::borrow::Cow;

use kube_core::response::{StatusCause, StatusDetails, StatusSummary};
use kube_core::Status;
use promotion_shared::model::{GROUP, KIND};

/// One problem with the field it concerns.
pub struct Problem {
    pub path: String,
    pub message: String,
    /// The cause type: `promotion_shared::api_error::DENIED_INVALID` or `DENIED_FORBIDDEN`,
    /// Kubernetes' `FieldValueInvalid` and `FieldValueForbidden` under our prefix, so that a
    /// client tells our denial apart from
    /// the API server's own (`promotion_shared::api_error::classify`).
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

/// What the API server does with the warnings of one request, in kubernetes
/// `staging/src/k8s.io/apiserver/pkg/endpoints/filters/warning.go` (`truncateAtTotalRunes = 4 *
/// 1024`, `truncateItemRunes = 256`): warnings are passed on whole until together they exceed
/// 4096 characters; from then on each is cut to 256 characters, and those after the 4096th
/// character are dropped. `apimachinery/pkg/util/net/http.go` (`NewWarningHeader`) drops a warning
/// that holds a control character. (The admission API's "limit warnings to 120 characters if
/// possible" is advice, not a limit: kubectl prints a longer warning on one `Warning:` line.)
const ITEM_LIMIT: usize = 256;
const TOTAL_LIMIT: usize = 4096;

/// The warnings of one answer as the API server will pass them on: each made one
/// `Warning:` line by `warning_lines`, and, when together they would exceed what the API server
/// keeps, the ones that do not fit replaced by a last warning saying how many were left out.
pub fn warnings<S: AsRef<str>>(texts: &[S]) -> Vec<String> {
    let lines: Vec<String> = texts
        .iter()
        .flat_map(|text| warning_lines(text.as_ref()))
        .collect();
    let width = |line: &String| chars(line);
    if lines.iter().map(width).sum::<usize>() <= TOTAL_LIMIT {
        return lines;
    }
    // Room for the note, which is short and ASCII.
    let budget = TOTAL_LIMIT - 128;
    let (mut kept, mut used) = (Vec::with_capacity(lines.len()), 0);
    for line in &lines {
        let w = width(line);
        if used + w > budget {
            break;
        }
        used += w;
        kept.push(line.clone());
    }
    let left_out = lines.len() - kept.len();
    kept.push(format!(
        "{left_out} more warning{} left out: the API server passes on at most {TOTAL_LIMIT} \
         characters of warnings per request",
        if left_out == 1 { "" } else { "s" }
    ));
    kept
}

/// One warning as the API server will pass it on: whitespace (newlines from multi-line messages)
/// folded to single spaces, other control characters written as `\u001b` escapes (the API
/// server would drop the whole warning), and kept whole: one sentence stays one `Warning:` line.
/// Only a warning longer than the API server's per-warning limit (256 characters) is split, at
/// word boundaries, into continued parts (`… `) rather than cut.
pub fn warning_lines(text: &str) -> Vec<String> {
    let text = printable(text);
    let width = chars(&text);
    if width <= ITEM_LIMIT {
        return vec![text.into_owned()];
    }
    split(&text, width)
}

/// `text` with whitespace folded and control characters escaped; borrowed when already so.
fn printable(text: &str) -> Cow<'_, str> {
    let clean = match text.is_ascii() {
        // Almost every warning. In ASCII the control characters are below 0x20 and 0x7f, and
        // every whitespace but ' ' is one of them. Folds without early exits, which the
        // compiler turns into vector instructions.
        true => {
            let bytes = text.as_bytes();
            let control = bytes
                .iter()
                .fold(false, |any, &b| any | (b < 0x20) | (b == 0x7f));
            let double_space = bytes
                .iter()
                .zip(bytes.iter().skip(1))
                .fold(false, |any, (&a, &b)| any | ((a == b' ') & (b == b' ')));
            !control && !double_space && !text.starts_with(' ') && !text.ends_with(' ')
        }
        false => {
            !text.starts_with(' ')
                && !text.ends_with(' ')
                && !text.contains("  ")
                && !text.contains(|c: char| c.is_control() || (c.is_whitespace() && c != ' '))
        }
    };
    match clean {
        true => Cow::Borrowed(text),
        false => Cow::Owned(fold(text)),
    }
}

/// `text` with whitespace folded and control characters escaped.
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars() {
            if c.is_control() {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            } else {
                out.push(c);
            }
        }
    }
    out
}

/// `text` (already [`printable`], `width` characters) in parts of at most [`ITEM_LIMIT`]
/// characters, markers included, broken between words where a word allows it.
fn split(text: &str, width: usize) -> Vec<String> {
    const MORE: &str = " …";
    const CONTINUED: &str = "… ";
    // Both markers are two characters wide.
    const MARK: usize = 2;
    let mut lines = Vec::with_capacity(width / (ITEM_LIMIT - 2 * MARK) + 1);
    let mut line = String::with_capacity(ITEM_LIMIT + 8);
    // Characters in `line`, and whether it holds nothing but the continuation marker.
    let (mut width_so_far, mut fresh) = (0usize, true);
    for word in text.split(' ') {
        let mut rest = word;
        while !rest.is_empty() {
            let (piece, tail) = split_at_chars(rest, ITEM_LIMIT - 2 * MARK);
            rest = tail;
            let piece_width = chars(piece);
            let separator = usize::from(!fresh);
            if !line.is_empty() && width_so_far + separator + piece_width + MARK > ITEM_LIMIT {
                line.push_str(MORE);
                let mut next = String::with_capacity(ITEM_LIMIT + 8);
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

/// How many characters `s` has (what the API server's limits count).
fn chars(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
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
    use promotion_shared::api_error::{DENIED_FORBIDDEN, DENIED_INVALID};

    #[test]
    fn single_and_multiple_problems() {
        let one = denial(
            Denial::Invalid,
            "p",
            &[Problem {
                path: "spec.stages[1].trigger".into(),
                message: "both auto and manual".into(),
                reason: DENIED_INVALID,
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
                    reason: DENIED_FORBIDDEN,
                },
                Problem {
                    path: "b".into(),
                    message: "y".into(),
                    reason: DENIED_INVALID,
                },
            ],
        );
        assert!(two.message.ends_with("is forbidden: [a: x, b: y]"));
        assert_eq!(two.code, 403);
        // Clients tell our denials from the API server's by the causes, not the words.
        use promotion_shared::api_error::{classify, Denial as Why, Failure};
        assert_eq!(classify(&one), Failure::Denied(Why::Invalid));
        assert_eq!(classify(&two), Failure::Denied(Why::Forbidden));
    }

    #[test]
    fn a_warning_is_one_line_up_to_the_api_servers_limit() {
        assert_eq!(
            warning_lines("spec.x: fine as it is"),
            ["spec.x: fine as it is"]
        );
        // 255 characters of sentence with spaces in it: one warning, never split at 120.
        let sentence = format!("spec.stages[1]: {}", "word ".repeat(48).trim_end());
        assert!(sentence.chars().count() > 120 && sentence.chars().count() <= ITEM_LIMIT);
        assert_eq!(warning_lines(&sentence), std::slice::from_ref(&sentence));
        let exactly = "é".repeat(ITEM_LIMIT);
        assert_eq!(warning_lines(&exactly), std::slice::from_ref(&exactly));
    }

    #[test]
    fn whitespace_is_folded_and_control_characters_escaped() {
        assert_eq!(warning_lines("a\n  b"), ["a b"]);
        assert_eq!(warning_lines("a  b "), ["a b"]);
        assert_eq!(warning_lines("\ta\u{a0}b"), ["a b"]);
        assert_eq!(warning_lines("a\u{b}b\r\n"), ["a b"]);
        assert_eq!(warning_lines("bell\u{7}here"), ["bell\\u0007here"]);
        assert_eq!(warning_lines("\u{1b}[31mred"), ["\\u001b[31mred"]);
        assert_eq!(warning_lines("c1\u{9b}x"), ["c1\\u009bx"]);
        for line in warning_lines("x\u{0}y\u{7f}z") {
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
    }

    #[test]
    fn a_text_is_kept_as_it_is_only_when_folding_would_not_change_it() {
        // Every text of up to 4 characters from spaces, letters and the control and whitespace
        // characters around them, ASCII or not: the quick check never passes a text folding
        // would change.
        let alphabet = [
            ' ', 'a', '\t', '\n', '\u{7f}', '\u{1f}', '\u{a0}', 'é', '\u{85}',
        ];
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(longer);
        }
        texts.sort();
        texts.dedup();
        for text in &texts {
            assert_eq!(printable(text), fold(text), "{text:?}");
        }
    }

    #[test]
    fn only_a_warning_over_the_limit_is_split_and_nothing_is_lost() {
        let long = format!("spec.x: {}", "word ".repeat(120));
        let lines = warning_lines(&long);
        assert_eq!(lines.len(), 3, "{lines:?}");
        for line in &lines {
            assert!(line.chars().count() <= ITEM_LIMIT, "{line}");
        }
        assert!(lines[0].ends_with(" …") && lines[1].starts_with("… "));
        let rejoined: String = lines
            .iter()
            .map(|l| l.trim_end_matches(" …").trim_start_matches("… "))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            rejoined,
            long.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let giant = "x".repeat(1000);
        let lines = warning_lines(&giant);
        assert!(lines.iter().all(|l| l.chars().count() <= ITEM_LIMIT));
        let total: usize = lines.iter().map(|l| l.matches('x').count()).sum();
        assert_eq!(total, 1000);
    }

    #[test]
    fn warnings_within_the_total_pass_whole_and_the_rest_is_counted() {
        let few = ["a: one", "b: two"];
        assert_eq!(warnings(&few), few);

        let many: Vec<String> = (0..40)
            .map(|i| format!("spec.stages[{i}]: {}", "y".repeat(180)))
            .collect();
        let out = warnings(&many);
        let total: usize = out.iter().map(|l| l.chars().count()).sum();
        assert!(total <= TOTAL_LIMIT, "{total}");
        let (note, kept) = out.split_last().unwrap();
        assert_eq!(kept, &many[..kept.len()], "kept in order, whole");
        assert_eq!(
            *note,
            format!(
                "{} more warnings left out: the API server passes on at most 4096 characters \
                 of warnings per request",
                many.len() - kept.len()
            )
        );
    }
}
