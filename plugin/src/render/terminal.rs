//! The terminal a view is drawn on: its height, and fitting a view into it.

/// Rows of the terminal on stdout, when it is one.
#[cfg(unix)]
pub fn height() -> Option<usize> {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own; a failure leaves it zeroed.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_row > 0).then_some(usize::from(size.ws_row))
}

#[cfg(not(unix))]
pub fn height() -> Option<usize> {
    None
}

/// The first lines of `text` that fit `rows`, with a last line saying how many were left out,
/// so that the top of a view (its header) stays on screen instead of scrolling away.
pub fn clip(text: &str, rows: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() < rows || rows < 3 {
        return text.to_string();
    }
    // One row for the note, one left free so the terminal does not scroll.
    let keep = rows - 2;
    let mut out: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
    out.push_str(&format!(
        "… {} more lines (the terminal is too short; enlarge it, or run without -w)\n",
        lines.len() - keep
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tall_view_keeps_its_top_and_says_what_is_left_out() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let clipped = clip(&text, 6);
        assert_eq!(
            clipped,
            "line 1\nline 2\nline 3\nline 4\n… 6 more lines (the terminal is too short; enlarge it, or run without -w)\n"
        );
        assert_eq!(clip(&text, 20), text);
    }
}
