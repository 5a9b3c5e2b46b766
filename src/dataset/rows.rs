//! How a format's file holds its rows, and the counter that derives `rows` from the lines of a
//! stream fed in arbitrary chunks: the same count at generation and at every verify.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

/// Counts `\n` bytes, eight at a time (SWAR: a byte of `x ^ 0x0a..` is zero exactly where
/// `x` holds a newline; the high bit of each byte of the expression below is set for
/// non-zero bytes, without carries between bytes).
fn count_newlines(buf: &[u8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const NL: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut words = buf.chunks_exact(8);
    let mut total = 0u64;
    for w in &mut words {
        let t = u64::from_le_bytes(w.try_into().expect("8 bytes")) ^ NL;
        let nonzero = ((t & LOW7) + LOW7) | t;
        total += (!nonzero & !LOW7).count_ones() as u64;
    }
    total + words.remainder().iter().filter(|&&b| b == b'\n').count() as u64
}

/// A data format a loader reads (`tsbs_generate_data --format`, and the directory under a
/// dataset's `formats/`). Each product declares the one it loads, as it declares its query
/// format: this module knows none by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataFormat {
    pub name: &'static str,
    /// How its file holds rows.
    pub layout: RowLayout,
}

/// How a format's file holds its rows (recorded in the variant's manifest, so `rows` is
/// derived the same way at generation and at every verify).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowLayout {
    /// Lines before the first row (a schema header, say).
    pub header_lines: u64,
    /// Lines each row takes (two where a tags line precedes each values line).
    pub lines_per_row: u64,
    pub row_line: RowLine,
}

/// How a row is recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowLine {
    /// Every line after the header is one row (line protocol).
    #[serde(rename = "every line")]
    Every,
    /// A line `<measurement>,<digit>...` (not `tags,`): the values line of a row whose tags
    /// line precedes it.
    #[serde(rename = "<measurement>,<digit>")]
    MeasurementDigit,
}

impl RowLayout {
    /// The line count a file of `rows` rows has.
    pub fn lines_for(&self, rows: u64) -> u64 {
        self.header_lines + self.lines_per_row * rows
    }
}

/// Counts lines and rows of a stream fed in arbitrary chunks (a line may span chunks).
#[derive(Debug, Clone)]
pub(super) struct RowCounter {
    layout: RowLayout,
    pub(super) lines: u64,
    rows: u64,
    state: LineState,
    /// Whether the first field read so far is still a prefix of `tags`.
    first: u8,
    /// Per-table counts, for use cases with several tables or no fixed row count.
    pub(super) tables: Option<Box<TableCounter>>,
}

/// What one table of a stored format holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRows {
    /// Rows the loader sends (lines of the table).
    pub rows: u64,
    /// Metrics (fields) the loader counts in them: line protocol counts the fields a line
    /// carries (`cmd/tsbs_load_*/scan.go`), the timescaledb loader every value column, empty
    /// or not (`pkg/targets/timescaledb/process.go`).
    pub metrics: u64,
    /// Lines that repeat an earlier line's series and time. A line-protocol server keeps
    /// such a row once (the last write wins), so it stores `rows - duplicates`. Only IoT has
    /// them: it clears a truck's `name` tag at random (`iot/simulator.go` `ZeroTags`), and
    /// two nameless trucks with equal other tags at one time are one series.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicates: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TableRows {
    /// Rows a server holds after loading the table.
    pub fn stored(&self) -> u64 {
        self.rows - self.duplicates
    }
}

/// Counts rows and metrics per table line by line, in the layout's shape.
#[derive(Debug, Clone)]
pub(super) struct TableCounter {
    line_protocol: bool,
    /// `,<device tag>=`: lines with it are unique per device, table and time.
    device: Vec<u8>,
    partial: Vec<u8>,
    pub(super) tables: BTreeMap<String, TableRows>,
    /// Series and time of the lines without a device tag (few: 1 % of IoT lines lose a tag,
    /// one in eight of those the name).
    seen: HashSet<Vec<u8>>,
}

impl TableCounter {
    pub(super) fn new(layout: RowLayout, device_tag: &str) -> TableCounter {
        TableCounter {
            line_protocol: layout.row_line == RowLine::Every,
            device: format!(",{device_tag}=").into_bytes(),
            partial: Vec::new(),
            tables: BTreeMap::new(),
            seen: HashSet::new(),
        }
    }

    fn feed(&mut self, buf: &[u8]) {
        let mut rest = buf;
        while let Some(n) = rest.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                self.line(&rest[..n]);
            } else {
                let mut l = std::mem::take(&mut self.partial);
                l.extend_from_slice(&rest[..n]);
                self.line(&l);
            }
            rest = &rest[n + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    fn entry(&mut self, table: &[u8]) -> &mut TableRows {
        let name = String::from_utf8_lossy(table);
        if !self.tables.contains_key(name.as_ref()) {
            self.tables.insert(name.to_string(), TableRows::default());
        }
        self.tables.get_mut(name.as_ref()).expect("inserted")
    }

    fn line(&mut self, l: &[u8]) {
        if self.line_protocol {
            self.line_protocol_row(l)
        } else {
            self.values_row(l)
        }
    }

    /// `<table>,<tags> <fields> <time>`: TSBS's loaders split on spaces, and count the
    /// comma-separated fields of the middle part.
    fn line_protocol_row(&mut self, l: &[u8]) {
        let Some(sp1) = l.iter().position(|&b| b == b' ') else {
            return;
        };
        let series = &l[..sp1];
        let table_end = series.iter().position(|&b| b == b',').unwrap_or(sp1);
        let last = l.iter().rposition(|&b| b == b' ').unwrap_or(sp1);
        let fields = if last > sp1 {
            &l[sp1 + 1..last]
        } else {
            &l[sp1 + 1..]
        };
        let metrics = 1 + fields.iter().filter(|&&b| b == b',').count() as u64;
        let has_device = series[table_end..]
            .windows(self.device.len())
            .any(|w| w == self.device.as_slice());
        let duplicate = !has_device && {
            let mut key = series.to_vec();
            key.extend_from_slice(&l[last..]);
            !self.seen.insert(key)
        };
        let t = self.entry(&l[..table_end]);
        t.rows += 1;
        t.metrics += metrics;
        if duplicate {
            t.duplicates += 1;
        }
    }

    /// `<table>,<time>,<v1>,...`: a values row (tags lines and the header are not rows).
    fn values_row(&mut self, l: &[u8]) {
        let Some(c) = l.iter().position(|&b| b == b',') else {
            return;
        };
        if c == 0 || &l[..c] == b"tags" || !l.get(c + 1).is_some_and(|b| b.is_ascii_digit()) {
            return;
        }
        let commas = l.iter().filter(|&&b| b == b',').count() as u64;
        let t = self.entry(&l[..c]);
        t.rows += 1;
        t.metrics += commas - 1;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineState {
    Start,
    FirstField,
    AfterComma,
    Rest,
}

impl RowCounter {
    pub(super) fn new(layout: RowLayout) -> RowCounter {
        RowCounter {
            layout,
            lines: 0,
            rows: 0,
            state: LineState::Start,
            first: 0,
            tables: None,
        }
    }

    /// A counter that also counts rows, metrics and repeated series per table.
    pub(super) fn with_tables(layout: RowLayout, device_tag: &str) -> RowCounter {
        RowCounter {
            tables: Some(Box::new(TableCounter::new(layout, device_tag))),
            ..RowCounter::new(layout)
        }
    }

    /// The per-table counts (when counted).
    pub(super) fn table_rows(&self) -> Option<BTreeMap<String, TableRows>> {
        self.tables.as_ref().map(|t| t.tables.clone())
    }

    /// Feeds a chunk; returns the rows it completed.
    pub(super) fn feed(&mut self, buf: &[u8]) -> u64 {
        let before = self.rows();
        if let Some(t) = self.tables.as_mut() {
            t.feed(buf);
        }
        match self.layout.row_line {
            RowLine::Every => self.lines += count_newlines(buf),
            RowLine::MeasurementDigit => self.feed_recognising(buf),
        }
        self.rows() - before
    }

    fn feed_recognising(&mut self, buf: &[u8]) {
        const TAGS: &[u8] = b"tags";
        let mut i = 0;
        while i < buf.len() {
            let b = buf[i];
            if b == b'\n' {
                self.lines += 1;
                self.state = LineState::Start;
                i += 1;
                continue;
            }
            match self.state {
                LineState::Start => {
                    // `first` counts matched bytes of `tags`; u8::MAX once it cannot match.
                    self.first = if b == TAGS[0] { 1 } else { u8::MAX };
                    // A line starting with ',' has no measurement: not a row.
                    self.state = if b == b',' {
                        LineState::Rest
                    } else {
                        LineState::FirstField
                    };
                }
                LineState::FirstField => {
                    if b == b',' {
                        self.state = LineState::AfterComma;
                    } else {
                        let k = self.first as usize;
                        self.first = if k < TAGS.len() && TAGS[k] == b {
                            k as u8 + 1
                        } else {
                            u8::MAX
                        };
                    }
                }
                LineState::AfterComma => {
                    if b.is_ascii_digit() && self.first as usize != TAGS.len() {
                        self.rows += 1;
                    }
                    self.state = LineState::Rest;
                }
                LineState::Rest => {
                    // Skip to the end of the line in one scan.
                    match buf[i..].iter().position(|&c| c == b'\n') {
                        Some(p) => i += p,
                        None => i = buf.len(),
                    }
                    continue;
                }
            }
            i += 1;
        }
    }

    /// Rows seen so far.
    pub(super) fn rows(&self) -> u64 {
        match self.layout.row_line {
            RowLine::Every => {
                self.lines.saturating_sub(self.layout.header_lines)
                    / self.layout.lines_per_row.max(1)
            }
            RowLine::MeasurementDigit => self.rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // The layouts of the two shapes TSBS writes (the products declare their own; these are
    // written out here so the counter is tested on its own).
    const LINES: RowLayout = RowLayout {
        header_lines: 0,
        lines_per_row: 1,
        row_line: RowLine::Every,
    };
    const TAGS_THEN_VALUES: RowLayout = RowLayout {
        header_lines: 3,
        lines_per_row: 2,
        row_line: RowLine::MeasurementDigit,
    };

    #[test]
    fn newline_count() {
        assert_eq!(count_newlines(b"a\nb\n\n"), 3);
        assert_eq!(count_newlines(&vec![b'\n'; 200_000]), 200_000);
        for len in [0usize, 1, 31, 32, 8159, 8160, 8161, 100_003] {
            let buf: Vec<u8> = (0..len)
                .map(|i| if i % 7 == 3 { b'\n' } else { b'x' })
                .collect();
            let naive = buf.iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(count_newlines(&buf), naive, "{len}");
        }
    }

    /// The real generator's timescaledb output (head of 30 lines: the 3 header lines, 13
    /// tags/values pairs and a trailing tags line) holds 13 rows, whatever the chunking.
    #[test]
    fn timescaledb_rows_are_counted_on_the_real_fixture() {
        let head = include_bytes!(
            "../../tests/fixtures/tsbs-real-postgresql/data/cpu-timescaledb.head30.txt"
        );
        let text = std::str::from_utf8(head).unwrap();
        assert_eq!(text.lines().count(), 30);
        // Independent of the counter: lines `cpu,` + digit.
        let naive = text
            .lines()
            .filter(|l| {
                l.strip_prefix("cpu,")
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
            .count() as u64;
        assert_eq!(naive, 13);
        for chunk in [1usize, 2, 3, 5, 7, 64, 4096, head.len()] {
            let mut c = RowCounter::new(TAGS_THEN_VALUES);
            let mut fed = 0;
            for part in head.chunks(chunk) {
                fed += c.feed(part);
            }
            assert_eq!((c.rows(), c.lines, fed), (13, 30, 13), "chunk {chunk}");
        }
        // A complete file has 3 + 2 x rows lines; this head is cut after a tags line.
        assert_eq!(TAGS_THEN_VALUES.lines_for(13), 29);
        // The header lines and tags lines are never rows.
        let mut c = RowCounter::new(TAGS_THEN_VALUES);
        c.feed(
            b"tags,hostname string\ncpu,usage_user\n\ntags,hostname=host_0\ntags,1\n,1\ncpu,1\n",
        );
        assert_eq!((c.rows(), c.lines), (1, 7));
    }

    #[test]
    fn influx_rows_are_lines() {
        let head =
            include_bytes!("../../tests/fixtures/tsbs-real-postgresql/data/cpu-influx.head30.txt");
        let mut c = RowCounter::new(LINES);
        c.feed(head);
        assert_eq!((c.rows(), c.lines), (30, 30));
    }

    /// Line protocol per table: rows, metrics as TSBS's loaders count them (the fields of the
    /// middle part: float tags written as fields count, cleared fields do not), and lines
    /// whose series and time repeat an earlier line's (only possible without the device tag).
    #[test]
    fn line_protocol_tables_metrics_and_repeats() {
        let text = "\
readings,name=truck_0,fleet=South,driver=Trish load_capacity=1500,latitude=52.3,velocity=0i 100
diagnostics,name=truck_0,fleet=South,driver=Trish load_capacity=1500,fuel_state=1 100
readings,fleet=South,driver=Albert load_capacity=2000,latitude=72.4 160
readings,fleet=South,driver=Albert load_capacity=2000,latitude=72.5,velocity=3i 160
readings,fleet=South,driver=Albert load_capacity=2000,latitude=72.5 220
readings,name=truck_1,fleet=South,driver=Albert load_capacity=2000,latitude=72.4 160
";
        for chunk in [1usize, 3, 17, text.len()] {
            let mut c = RowCounter::with_tables(LINES, "name");
            for part in text.as_bytes().chunks(chunk) {
                c.feed(part);
            }
            let t = c.table_rows().unwrap();
            assert_eq!(c.rows(), 6, "chunk {chunk}");
            let r = &t["readings"];
            assert_eq!((r.rows, r.metrics, r.duplicates, r.stored()), (5, 12, 1, 4));
            let d = &t["diagnostics"];
            assert_eq!((d.rows, d.metrics, d.duplicates), (1, 2, 0));
        }
        // A device tag is only a tag: `name=` inside a field or another tag's value is not it.
        let mut c = RowCounter::with_tables(LINES, "name");
        c.feed(b"m,xname=a f=1 1\nm,xname=a f=2 1\n");
        assert_eq!(c.table_rows().unwrap()["m"].duplicates, 1);
    }

    /// The timescaledb layout per table: the header (tags schema, a line per table, a blank
    /// line) and the tags lines are not rows; a values row's metrics are its value columns,
    /// empty ones included (as the loader counts them); nothing repeats (PostgreSQL keeps
    /// every row).
    #[test]
    fn timescaledb_tables_count_every_value_column() {
        let text = "\
tags,name string,fleet string,load_capacity float32
diagnostics,fuel_state,current_load,status
readings,latitude,longitude,elevation

tags,name=truck_0,fleet=South,load_capacity=1500
readings,100,52.3,4.7,124
tags,name=,fleet=South,load_capacity=1500
diagnostics,100,,3742,0
tags,name=,fleet=South,load_capacity=1500
diagnostics,100,0.9,3742,
";
        let layout = RowLayout {
            header_lines: 4,
            ..TAGS_THEN_VALUES
        };
        let mut c = RowCounter::with_tables(layout, "name");
        c.feed(text.as_bytes());
        assert_eq!((c.rows(), c.lines), (3, 10));
        assert_eq!(layout.lines_for(3), 10);
        let t = c.table_rows().unwrap();
        assert_eq!((t["readings"].rows, t["readings"].metrics), (1, 3));
        let d = &t["diagnostics"];
        assert_eq!((d.rows, d.metrics, d.duplicates), (2, 6, 0));
        assert_eq!(t.len(), 2);
    }

    /// The layout is recorded in the manifest in words, and read back.
    #[test]
    fn layout_round_trips_through_json() {
        let v = serde_json::to_value(TAGS_THEN_VALUES).unwrap();
        assert_eq!(
            v,
            json!({"header_lines": 3, "lines_per_row": 2, "row_line": "<measurement>,<digit>"})
        );
        let back: RowLayout = serde_json::from_value(v).unwrap();
        assert_eq!(back, TAGS_THEN_VALUES);
    }
}
