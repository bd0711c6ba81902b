//! Unified diffs of YAML documents, coloured on a terminal.

use similar::TextDiff;

use super::{Style, Tone};

/// `diff -u`-style text for `old` → `new`; empty when they are equal.
pub fn unified(old: &str, new: &str, old_label: &str, new_label: &str, style: &Style) -> String {
    if old == new {
        return String::new();
    }
    let diff = TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string();
    colorize(&text, style)
}

/// Colour the lines of a unified diff (headers bold, hunks cyan, removals red, additions green).
pub fn colorize(text: &str, style: &Style) -> String {
    if !style.color {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() * 2);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let tone = if body.starts_with("+++") || body.starts_with("---") {
            Tone::Strong
        } else if body.starts_with("@@") {
            Tone::Active
        } else if body.starts_with('+') {
            Tone::Good
        } else if body.starts_with('-') {
            Tone::Bad
        } else {
            Tone::Plain
        };
        out.push_str(&style.paint(body, tone));
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_has_headers_and_hunks() {
        let text = unified(
            "a: 1\nb: 2\n",
            "a: 1\nb: 3\n",
            "live",
            "merged",
            &Style::plain(),
        );
        assert!(text.starts_with("--- live\n+++ merged\n@@ -1,2 +1,2 @@\n"));
        assert!(text.contains("-b: 2\n+b: 3\n"));
        assert_eq!(unified("x\n", "x\n", "a", "b", &Style::plain()), "");
    }

    #[test]
    fn colour_marks_added_and_removed_lines() {
        let text = unified("a\n", "b\n", "l", "m", &Style { color: true });
        assert!(text.contains("\u{1b}[32m+b"));
        assert!(text.contains("\u{1b}[31m-a"));
    }
}
