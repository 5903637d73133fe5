//! The one table layout every text renderer uses: a header row, a rule, and columns padded to
//! their widest cell; cells that look numeric are right-aligned. The figures in its cells are
//! formatted here too, so every renderer writes a number the same way.

/// Thousands separators for ns figures.
pub fn group(n: u64) -> String {
    irqlab_stats::thousands(n)
}

/// A figure that may be absent: `-` in its cell.
pub fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), group)
}

/// A text table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Left-align every cell (a table whose columns mix numbers and words).
    left: bool,
}

fn numeric(s: &str) -> bool {
    let t = s
        .trim_end_matches(['x', '%', 's'])
        .trim_start_matches(['-', '+', '±']);
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
}

impl Table {
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            left: false,
        }
    }

    /// Left-align numbers too: for columns that mix `2.76x` with `holds`.
    pub fn left_aligned(mut self) -> Self {
        self.left = true;
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String, align_numbers: bool| {
            let mut parts = Vec::with_capacity(n);
            for (i, c) in cells.iter().enumerate().take(n) {
                let pad = width[i] - c.chars().count();
                if align_numbers && numeric(c) {
                    parts.push(format!("{}{}", " ".repeat(pad), c));
                } else if i + 1 == n {
                    parts.push(c.clone());
                } else {
                    parts.push(format!("{}{}", c, " ".repeat(pad)));
                }
            }
            out.push_str(parts.join("  ").trim_end());
            out.push('\n');
        };
        line(&self.headers, &mut out, false);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        line(&rule, &mut out, false);
        for r in &self.rows {
            line(r, &mut out, !self.left);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_columns_and_right_aligns_numbers() {
        let mut t = Table::new(&["name", "value (ns)"]);
        t.row(vec!["a".into(), "5".into()]);
        t.row(vec!["longer".into(), "1,250".into()]);
        assert_eq!(
            t.render(),
            "name    value (ns)\n------  ----------\na                5\nlonger       1,250\n"
        );
    }
}
