//! A user's own pairs (`sr-bench eval --pairs FILE`, the page's "Your own pairs"): CSV or TSV
//! in the STS layout (`sentence1,sentence2,score`, with or without that header) or in the SR
//! files' layout (their header). Untrusted input: its size, its bytes and every field are
//! checked, and each error names the line and the column.

use anyhow::{bail, Result};
use csv::StringRecord;

use super::{read_records, Format, SrFile, SrRow, StsFile, StsPair, SR_HEADER};

/// Largest pairs file read (bytes): 10,000 pairs of long sentences fit well within it.
const MAX_PAIRS_BYTES: usize = 16 << 20;
/// Most pairs (STS layout) or rows (SR layout, two pairs each) a file may hold: their
/// embeddings are kept until the run ends (20,000 texts of MPNet are 61 MB).
const MAX_PAIRS: usize = 10_000;
/// The STS layout's header.
const STS_HEADER: [&str; 3] = ["sentence1", "sentence2", "score"];
/// Score scales a file's scores are divided by for the MSE: the smallest that holds them all.
const SCALES: [f64; 5] = [1.0, 5.0, 6.0, 10.0, 100.0];

/// A user's pairs file, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnPairs {
    /// `sentence1,sentence2,score` rows.
    Sts(StsFile),
    /// The SR files' rows: an original, its relational and structural variants with scores.
    Sr(SrFile),
}

impl OwnPairs {
    /// "sts" or "sr".
    pub fn layout(&self) -> &'static str {
        match self {
            Self::Sts(_) => "sts",
            Self::Sr(_) => "sr",
        }
    }

    /// The file's name as given.
    pub fn name(&self) -> &str {
        match self {
            Self::Sts(f) => &f.name,
            Self::Sr(f) => &f.name,
        }
    }

    /// The scale its scores are on for the MSE ([`SCALES`]: the smallest holding them all).
    pub fn scale_max(&self) -> f64 {
        let max = match self {
            Self::Sts(f) => f.pairs.iter().map(|p| p.score).fold(0.0, f64::max),
            Self::Sr(f) => f
                .rows
                .iter()
                .map(|r| r.relation_score.max(r.structure_score))
                .fold(0.0, f64::max),
        };
        SCALES
            .into_iter()
            .find(|&s| max <= s)
            .unwrap_or(max.max(1.0))
    }
}

/// Refuses a pairs file of `bytes` bytes past [`MAX_PAIRS_BYTES`]: callers that know the size
/// before reading (the CLI) ask first.
pub fn check_pairs_size(name: &str, bytes: u64) -> Result<()> {
    if bytes > MAX_PAIRS_BYTES as u64 {
        bail!(
            "'{name}' is {:.1} MB; a pairs file may be at most {} MB ({MAX_PAIRS} pairs)",
            bytes as f64 / 1e6,
            MAX_PAIRS_BYTES >> 20
        );
    }
    Ok(())
}

/// Parses a user's pairs file named `name` (its file name, quoted in errors).
pub fn parse_pairs(name: &str, bytes: &[u8]) -> Result<OwnPairs> {
    let source = format!("'{name}'");
    check_pairs_size(name, bytes.len() as u64)?;
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => bail!(
            "{source} is not a UTF-8 text file (byte {} is not text): save it as CSV or TSV, UTF-8",
            e.valid_up_to() + 1
        ),
    };
    if let Some(at) = text.find('\0') {
        bail!(
            "{source} is not a text file (a NUL byte at byte {}): save it as CSV or TSV",
            at + 1
        );
    }
    let first_line = text
        .trim_start_matches('\u{feff}')
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let (format, separator) = match first_line.contains('\t') {
        true => (Format::Tsv, "tab"),
        false => (Format::Csv, "comma"),
    };
    let records = read_records(&source, bytes, format)?;
    let Some(((first, header), rows)) = records.split_first() else {
        bail!("{source}: empty file");
    };
    let names: Vec<String> = header.iter().map(|h| h.trim().to_lowercase()).collect();
    let (layout, data) = if names.iter().map(String::as_str).eq(SR_HEADER) {
        (Layout::Sr, rows)
    } else if names.iter().map(String::as_str).eq(STS_HEADER) {
        (Layout::Sts, rows)
    } else if header.len() == 3 && header[2].trim().parse::<f64>().is_ok() {
        // No header: the STS Benchmark's own layout.
        (Layout::Sts, &records[..])
    } else {
        bail!(
            "{source} line {first}: expected the header '{}' (STS layout) or '{}' (the SR files' \
             layout), or three {separator}-separated columns sentence1, sentence2, score without \
             a header; found {} column{}: '{}'",
            STS_HEADER.join(","),
            SR_HEADER.join(","),
            header.len(),
            if header.len() == 1 { "" } else { "s" },
            header.iter().collect::<Vec<_>>().join(",")
        );
    };
    if data.is_empty() {
        bail!("{source}: no pairs after the header");
    }
    if data.len() > MAX_PAIRS {
        bail!(
            "{source} has {} rows; at most {MAX_PAIRS} are read: split the file",
            data.len()
        );
    }
    let columns = layout.columns();
    let field = |line: usize, record: &StringRecord, column: usize| -> Result<String> {
        let text = &record[column];
        if text.trim().is_empty() {
            bail!(
                "{source} line {line}, column {} ({}): empty",
                column + 1,
                columns[column]
            );
        }
        Ok(text.to_string())
    };
    let score = |line: usize, record: &StringRecord, column: usize| -> Result<f64> {
        let text = record[column].trim();
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            Ok(v) => bail!(
                "{source} line {line}, column {} ({}): {v} is not a score (a finite number, 0 or more)",
                column + 1,
                columns[column]
            ),
            Err(_) => bail!(
                "{source} line {line}, column {} ({}): '{}' is not a number",
                column + 1,
                columns[column],
                text.chars().take(40).collect::<String>()
            ),
        }
    };
    let checked = |line: usize, record: &StringRecord| -> Result<()> {
        if record.len() != columns.len() {
            bail!(
                "{source} line {line}: expected {} {separator}-separated columns ({}), found {}",
                columns.len(),
                columns.join(", "),
                record.len()
            );
        }
        Ok(())
    };
    let name = name.to_string();
    Ok(match layout {
        Layout::Sts => OwnPairs::Sts(StsFile {
            name,
            pairs: data
                .iter()
                .map(|(line, r)| {
                    checked(*line, r)?;
                    Ok(StsPair {
                        line: *line,
                        sentence1: field(*line, r, 0)?,
                        sentence2: field(*line, r, 1)?,
                        score: score(*line, r, 2)?,
                    })
                })
                .collect::<Result<_>>()?,
        }),
        Layout::Sr => OwnPairs::Sr(SrFile {
            name,
            rows: data
                .iter()
                .map(|(line, r)| {
                    checked(*line, r)?;
                    Ok(SrRow {
                        line: *line,
                        sentence1: field(*line, r, 0)?,
                        relation: field(*line, r, 1)?,
                        relation_score: score(*line, r, 2)?,
                        structure: field(*line, r, 3)?,
                        structure_score: score(*line, r, 4)?,
                    })
                })
                .collect::<Result<_>>()?,
        }),
    })
}

#[derive(Clone, Copy)]
enum Layout {
    Sts,
    Sr,
}

impl Layout {
    fn columns(self) -> &'static [&'static str] {
        match self {
            Self::Sts => &STS_HEADER,
            Self::Sr => &SR_HEADER,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(bytes: &[u8]) -> String {
        format!("{:#}", parse_pairs("f.csv", bytes).unwrap_err())
    }

    #[test]
    fn the_sts_layout_reads_with_or_without_its_header_comma_or_tab() {
        for bytes in [
            &b"sentence1,sentence2,score\nA dog.,A cat.,3\n\"Yes, no\",B,0.5\n"[..],
            b"\xEF\xBB\xBFSentence1, Sentence2 ,SCORE\r\nA dog.,A cat.,3\r\n\"Yes, no\",B,0.5\r\n",
            b"A dog.,A cat.,3\n\"Yes, no\",B,0.5\n",
            b"sentence1\tsentence2\tscore\nA dog.\tA cat.\t3\n\"Yes, no\"\tB\t0.5\n",
        ] {
            let OwnPairs::Sts(file) = parse_pairs("f.csv", bytes).unwrap() else {
                panic!("not the STS layout")
            };
            let got: Vec<(&str, &str, f64)> = file
                .pairs
                .iter()
                .map(|p| (p.sentence1.as_str(), p.sentence2.as_str(), p.score))
                .collect();
            assert_eq!(got, [("A dog.", "A cat.", 3.0), ("Yes, no", "B", 0.5)]);
        }
    }

    #[test]
    fn the_sr_layout_and_the_score_scale() {
        let own = parse_pairs(
            "f.tsv",
            b"sentence1\trelation\trelationscore\tstructure\tstructurescore\nA b.\tB a.\t1\tA is b.\t5.5\n",
        )
        .unwrap();
        assert_eq!(own.layout(), "sr");
        assert_eq!(own.scale_max(), 6.0);
        let sts = |scores: &str| parse_pairs("f.csv", scores.as_bytes()).unwrap().scale_max();
        assert_eq!(sts("a,b,0.5\nc,d,1\n"), 1.0);
        assert_eq!(sts("a,b,4\nc,d,5\n"), 5.0);
        assert_eq!(sts("a,b,70\n"), 100.0);
        assert_eq!(sts("a,b,250\n"), 250.0);
    }

    #[test]
    fn errors_name_the_line_and_the_column() {
        assert_eq!(
            error(b"sentence1,sentence2,score\nA,B,1\nC,D,high\n"),
            "'f.csv' line 3, column 3 (score): 'high' is not a number"
        );
        assert_eq!(
            error(b"sentence1,sentence2,score\nA,,1\n"),
            "'f.csv' line 2, column 2 (sentence2): empty"
        );
        assert_eq!(
            error(b"sentence1,sentence2,score\nA,B,-1\n"),
            "'f.csv' line 2, column 3 (score): -1 is not a score (a finite number, 0 or more)"
        );
        assert_eq!(
            error(b"sentence1,sentence2,score\nA,B,inf\n"),
            "'f.csv' line 2, column 3 (score): inf is not a score (a finite number, 0 or more)"
        );
        assert!(error(b"sentence1,sentence2,score\nA,B\n")
            .starts_with("'f.csv' line 2: expected 3 comma-separated columns"));
        assert!(error(b"a,b\n").contains("line 1: expected the header"));
        assert!(
            error(b"sentence1,sentence2,score\n\"A,B,1\n").contains("unterminated quoted field")
        );
        assert_eq!(error(b""), "'f.csv': empty file");
        assert_eq!(error(b"  \n\n"), "'f.csv': empty file");
        assert_eq!(
            error(b"sentence1,sentence2,score\n"),
            "'f.csv': no pairs after the header"
        );
        assert!(error(b"a,b,1\n\xff\xfe,c,2\n").contains("is not a UTF-8 text file (byte 7"));
        assert!(error(b"a,b,1\nc\0,d,2\n").contains("NUL byte at byte 8"));
    }

    #[test]
    fn size_and_row_limits_are_refused_with_figures() {
        let big = vec![b'a'; MAX_PAIRS_BYTES + 1];
        assert!(error(&big).contains("is 16.8 MB; a pairs file may be at most 16 MB"));
        let rows: String = (0..=MAX_PAIRS).map(|i| format!("a{i},b,1\n")).collect();
        assert!(error(rows.as_bytes()).contains("has 10001 rows; at most 10000 are read"));
    }

    #[test]
    fn hostile_bytes_never_panic() {
        // Seeded mutations of a good file: any answer is fine, a panic is not.
        let good = b"sentence1,sentence2,score\nA dog.,A cat.,3\n\"Yes, no\",B,0.5\n".to_vec();
        let mut rng = crate::eval::rng::SplitMix64::new(7);
        for _ in 0..2000 {
            let mut bytes = good.clone();
            for _ in 0..1 + rng.next_u64() % 4 {
                let at = (rng.next_u64() as usize) % bytes.len();
                bytes[at] =
                    [b'"', b',', b'\t', b'\n', b'\r', 0, 0xff, b'x'][rng.next_u64() as usize % 8];
            }
            let _ = parse_pairs("f.csv", &bytes);
        }
    }
}
