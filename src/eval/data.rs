//! Parsers for the evaluation datasets: bytes in, typed rows out.
//!
//! Every row is kept exactly as published (no dedup, no filtering, no trimming of sentences).
//! Anything malformed is an error naming the source and the line; nothing is skipped or
//! repaired. (Blank lines are not rows: the CSV reader passes over them.)

use anyhow::{anyhow, bail, Result};
use csv::StringRecord;

/// The six SR files, in the column order of the paper's Table 4.
pub const SR_FILES: [&str; 6] = ["stsb", "sickr", "askubuntu", "cqa", "twitter", "biosses"];
/// Where an SR file lies in a data folder (`data/` natively, the site's `data/` in the page).
pub fn sr_path(name: &str) -> String {
    format!("sr/{name}.csv")
}
/// Where the STS-B test file lies in a data folder.
pub const STSB_TEST_PATH: &str = "stsb/stsb-en-test.csv";
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
    /// Tab-separated with CSV's quoting (what spreadsheets save).
    Tsv,
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
    let quoted = |delimiter: u8| match unterminated_quote_line(bytes, delimiter) {
        Some(line) => Err(anyhow!(
            "{source} line {line}: unterminated quoted field (the '\"' opened here is never closed)"
        )),
        None => Ok(()),
    };
    match format {
        Format::Csv => quoted(b',')?,
        Format::TsvNoQuoting => {
            builder.delimiter(b'\t').quoting(false);
        }
        Format::Tsv => {
            quoted(b'\t')?;
            builder.delimiter(b'\t');
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
fn unterminated_quote_line(bytes: &[u8], delimiter: u8) -> Option<usize> {
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
            (_, b'\n' | b'\r') => State::FieldStart,
            (_, b) if b == delimiter => State::FieldStart,
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

mod own;
pub use own::{check_pairs_size, parse_pairs, OwnPairs};

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
