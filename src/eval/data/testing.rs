//! Test helpers other modules' tests borrow: the real data files.

use std::path::PathBuf;

use super::{parse_sr, SrFile, SR_FILES};
use crate::eval::folder::{default_data_dir, DATA_ENV};

/// The data folder of [`default_data_dir`] (the CLI's rule). Panics if it has no `sr/`:
/// real-data tests must not pass vacuously.
pub(crate) fn data_dir() -> PathBuf {
    let dir = default_data_dir();
    assert!(
        dir.join("sr").is_dir(),
        "evaluation data not found in {}: set {DATA_ENV} to the folder holding sr/, stsb/ and \
         czech-news-sts/ (tried data and ../shared/data)",
        dir.display()
    );
    dir
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
