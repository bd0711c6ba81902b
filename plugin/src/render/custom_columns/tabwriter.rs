//! The column aligner kubectl prints tables with: `github.com/liggitt/tabwriter` (Go's
//! `text/tabwriter` plus `RememberWidths`) as `printers.GetNewTabWriter` sets it up: minimum
//! width 6, padding 3, spaces. Ported rather than taken from the `tabwriter` crate because
//! kubectl's output depends on details that crate does not share: widths count runes (not
//! display columns), a line without tabs flushes the block, `\f` ends a line and flushes too, and
//! column widths are remembered across flushes.
//!
//! Only what kubectl's configuration uses is ported: no HTML filtering, escapes, right alignment,
//! tab padding or empty-column discarding.

const MIN_WIDTH: usize = 6;
const PADDING: usize = 3;

/// One cell: its text's size in bytes, its width in runes, and whether a `\t` ended it.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    size: usize,
    width: usize,
    htab: bool,
}

#[derive(Debug)]
pub(crate) struct TabWriter {
    out: String,
    /// Text of the cells not yet written, without the tabs and line breaks.
    buf: String,
    cell: Cell,
    lines: Vec<Vec<Cell>>,
    widths: Vec<usize>,
    max_widths: Vec<usize>,
}

impl TabWriter {
    pub(crate) fn new() -> Self {
        TabWriter {
            out: String::new(),
            buf: String::new(),
            cell: Cell::default(),
            lines: vec![Vec::new()],
            widths: Vec::new(),
            max_widths: Vec::new(),
        }
    }

    pub(crate) fn write(&mut self, text: &str) {
        let mut start = 0;
        for (i, ch) in text.char_indices() {
            if !matches!(ch, '\t' | '\u{b}' | '\n' | '\u{c}') {
                continue;
            }
            self.append(&text[start..i]);
            start = i + 1;
            let cells = self.terminate_cell(ch == '\t');
            if ch == '\n' || ch == '\u{c}' {
                self.lines.push(Vec::new());
                // A line with a single cell cannot affect the alignment of later lines.
                if ch == '\u{c}' || cells == 1 {
                    self.flush();
                }
            }
        }
        self.append(&text[start..]);
    }

    /// Write out everything buffered; the result so far.
    pub(crate) fn finish(mut self) -> String {
        self.flush();
        self.out
    }

    fn append(&mut self, text: &str) {
        self.buf.push_str(text);
        self.cell.size += text.len();
        self.cell.width += text.chars().count();
    }

    fn terminate_cell(&mut self, htab: bool) -> usize {
        self.cell.htab = htab;
        let cell = std::mem::take(&mut self.cell);
        let line = self.current_line();
        line.push(cell);
        line.len()
    }

    fn current_line(&mut self) -> &mut Vec<Cell> {
        if self.lines.is_empty() {
            self.lines.push(Vec::new());
        }
        let last = self.lines.len() - 1;
        &mut self.lines[last]
    }

    fn flush(&mut self) {
        if self.cell.size > 0 {
            self.terminate_cell(false);
        }
        let lines = self.lines.len();
        self.format(0, 0, lines);
        self.buf.clear();
        self.cell = Cell::default();
        self.lines = vec![Vec::new()];
        self.widths.clear();
    }

    /// Align the lines `line0..line1` column by column (Go's recursive `format`); `pos` is the
    /// buffer offset of `line0`'s text. Returns the offset after `line1`'s predecessor.
    fn format(&mut self, pos0: usize, line0: usize, line1: usize) -> usize {
        let mut pos = pos0;
        let mut line0 = line0;
        let column = self.widths.len();
        let mut this = line0;
        while this < line1 {
            // The last cell of a line is not part of a column.
            if column + 1 >= self.lines[this].len() {
                this += 1;
                continue;
            }
            pos = self.write_lines(pos, line0, this);
            line0 = this;

            let mut width = MIN_WIDTH;
            while this < line1 {
                let line = &self.lines[this];
                if column + 1 >= line.len() {
                    break;
                }
                width = width.max(line[column].width + PADDING);
                this += 1;
            }

            // RememberWidths: a column never gets narrower than it was in an earlier block.
            if self.max_widths.len() < self.widths.len() {
                let missing = self.widths[self.max_widths.len()..].to_vec();
                self.max_widths.extend(missing);
            }
            let index = self.widths.len();
            if self.max_widths.len() == index {
                self.max_widths.push(width);
            } else if self.max_widths[index] > width {
                width = self.max_widths[index];
            } else {
                self.max_widths[index] = width;
            }

            self.widths.push(width);
            pos = self.format(pos, line0, this);
            self.widths.pop();
            line0 = this;
        }
        self.write_lines(pos, line0, line1)
    }

    fn write_lines(&mut self, pos0: usize, line0: usize, line1: usize) -> usize {
        let mut pos = pos0;
        for i in line0..line1 {
            for (j, cell) in self.lines[i].iter().enumerate() {
                if cell.size > 0 {
                    self.out.push_str(&self.buf[pos..pos + cell.size]);
                    pos += cell.size;
                }
                if let Some(width) = self.widths.get(j) {
                    for _ in cell.width..*width {
                        self.out.push(' ');
                    }
                }
            }
            if i + 1 == self.lines.len() {
                // The last buffered line has no line break: write what is left of it.
                self.out.push_str(&self.buf[pos..pos + self.cell.size]);
                pos += self.cell.size;
            } else {
                self.out.push('\n');
            }
        }
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(text: &str) -> String {
        let mut w = TabWriter::new();
        w.write(text);
        w.finish()
    }

    #[test]
    fn columns_are_padded_to_the_widest_cell_plus_three() {
        assert_eq!(
            aligned("NAME\tAPI_VERSION\nfoo\tbaz\n"),
            "NAME   API_VERSION\nfoo    baz\n"
        );
        assert_eq!(
            aligned("NAME\tLONG COLUMN NAME\tLABEL 2\nfoo\tfoo\tfoo\nbar\tbar\tbar\n"),
            "NAME   LONG COLUMN NAME   LABEL 2\nfoo    foo                foo\nbar    bar                bar\n"
        );
    }

    #[test]
    fn widths_count_runes() {
        assert_eq!(aligned("é\tx\nab\ty\n"), "é     x\nab    y\n");
    }

    #[test]
    fn a_line_without_tabs_ends_the_block_but_widths_are_remembered() {
        // The single-cell line flushes; the next block keeps the first block's width.
        assert_eq!(
            aligned("a-long-cell\tx\nsolo\nb\ty\n"),
            "a-long-cell   x\nsolo\nb             y\n"
        );
        // A form feed is a line break that also flushes.
        assert_eq!(aligned("ab\u{c}cd\tx\n"), "ab\ncd    x\n");
    }

    #[test]
    fn unterminated_text_is_written_as_is() {
        assert_eq!(aligned("a\tb"), "a     b");
        assert_eq!(aligned(""), "");
    }

    /// Any mix of cells, tabs and line breaks: the text comes out in order, only spaced out.
    #[test]
    fn any_input_keeps_its_text_in_order() {
        let alphabet: Vec<char> = "ab é\t\n\u{b}\u{c}".chars().collect();
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let visible = |s: &str| -> String {
            s.chars()
                .filter(|c| !matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}'))
                .collect()
        };
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let out = aligned(&text);
            assert_eq!(visible(&out), visible(&text), "{text:?} gave {out:?}");
        }
    }
}
