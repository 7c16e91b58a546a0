//! Parsers for the evaluation datasets: bytes in, typed rows out.
//!
//! Every row is kept exactly as published (no dedup, no filtering, no trimming of sentences).
//! Anything malformed is an error naming the source and the line; nothing is skipped or
//! repaired. (Blank lines are not rows: the CSV reader passes over them.)

use anyhow::{anyhow, bail, Result};
use csv::StringRecord;

/// The six SR files, in the column order of the paper's Table 4.
pub const SR_FILES: [&str; 6] = ["stsb", "sickr", "askubuntu", "cqa", "twitter", "biosses"];
/// The header every SR file starts with.
pub const SR_HEADER: [&str; 5] = [
    "sentence1",
    "relation",
    "relationscore",
    "structure",
    "structurescore",
];
/// SR gold scores are 0–5.
pub const SR_SCORE_MAX: f64 = 5.0;
/// STS-B gold scores are 0–5.
pub const STSB_SCORE_MAX: f64 = 5.0;
/// Czech News STS scores are 0–6.
pub const CZECH_SCORE_MAX: f64 = 6.0;
/// Each Czech News STS test pair was scored by nine annotators.
pub const CZECH_ANNOTATORS: usize = 9;

/// One SR row: an original sentence and its two variants with their gold scores.
#[derive(Debug, Clone, PartialEq)]
pub struct SrRow {
    /// 1-based line in the file where the record starts (the header is line 1).
    pub line: usize,
    /// The original sentence.
    pub sentence1: String,
    /// The relational variant (concept order / relation perturbed).
    pub relation: String,
    /// Gold similarity of `sentence1` and `relation`, 0–5.
    pub relation_score: f64,
    /// The structural variant (voice change, inversion, partial inversion).
    pub structure: String,
    /// Gold similarity of `sentence1` and `structure`, 0–5.
    pub structure_score: f64,
}

/// One SR file (`stsb`, `sickr`, …).
#[derive(Debug, Clone, PartialEq)]
pub struct SrFile {
    /// The file's name without extension, one of [`SR_FILES`] for the published benchmark.
    pub name: String,
    /// All rows, in file order.
    pub rows: Vec<SrRow>,
}

/// One STS pair with a single gold score.
#[derive(Debug, Clone, PartialEq)]
pub struct StsPair {
    /// 1-based line in the file where the record starts.
    pub line: usize,
    /// First sentence.
    pub sentence1: String,
    /// Second sentence.
    pub sentence2: String,
    /// Gold similarity, 0–5.
    pub score: f64,
}

/// An STS Benchmark file (`stsb-en-test.csv`, `stsb-en-dev.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct StsFile {
    /// The source name given to the parser.
    pub name: String,
    /// All pairs, in file order.
    pub pairs: Vec<StsPair>,
}

/// One Czech News STS test pair with its nine individual annotations.
#[derive(Debug, Clone, PartialEq)]
pub struct CzechPair {
    /// 1-based line in the file.
    pub line: usize,
    /// First sentence.
    pub sentence1: String,
    /// Second sentence.
    pub sentence2: String,
    /// Mean of the nine annotations, 0–6 (checked against them).
    pub mean_score: f64,
    /// The nine annotators' integer scores, 0–6, in file order.
    pub annotations: [f64; CZECH_ANNOTATORS],
    /// The file's fifth column: an integer the dataset does not document (most likely the
    /// first-round score; one row holds -4). Kept as published, not used by any metric.
    pub extra: i64,
}

/// The Czech News STS context-free test set (`free-test.tsv`).
#[derive(Debug, Clone, PartialEq)]
pub struct CzechFile {
    /// The source name given to the parser.
    pub name: String,
    /// All pairs, in file order.
    pub pairs: Vec<CzechPair>,
}

/// Parses an SR CSV file (`sentence1,relation,relationscore,structure,structurescore`).
/// `name` is the file's name without extension (`"stsb"`, …); errors quote it.
pub fn parse_sr(name: &str, bytes: &[u8]) -> Result<SrFile> {
    let source = format!("SR file '{name}'");
    let records = read_records(&source, bytes, Format::Csv)?;
    let Some(((header_line, header), data)) = records.split_first() else {
        bail!("{source}: empty file");
    };
    if header.iter().ne(SR_HEADER) {
        bail!(
            "{source} line {header_line}: expected the header '{}', found '{}'",
            SR_HEADER.join(","),
            header.iter().collect::<Vec<_>>().join(",")
        );
    }
    if data.is_empty() {
        bail!("{source}: no data rows after the header");
    }
    let rows = data
        .iter()
        .map(|(line, record)| {
            let at = Location {
                source: &source,
                line: *line,
            };
            at.expect_columns(record, SR_HEADER.len())?;
            Ok(SrRow {
                line: *line,
                sentence1: at.sentence("sentence1", &record[0])?,
                relation: at.sentence("relation", &record[1])?,
                relation_score: at.score("relationscore", &record[2], SR_SCORE_MAX)?,
                structure: at.sentence("structure", &record[3])?,
                structure_score: at.score("structurescore", &record[4], SR_SCORE_MAX)?,
            })
        })
        .collect::<Result<_>>()?;
    Ok(SrFile {
        name: name.to_string(),
        rows,
    })
}

/// Parses an STS Benchmark CSV file (no header: `sentence1,sentence2,score`, score 0–5).
pub fn parse_stsb(source: &str, bytes: &[u8]) -> Result<StsFile> {
    let records = read_records(source, bytes, Format::Csv)?;
    let pairs = records
        .iter()
        .map(|(line, record)| {
            let at = Location {
                source,
                line: *line,
            };
            at.expect_columns(record, 3)?;
            Ok(StsPair {
                line: *line,
                sentence1: at.sentence("sentence1", &record[0])?,
                sentence2: at.sentence("sentence2", &record[1])?,
                score: at.score("score", &record[2], STSB_SCORE_MAX)?,
            })
        })
        .collect::<Result<_>>()?;
    Ok(StsFile {
        name: source.to_string(),
        pairs,
    })
}

/// Parses the Czech News STS TSV (no header: sentence1, sentence2, mean score 0–6, nine
/// comma-separated integer annotations, one more integer). Quotes are ordinary characters
/// in this file (290 of its 1200 lines contain some), so the reader runs without quoting.
pub fn parse_czech_sts(source: &str, bytes: &[u8]) -> Result<CzechFile> {
    let records = read_records(source, bytes, Format::TsvNoQuoting)?;
    let pairs = records
        .iter()
        .map(|(line, record)| {
            let at = Location {
                source,
                line: *line,
            };
            at.expect_columns(record, 5)?;
            let mean_score = at.score("mean score", &record[2], CZECH_SCORE_MAX)?;
            let annotations = at.czech_annotations(&record[3])?;
            let annotation_mean = annotations.iter().sum::<f64>() / CZECH_ANNOTATORS as f64;
            // Guards against shifted columns: the published means match to ~1e-15.
            if (annotation_mean - mean_score).abs() > 1e-6 {
                return Err(at.error(format!(
                    "mean score {mean_score} does not match the mean {annotation_mean} of the nine annotations"
                )));
            }
            let extra_text = record[4].trim();
            let extra = extra_text.parse::<i64>().map_err(|_| {
                at.error(format!("fifth column '{extra_text}' is not an integer"))
            })?;
            Ok(CzechPair {
                line: *line,
                sentence1: at.sentence("sentence1", &record[0])?,
                sentence2: at.sentence("sentence2", &record[1])?,
                mean_score,
                annotations,
                extra,
            })
        })
        .collect::<Result<_>>()?;
    Ok(CzechFile {
        name: source.to_string(),
        pairs,
    })
}

/// How a file is tokenised.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    /// RFC 4180 CSV: commas, double-quoted fields, `""` escapes.
    Csv,
    /// Tab-separated, quotes are plain text.
    TsvNoQuoting,
}

/// Reads all records with the line each starts on. Checks what the csv crate lets through:
/// an empty file and a quote that is never closed (csv would read it to end of file).
fn read_records(source: &str, bytes: &[u8], format: Format) -> Result<Vec<(usize, StringRecord)>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        bail!("{source}: empty file");
    }
    let mut builder = csv::ReaderBuilder::new();
    builder.has_headers(false).flexible(true);
    match format {
        Format::Csv => {
            if let Some(line) = unterminated_quote_line(bytes) {
                bail!("{source} line {line}: unterminated quoted field (the '\"' opened here is never closed)");
            }
        }
        Format::TsvNoQuoting => {
            builder.delimiter(b'\t').quoting(false);
        }
    }
    // Lines are counted here from byte offsets: csv's own line numbers drift on CRLF files
    // (there, and after blank lines, a record's offset points at the line break before it).
    let mut lines = LineCounter::default();
    let mut records = Vec::new();
    for result in builder.from_reader(bytes).into_records() {
        let record = result.map_err(|err| match err.position() {
            Some(pos) => anyhow!("{source} line {}: {err}", lines.line_at(bytes, pos.byte())),
            None => anyhow!("{source}: {err}"),
        })?;
        let line = record
            .position()
            .map_or(0, |pos| lines.line_at(bytes, pos.byte()));
        records.push((line, record));
    }
    Ok(records)
}

/// 1-based line numbers of record offsets (in increasing order), counting `\n` incrementally.
#[derive(Default)]
struct LineCounter {
    offset: usize,
    newlines: usize,
}

impl LineCounter {
    fn line_at(&mut self, bytes: &[u8], byte: u64) -> usize {
        let mut target = usize::try_from(byte).unwrap_or(usize::MAX).min(bytes.len());
        while target < bytes.len() && matches!(bytes[target], b'\r' | b'\n') {
            target += 1;
        }
        if target < self.offset {
            *self = LineCounter::default();
        }
        self.newlines += bytes[self.offset..target]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.offset = target;
        self.newlines + 1
    }
}

/// The line where a quoted field opens that is never closed, if any. Follows the csv crate's
/// rules: a quote is special only at the start of a field; inside a quoted field `""` is an
/// escaped quote and a single `"` ends the quoting.
fn unterminated_quote_line(bytes: &[u8]) -> Option<usize> {
    #[derive(PartialEq)]
    enum State {
        FieldStart,
        Unquoted,
        Quoted,
        QuoteInQuoted,
    }
    let mut state = State::FieldStart;
    let mut line = 1;
    let mut opened_on = 0;
    for &byte in bytes {
        state = match (state, byte) {
            (State::FieldStart, b'"') => {
                opened_on = line;
                State::Quoted
            }
            (State::Quoted, b'"') => State::QuoteInQuoted,
            (State::Quoted, _) => State::Quoted,
            (State::QuoteInQuoted, b'"') => State::Quoted,
            (_, b',' | b'\n' | b'\r') => State::FieldStart,
            _ => State::Unquoted,
        };
        if byte == b'\n' {
            line += 1;
        }
    }
    (state == State::Quoted).then_some(opened_on)
}

/// A source and line, for field checks whose errors say where they failed.
struct Location<'a> {
    source: &'a str,
    line: usize,
}

impl Location<'_> {
    fn error(&self, message: String) -> anyhow::Error {
        anyhow!("{} line {}: {message}", self.source, self.line)
    }

    fn expect_columns(&self, record: &StringRecord, expected: usize) -> Result<()> {
        if record.len() != expected {
            return Err(self.error(format!(
                "expected {expected} columns, found {}",
                record.len()
            )));
        }
        Ok(())
    }

    /// A sentence as published; only an empty (or all-blank) one is refused.
    fn sentence(&self, column: &str, text: &str) -> Result<String> {
        if text.trim().is_empty() {
            return Err(self.error(format!("empty {column}")));
        }
        Ok(text.to_string())
    }

    /// A finite score within `0..=max`.
    fn score(&self, column: &str, text: &str, max: f64) -> Result<f64> {
        let value: f64 = text
            .trim()
            .parse()
            .map_err(|_| self.error(format!("{column} '{text}' is not a number")))?;
        if !value.is_finite() || !(0.0..=max).contains(&value) {
            return Err(self.error(format!("{column} {value} is outside 0–{max}")));
        }
        Ok(value)
    }

    /// The nine comma-separated integer annotations of a Czech pair, each 0–6.
    fn czech_annotations(&self, text: &str) -> Result<[f64; CZECH_ANNOTATORS]> {
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() != CZECH_ANNOTATORS {
            return Err(self.error(format!(
                "expected {CZECH_ANNOTATORS} comma-separated annotations, found {} in '{text}'",
                parts.len()
            )));
        }
        let mut annotations = [0.0; CZECH_ANNOTATORS];
        for (slot, part) in annotations.iter_mut().zip(parts) {
            let value: u8 = part
                .trim()
                .parse()
                .map_err(|_| self.error(format!("annotation '{part}' is not an integer")))?;
            if f64::from(value) > CZECH_SCORE_MAX {
                return Err(self.error(format!("annotation {value} is outside 0–6")));
            }
            *slot = f64::from(value);
        }
        Ok(annotations)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The shared data folder: `$SR_BENCH_DATA` if set, else `<crate>/../shared/data`, else
    /// `/work/shared/data`. Panics if it is missing: real-data tests must not pass vacuously.
    pub(crate) fn data_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("SR_BENCH_DATA") {
            let dir = PathBuf::from(dir);
            assert!(
                dir.join("sr").is_dir(),
                "SR_BENCH_DATA={} has no sr/ folder",
                dir.display()
            );
            return dir;
        }
        [
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"),
            PathBuf::from("/work/shared/data"),
        ]
        .into_iter()
        .find(|dir| dir.join("sr").is_dir())
        .unwrap_or_else(|| {
            panic!(
                "evaluation data not found: set SR_BENCH_DATA to the folder holding sr/, \
                 stsb/ and czech-news-sts/ (tried <crate>/../shared/data and /work/shared/data)"
            )
        })
    }

    pub(crate) fn read_data(relative: &str) -> Vec<u8> {
        let path = data_dir().join(relative);
        std::fs::read(&path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()))
    }

    pub(crate) fn real_sr_files() -> Vec<SrFile> {
        SR_FILES
            .iter()
            .map(|name| parse_sr(name, &read_data(&format!("sr/{name}.csv"))).unwrap())
            .collect()
    }

    fn sr_error(bytes: &[u8]) -> String {
        format!("{:#}", parse_sr("t", bytes).unwrap_err())
    }

    const HEADER: &str = "sentence1,relation,relationscore,structure,structurescore\n";

    #[test]
    fn sr_parses_quoted_fields_with_commas_and_keeps_text_as_published() {
        let text = format!("{HEADER}\"A, b.\",\"B, a.\",2,A b .,4.0\r\nx ,y,0,z,5\n");
        let file = parse_sr("t", text.as_bytes()).unwrap();
        assert_eq!(file.name, "t");
        assert_eq!(file.rows.len(), 2);
        let row = &file.rows[0];
        assert_eq!(row.line, 2);
        assert_eq!(row.sentence1, "A, b.");
        assert_eq!(row.relation, "B, a.");
        assert_eq!(row.relation_score, 2.0);
        assert_eq!(row.structure, "A b .");
        assert_eq!(row.structure_score, 4.0);
        assert_eq!(file.rows[1].line, 3);
        assert_eq!(file.rows[1].sentence1, "x ");
    }

    #[test]
    fn sr_line_numbers_count_physical_lines_of_multiline_fields() {
        let text = format!("{HEADER}\"two\nlines\",b,1,c,2\nd,e,3,f,4\n");
        let file = parse_sr("t", text.as_bytes()).unwrap();
        assert_eq!(file.rows[0].sentence1, "two\nlines");
        assert_eq!(file.rows[1].line, 4);
    }

    #[test]
    fn sr_line_numbers_survive_blank_lines_and_crlf() {
        let text = format!("{HEADER}a,b,1,c,2\r\n\r\n\nd,e,3,f,4\r\n");
        let file = parse_sr("t", text.as_bytes()).unwrap();
        assert_eq!(file.rows.len(), 2);
        assert_eq!(file.rows[1].line, 5);
        let err = sr_error(format!("{HEADER}a,b,1,c,2\r\n\r\nd,e,x,f,4\r\n").as_bytes());
        assert_eq!(err, "SR file 't' line 4: relationscore 'x' is not a number");
    }

    #[test]
    fn sr_keeps_duplicate_rows() {
        let text = format!("{HEADER}a,b,1,c,2\na,b,1,c,2\n");
        assert_eq!(parse_sr("t", text.as_bytes()).unwrap().rows.len(), 2);
    }

    #[test]
    fn sr_accepts_a_byte_order_mark() {
        let text = format!("\u{FEFF}{HEADER}a,b,1,c,2\n");
        assert_eq!(parse_sr("t", text.as_bytes()).unwrap().rows.len(), 1);
    }

    #[test]
    fn sr_rejects_an_empty_file() {
        assert_eq!(sr_error(b""), "SR file 't': empty file");
        assert_eq!(sr_error(b" \n\n"), "SR file 't': empty file");
    }

    #[test]
    fn sr_rejects_a_header_without_rows() {
        assert_eq!(
            sr_error(HEADER.as_bytes()),
            "SR file 't': no data rows after the header"
        );
    }

    #[test]
    fn sr_rejects_a_wrong_header() {
        let err =
            sr_error(b"sentence1,structure,structurescore,relation,relationscore\na,b,1,c,2\n");
        assert!(
            err.starts_with("SR file 't' line 1: expected the header"),
            "{err}"
        );
    }

    #[test]
    fn sr_rejects_a_missing_column() {
        let err = sr_error(format!("{HEADER}a,b,1,c,2\na,b,1,c\n").as_bytes());
        assert_eq!(err, "SR file 't' line 3: expected 5 columns, found 4");
    }

    #[test]
    fn sr_rejects_an_extra_column() {
        let err = sr_error(format!("{HEADER}a,b,1,c,2,x\n").as_bytes());
        assert_eq!(err, "SR file 't' line 2: expected 5 columns, found 6");
    }

    #[test]
    fn sr_rejects_a_score_that_is_not_a_number() {
        let err = sr_error(format!("{HEADER}a,b,four,c,2\n").as_bytes());
        assert_eq!(
            err,
            "SR file 't' line 2: relationscore 'four' is not a number"
        );
        let err = sr_error(format!("{HEADER}a,b,1,c,\n").as_bytes());
        assert_eq!(err, "SR file 't' line 2: structurescore '' is not a number");
    }

    #[test]
    fn sr_rejects_non_finite_and_out_of_range_scores() {
        for (score, shown) in [("NaN", "NaN"), ("inf", "inf"), ("-1", "-1"), ("5.5", "5.5")] {
            let err = sr_error(format!("{HEADER}a,b,{score},c,2\n").as_bytes());
            assert_eq!(
                err,
                format!("SR file 't' line 2: relationscore {shown} is outside 0–5")
            );
        }
    }

    #[test]
    fn sr_rejects_an_unterminated_quote() {
        let err = sr_error(format!("{HEADER}a,b,1,c,2\n\"a,b,1,c,2\nd,e,3,f,4\n").as_bytes());
        assert_eq!(
            err,
            "SR file 't' line 3: unterminated quoted field (the '\"' opened here is never closed)"
        );
    }

    #[test]
    fn quote_scanner_follows_csv_rules() {
        assert_eq!(unterminated_quote_line(b"a,\"b\"\"c\",d\n"), None);
        assert_eq!(unterminated_quote_line(b"a,b\"c,d\n"), None); // bare quote mid-field is text
        assert_eq!(unterminated_quote_line(b"\"a\"x,\"b\n"), Some(1));
        assert_eq!(unterminated_quote_line(b"a\n\"b\"\"\n"), Some(2));
    }

    #[test]
    fn sr_rejects_an_empty_sentence() {
        let err = sr_error(format!("{HEADER}a,,1,c,2\n").as_bytes());
        assert_eq!(err, "SR file 't' line 2: empty relation");
    }

    #[test]
    fn sr_rejects_invalid_utf8() {
        let mut bytes = HEADER.as_bytes().to_vec();
        bytes.extend_from_slice(b"a\xFF,b,1,c,2\n");
        let err = sr_error(&bytes);
        assert!(err.starts_with("SR file 't' line 2: "), "{err}");
    }

    #[test]
    fn stsb_parses_and_validates() {
        let file = parse_stsb("stsb-test", b"A girl.,\"A boy, too.\",2.5\nx,y,5.0\n").unwrap();
        assert_eq!(file.pairs.len(), 2);
        assert_eq!(file.pairs[0].sentence2, "A boy, too.");
        assert_eq!(file.pairs[0].score, 2.5);
        assert_eq!(file.pairs[1].line, 2);
        let err = |bytes: &[u8]| format!("{:#}", parse_stsb("s", bytes).unwrap_err());
        assert_eq!(err(b""), "s: empty file");
        assert_eq!(err(b"a,b\n"), "s line 1: expected 3 columns, found 2");
        assert_eq!(
            err(b"a,b,1\na,b,x\n"),
            "s line 2: score 'x' is not a number"
        );
        assert_eq!(err(b"a,b,6\n"), "s line 1: score 6 is outside 0–5");
        assert_eq!(
            err(b"a,\"b,1\n"),
            "s line 1: unterminated quoted field (the '\"' opened here is never closed)"
        );
    }

    const CZ_ROW: &str = "Věta \"jedna\".\tVěta dvě.\t2.5555555555555554\t3,4,2,2,3,1,2,2,4\t2\r\n";

    #[test]
    fn czech_parses_quotes_as_text_and_crlf() {
        let text = format!("{CZ_ROW}\"Bez konce\tb\t0\t0,0,0,0,0,0,0,0,0\t-4\n");
        let file = parse_czech_sts("cz", text.as_bytes()).unwrap();
        assert_eq!(file.pairs.len(), 2);
        let pair = &file.pairs[0];
        assert_eq!(pair.sentence1, "Věta \"jedna\".");
        assert_eq!(pair.sentence2, "Věta dvě.");
        assert_eq!(
            pair.annotations,
            [3.0, 4.0, 2.0, 2.0, 3.0, 1.0, 2.0, 2.0, 4.0]
        );
        assert_eq!(pair.extra, 2);
        assert_eq!(file.pairs[1].sentence1, "\"Bez konce");
        assert_eq!(file.pairs[1].line, 2);
        assert_eq!(file.pairs[1].extra, -4);
    }

    #[test]
    fn czech_rejects_malformed_rows() {
        let err = |text: &str| format!("{:#}", parse_czech_sts("cz", text.as_bytes()).unwrap_err());
        assert_eq!(err(""), "cz: empty file");
        assert_eq!(
            err("a\tb\t1\t1,1,1,1,1,1,1,1,1\n"),
            "cz line 1: expected 5 columns, found 4"
        );
        assert_eq!(
            err("a\tb\t1\t1,1,1,1,1,1,1,1\t1\n"),
            "cz line 1: expected 9 comma-separated annotations, found 8 in '1,1,1,1,1,1,1,1'"
        );
        assert_eq!(
            err("a\tb\t1\t1,1,1,1,1,1,1,1,x\t1\n"),
            "cz line 1: annotation 'x' is not an integer"
        );
        assert_eq!(
            err("a\tb\t7\t7,7,7,7,7,7,7,7,7\t1\n"),
            "cz line 1: mean score 7 is outside 0–6"
        );
        assert_eq!(
            err("a\tb\t1\t1,1,1,1,1,1,1,1,7\t1\n"),
            "cz line 1: annotation 7 is outside 0–6"
        );
        assert_eq!(
            err("a\tb\t2\t1,1,1,1,1,1,1,1,1\t1\n"),
            "cz line 1: mean score 2 does not match the mean 1 of the nine annotations"
        );
        assert_eq!(
            err("a\tb\t1\t1,1,1,1,1,1,1,1,1\tx\n"),
            "cz line 1: fifth column 'x' is not an integer"
        );
        assert_eq!(
            err(&format!("{CZ_ROW}\tb\t1\t1,1,1,1,1,1,1,1,1\t1\n")),
            "cz line 2: empty sentence1"
        );
    }

    #[test]
    fn real_sr_files_parse_with_published_row_counts() {
        let expected = [1152, 3854, 334, 1820, 2041, 88];
        let files = real_sr_files();
        for (file, count) in files.iter().zip(expected) {
            assert_eq!(file.rows.len(), count, "{}", file.name);
        }
        let total: usize = files.iter().map(|f| f.rows.len()).sum();
        assert_eq!(total, 9289);
        // Integer gold scores 0–5, as the benchmark publishes them.
        for row in files.iter().flat_map(|f| &f.rows) {
            assert_eq!(row.relation_score.fract(), 0.0);
            assert_eq!(row.structure_score.fract(), 0.0);
        }
    }

    #[test]
    fn real_stsb_files_parse_with_published_row_counts() {
        let test = parse_stsb("stsb-en-test", &read_data("stsb/stsb-en-test.csv")).unwrap();
        let dev = parse_stsb("stsb-en-dev", &read_data("stsb/stsb-en-dev.csv")).unwrap();
        assert_eq!(test.pairs.len(), 1379);
        assert_eq!(dev.pairs.len(), 1500);
        assert_eq!(test.pairs[0].sentence1, "A girl is styling her hair.");
        assert_eq!(test.pairs[0].score, 2.5);
    }

    #[test]
    fn real_czech_file_parses_all_rows() {
        let file =
            parse_czech_sts("free-test.tsv", &read_data("czech-news-sts/free-test.tsv")).unwrap();
        assert_eq!(file.pairs.len(), 1200);
        assert_eq!(file.pairs[1199].line, 1200);
        // Sentences with quotes inside stay whole (the file has some on 290 lines).
        let with_quotes = file
            .pairs
            .iter()
            .filter(|p| p.sentence1.contains('"') || p.sentence2.contains('"'))
            .count();
        assert_eq!(with_quotes, 290);
    }
}
