//! Tests of the dataset parsers, on hand-made bytes and on the real files.

use super::testing::{read_data, real_sr_files};
use super::*;

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
    let err = sr_error(b"sentence1,structure,structurescore,relation,relationscore\na,b,1,c,2\n");
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
    assert_eq!(unterminated_quote_line(b"a,\"b\"\"c\",d\n", b','), None);
    assert_eq!(unterminated_quote_line(b"a,b\"c,d\n", b','), None); // bare quote mid-field is text
    assert_eq!(unterminated_quote_line(b"\"a\"x,\"b\n", b','), Some(1));
    assert_eq!(unterminated_quote_line(b"a\n\"b\"\"\n", b','), Some(2));
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
