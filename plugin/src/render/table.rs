//! kubectl-style tables: upper-case headers, columns separated by three spaces, no borders.

use super::visible_width;

/// Render rows (cells may carry colour; widths are measured on visible text).
pub fn render(headers: &[&str], rows: &[Vec<String>], no_headers: bool) -> String {
    let mut columns = Columns::new(headers, no_headers);
    columns.fit(rows);
    let mut out = String::new();
    if !no_headers {
        let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
        out.push_str(&columns.line(&header));
    }
    for row in rows {
        out.push_str(&columns.line(row));
    }
    out
}

/// Column widths that only grow, so that rows printed later (`list --watch`) line up with the
/// table printed first as long as they fit, as kubectl's `get --watch` does.
pub struct Columns {
    widths: Vec<usize>,
}

impl Columns {
    pub fn new(headers: &[&str], no_headers: bool) -> Columns {
        Columns {
            widths: if no_headers {
                vec![0; headers.len()]
            } else {
                headers.iter().map(|h| h.len()).collect()
            },
        }
    }

    pub fn fit(&mut self, rows: &[Vec<String>]) {
        for row in rows {
            for (i, cell) in row.iter().enumerate().take(self.widths.len()) {
                self.widths[i] = self.widths[i].max(visible_width(cell));
            }
        }
    }

    /// One row, padded to the widths, without trailing blanks, ending in a newline.
    pub fn line(&self, cells: &[String]) -> String {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate().take(self.widths.len()) {
            text.push_str(cell);
            if i + 1 < cells.len() {
                let pad = self.widths[i].saturating_sub(visible_width(cell)) + 3;
                text.push_str(&" ".repeat(pad));
            }
        }
        let mut line = text.trim_end().to_string();
        line.push('\n');
        line
    }
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
