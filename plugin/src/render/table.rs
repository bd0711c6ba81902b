//! kubectl-style tables: upper-case headers, columns separated by three spaces, no borders.

use super::visible_width;

/// Render rows (cells may carry colour; widths are measured on visible text).
pub fn render(headers: &[&str], rows: &[Vec<String>], no_headers: bool) -> String {
    let cols = headers.len();
    let mut widths: Vec<usize> = if no_headers {
        vec![0; cols]
    } else {
        headers.iter().map(|h| h.len()).collect()
    };
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(visible_width(cell));
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            text.push_str(cell);
            if i + 1 < cells.len() {
                let pad = widths[i].saturating_sub(visible_width(cell)) + 3;
                text.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    if !no_headers {
        line(headers.to_vec());
    }
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_on_visible_width() {
        let rows = vec![
            vec![
                "a".to_string(),
                "\u{1b}[32mok\u{1b}[39m".to_string(),
                "x".into(),
            ],
            vec!["long-name".to_string(), "failed".to_string(), "y".into()],
        ];
        let out = render(&["NAME", "STATE", "AGE"], &rows, false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "NAME        STATE    AGE");
        assert_eq!(lines[2], "long-name   failed   y");
        assert_eq!(
            super::super::visible_width(lines[1]),
            "a           ok       x".len()
        );
    }

    #[test]
    fn no_headers_drops_the_header_row() {
        let out = render(&["NAME"], &[vec!["p".into()]], true);
        assert_eq!(out, "p\n");
    }
}
