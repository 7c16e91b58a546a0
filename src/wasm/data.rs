//! The benchmark data a wasm run takes in (`Evaluation` and `Probe` alike): SR CSVs by name and
//! the STS-B test CSV (and, for `Evaluation`, Czech News STS), parsed as they arrive so a
//! malformed file fails with code `data` at once.

use wasm_bindgen::JsValue;

use super::js_error;
use crate::error::{ErrorCode, ResultExt};
use crate::eval::{self, CzechFile, OwnPairs, SrFile, StsFile};

/// The files handed in so far; [`DataIntake::take`] moves them into a plan.
#[derive(Default)]
pub(super) struct DataIntake {
    sr_files: Vec<SrFile>,
    stsb_test: Option<StsFile>,
    czech: Option<CzechFile>,
    own: Option<OwnPairs>,
}

impl DataIntake {
    /// One SR CSV (`name` one of [`eval::SR_FILES`]).
    pub fn add_sr_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsValue> {
        let file = eval::parse_sr(name, bytes)
            .code(ErrorCode::Data)
            .map_err(js_error)?;
        self.sr_files.push(file);
        Ok(())
    }

    /// The STS-B test CSV.
    pub fn set_stsb_test(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        let file = eval::parse_stsb("stsb-en-test.csv", bytes)
            .code(ErrorCode::Data)
            .map_err(js_error)?;
        self.stsb_test = Some(file);
        Ok(())
    }

    /// The Czech News STS test TSV (`free-test.tsv`).
    pub fn set_czech(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        let file = eval::parse_czech_sts("czech-news-sts/free-test.tsv", bytes)
            .code(ErrorCode::Data)
            .map_err(js_error)?;
        self.czech = Some(file);
        Ok(())
    }

    /// The SR files and STS-B test taken in, leaving the intake empty of them.
    pub fn take(&mut self) -> (Vec<SrFile>, Option<StsFile>) {
        (std::mem::take(&mut self.sr_files), self.stsb_test.take())
    }

    /// A user's own pairs file (`name`: its file name, quoted in errors).
    pub fn set_own(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsValue> {
        let file = eval::parse_pairs(name, bytes)
            .code(ErrorCode::Data)
            .map_err(js_error)?;
        self.own = Some(file);
        Ok(())
    }

    /// The user's own pairs, if they were taken in.
    pub fn take_own(&mut self) -> Option<OwnPairs> {
        self.own.take()
    }

    /// Czech News STS, if it was taken in.
    pub fn take_czech(&mut self) -> Option<CzechFile> {
        self.czech.take()
    }
}

/// The six SR CSVs in [`eval::SR_FILES`] order, parsed (code `data` when one is malformed, code
/// `bad-request` when there are not six).
pub(super) fn parse_sr_files(csvs: &[js_sys::Uint8Array]) -> Result<Vec<SrFile>, JsValue> {
    if csvs.len() != eval::SR_FILES.len() {
        return Err(js_error(crate::error::coded(
            ErrorCode::BadRequest,
            format!("the six SR files are needed, not {}", csvs.len()),
        )));
    }
    csvs.iter()
        .zip(eval::SR_FILES)
        .map(|(bytes, name)| eval::parse_sr(name, &bytes.to_vec()))
        .collect::<anyhow::Result<Vec<_>>>()
        .code(ErrorCode::Data)
        .map_err(js_error)
}
