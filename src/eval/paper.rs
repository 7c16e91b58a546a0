//! What the paper and the reference implementation report: Table 4 of Zhang et al. 2023 (one
//! data file, `paper_table4.json`, compiled in) and the STS-B test Spearman that
//! sentence-transformers measures in fp32 (from the test fixture `sr-scores.json`).

use std::collections::BTreeMap;
use std::ops::Index;

use serde::{Deserialize, Serialize};

/// The paper's Table 4: the one copy in the repository (the page gets it through the report's
/// `paper` field).
const PAPER_TABLE4: &str = include_str!("paper_table4.json");
/// sentence-transformers' fp32 and onnxruntime's int8 measurements, shared with the tests.
const SCORES_FIXTURE: &str = include_str!("../../tests/fixtures/sr-scores.json");

#[derive(Deserialize)]
struct PaperTable4File {
    paper_table4: BTreeMap<String, PaperRow>,
}

/// One dimension of one model in the paper's Table 4: Spearman ×100 per SR file (Table 4
/// order) and their average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaperScores {
    /// SR built on STS-B.
    pub stsb: f64,
    /// SR built on SICK-R.
    pub sickr: f64,
    /// SR built on AskUbuntu.
    pub askubuntu: f64,
    /// SR built on CQADupStack.
    pub cqa: f64,
    /// SR built on TwitterPara.
    pub twitter: f64,
    /// SR built on BIOSSES.
    pub biosses: f64,
    /// Mean of the six files.
    pub avg: f64,
}

impl PaperScores {
    /// The value of an SR file name or `"avg"`; `None` for any other name.
    pub fn get(&self, column: &str) -> Option<f64> {
        Some(match column {
            "stsb" => self.stsb,
            "sickr" => self.sickr,
            "askubuntu" => self.askubuntu,
            "cqa" => self.cqa,
            "twitter" => self.twitter,
            "biosses" => self.biosses,
            "avg" => self.avg,
            _ => return None,
        })
    }
}

impl Index<&str> for PaperScores {
    type Output = f64;

    /// # Panics
    /// If `column` is neither an SR file name nor `"avg"`.
    fn index(&self, column: &str) -> &f64 {
        match column {
            "stsb" => &self.stsb,
            "sickr" => &self.sickr,
            "askubuntu" => &self.askubuntu,
            "cqa" => &self.cqa,
            "twitter" => &self.twitter,
            "biosses" => &self.biosses,
            "avg" => &self.avg,
            _ => panic!("no column '{column}' in the paper's Table 4"),
        }
    }
}

/// One model's row pair of the paper's Table 4 (Spearman ×100); serialises as
/// `{"structure": {"stsb": x, …, "avg": x}, "relation": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaperRow {
    /// Structure dimension.
    pub structure: PaperScores,
    /// Relation dimension.
    pub relation: PaperScores,
}

/// What the paper and the reference implementation report for a model.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperReference {
    /// The model's name as the paper's table spells it.
    pub model: String,
    /// Table 4 of the paper.
    pub table4: PaperRow,
    /// STS-B test Spearman ×100 measured with sentence-transformers in fp32.
    pub stsb_test_spearman: Option<f64>,
}

/// Whether the table's `name` is `model`: case-insensitively, on `model`'s last path segment
/// (`"sentence-transformers/all-MiniLM-L6-v2"` is `all-MiniLM-L6-v2`).
fn same_model(name: &str, model: &str) -> bool {
    name.eq_ignore_ascii_case(model.rsplit('/').next().unwrap_or(model))
}

/// The reference measurements the reports are checked against (`tests/fixtures/sr-scores.json`).
pub const REFERENCES: [&str; 2] = ["sentence_transformers_fp32", "onnx_int8_onnxruntime"];

/// A reference measurement of `model` (matched as in [`paper_reference`]): Spearman ×100 per
/// dimension and SR file, in [`SR_FILES`](crate::eval::SR_FILES) order, and the STS-B test
/// Spearman where the fixture has it (sentence-transformers only). `None` for an unknown
/// reference or model.
pub fn reference_spearman(reference: &str, model: &str) -> Option<ReferenceSpearman> {
    let fixture: serde_json::Value = serde_json::from_str(SCORES_FIXTURE).ok()?;
    let (name, row) = fixture
        .get(reference)?
        .as_object()?
        .iter()
        .find(|(name, _)| same_model(name, model))?;
    let dimension = |dim: &str| -> Option<Vec<f64>> {
        crate::eval::SR_FILES
            .iter()
            .map(|file| row.get(dim)?.get(file)?.get("spearman")?.as_f64())
            .collect()
    };
    let stsb_test = match reference {
        "sentence_transformers_fp32" => fixture
            .get("stsb_test_spearman_sentence_transformers_fp32")
            .and_then(|by_model| by_model.get(name))
            .and_then(|v| v.as_f64()),
        _ => None,
    };
    Some(ReferenceSpearman {
        structure: dimension("structure")?,
        relation: dimension("relation")?,
        stsb_test,
    })
}

/// See [`reference_spearman`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceSpearman {
    pub structure: Vec<f64>,
    pub relation: Vec<f64>,
    pub stsb_test: Option<f64>,
}

/// Every row of the paper's Table 4, by model name (the Results view shows them beside ours).
pub fn paper_table4() -> BTreeMap<String, PaperRow> {
    serde_json::from_str::<PaperTable4File>(PAPER_TABLE4)
        .map(|t| t.paper_table4)
        .unwrap_or_default()
}

/// The reference numbers for `model`, matched case-insensitively on its last path segment
/// (`"sentence-transformers/all-MiniLM-L6-v2"` finds `all-MiniLM-L6-v2`); `None` if the paper
/// does not have it.
pub fn paper_reference(model: &str) -> Option<PaperReference> {
    let table: PaperTable4File = serde_json::from_str(PAPER_TABLE4).ok()?;
    let (name, table4) = table
        .paper_table4
        .into_iter()
        .find(|(name, _)| same_model(name, model))?;
    let stsb_test_spearman =
        reference_spearman("sentence_transformers_fp32", &name).and_then(|r| r.stsb_test);
    Some(PaperReference {
        model: name,
        table4,
        stsb_test_spearman,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_parses_and_has_both_models_in_table4_order() {
        let table: PaperTable4File = serde_json::from_str(PAPER_TABLE4).unwrap();
        assert_eq!(
            table.paper_table4.keys().collect::<Vec<_>>(),
            ["all-MiniLM-L6-v2", "all-mpnet-base-v2"]
        );
        let row = &table.paper_table4["all-mpnet-base-v2"];
        let json = serde_json::to_string(&row.structure).unwrap();
        assert_eq!(
            json,
            r#"{"stsb":23.83,"sickr":23.44,"askubuntu":6.67,"cqa":24.03,"twitter":12.09,"biosses":23.94,"avg":19.0}"#
        );
        assert_eq!(row.relation.get("cqa"), Some(34.66));
        assert_eq!(row.relation.get("sts"), None);
        assert_eq!(row.relation["avg"], 27.58);
    }

    #[test]
    fn fixture_values_are_found_by_model_name() {
        let mini = paper_reference("all-MiniLM-L6-v2").unwrap();
        assert_eq!(mini.table4.structure["stsb"], 17.84);
        assert_eq!(mini.table4.relation["avg"], 19.85);
        assert_eq!(mini.stsb_test_spearman, Some(82.03));
        let mpnet = paper_reference("sentence-transformers/ALL-MPNET-BASE-V2").unwrap();
        assert_eq!(mpnet.model, "all-mpnet-base-v2");
        assert_eq!(mpnet.table4.structure["biosses"], 23.94);
        assert_eq!(mpnet.stsb_test_spearman, Some(83.42));
        assert!(paper_reference("bert-base-uncased").is_none());
    }
}
