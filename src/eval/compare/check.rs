//! A report's Spearman cells checked against a reference: a published measurement or
//! another report (`sr-bench compare --reference`), cell by cell within a tolerance.

use anyhow::{anyhow, bail, Result};

use super::CompareRow;
use crate::eval::data::SR_FILES;
use crate::eval::report::Dimension;

/// A report's Spearman cells against a reference: a measurement ([`crate::eval::REFERENCES`]:
/// the 12 SR cells, and STS-B test where it has it) or another report (the cells and averages
/// of [`check_against_report`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceCheck {
    /// The report's label (see [`CompareRow::label`]).
    pub label: String,
    pub reference: String,
    /// Largest |report − reference| allowed, Spearman ×100.
    pub tolerance: f64,
    /// `(cell, report, reference)`: `structure/stsb`, …, `relation/biosses`, `stsb_test`.
    pub cells: Vec<(String, f64, f64)>,
}

impl ReferenceCheck {
    /// The largest |report − reference| over the cells.
    pub fn worst(&self) -> f64 {
        self.cells
            .iter()
            .map(|(_, got, want)| (got - want).abs())
            .fold(0.0, f64::max)
    }

    /// Every cell within the tolerance (the reports carry 2 decimals: 1e-9 absorbs the
    /// binary rounding of e.g. 0.05).
    pub fn passed(&self) -> bool {
        self.worst() <= self.tolerance + 1e-9
    }

    /// One line per cell (report, reference, delta, `ok` / `OUTSIDE`), then the worst delta.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{} vs {}, tolerance ±{}\n{:<20}{:>8}{:>8}{:>8}\n",
            self.label, self.reference, self.tolerance, "cell", "report", "ref", "delta"
        );
        for (cell, got, want) in &self.cells {
            let mark = if (got - want).abs() <= self.tolerance + 1e-9 {
                "ok"
            } else {
                "OUTSIDE"
            };
            out += &format!(
                "{cell:<20}{got:>8.2}{want:>8.2}{:>+8.2}  {mark}\n",
                got - want
            );
        }
        out + &format!("max |delta| = {:.2}\n", self.worst())
    }
}

/// Which cells a check compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cells {
    /// Every cell the reference has, STS-B test included.
    Every,
    /// The SR cells only, for a report of a run that embedded the SR set alone (as the
    /// browser benchmarks' pool runs do): STS-B test is left out on purpose, never skipped
    /// silently.
    SrOnly,
    /// The cells of what the run evaluated, for a run of some SR files (`eval --files`):
    /// every cell of each file it has, the averages only when it has all six, STS-B test when
    /// it ran it; an error when it has no SR cell at all.
    Evaluated,
}

impl Cells {
    fn stsb_test(self, want: Option<f64>, row: &CompareRow) -> Option<f64> {
        match self {
            Cells::Every => want,
            Cells::SrOnly => None,
            Cells::Evaluated => want.filter(|_| row.stsb_test_spearman.is_some()),
        }
    }
}

/// Checks `row` against the `reference` measurement of its model within `tolerance`. An error
/// when the fixture has no such reference or model, or when the report lacks a cell the
/// reference has (a quick split, or STS-B test not run with [`Cells::Every`]): no cell is
/// skipped.
pub fn check_against_reference(
    row: &CompareRow,
    reference: &str,
    tolerance: f64,
    cells: Cells,
) -> Result<ReferenceCheck> {
    let want = crate::eval::reference_spearman(reference, &row.model).ok_or_else(|| {
        anyhow!(
            "no '{reference}' measurement of {} in sr-scores.json (references: {})",
            row.model,
            crate::eval::REFERENCES.join(", ")
        )
    })?;
    let known = |values: &[f64]| values.iter().copied().map(Some).collect::<Vec<_>>();
    let cells = paired_cells(
        row,
        [&known(&want.structure), &known(&want.relation)],
        cells.stsb_test(want.stsb_test, row),
        cells == Cells::Evaluated,
    )?;
    Ok(ReferenceCheck {
        label: row.label.clone(),
        reference: reference.to_string(),
        tolerance,
        cells,
    })
}

/// Checks `row` against another report `reference` within `tolerance`: the same model and
/// split on another backend or build (e.g. the GPU's quick split against the CPU's). Every
/// SR cell, each dimension's average, and STS-B test where the reference has it; an error
/// when the two are different models or splits, or `row` lacks a cell `reference` has.
pub fn check_against_report(
    row: &CompareRow,
    reference: &CompareRow,
    tolerance: f64,
    cells: Cells,
) -> Result<ReferenceCheck> {
    anyhow::ensure!(
        row.model == reference.model && row.split == reference.split,
        "{} and {} are different models or splits: nothing to compare cell by cell",
        row.label,
        reference.label
    );
    let cells = paired_cells(
        row,
        [&reference.structure, &reference.relation],
        cells.stsb_test(reference.stsb_test_spearman, row),
        cells == Cells::Evaluated,
    )?;
    anyhow::ensure!(
        !cells.is_empty(),
        "{}: no cells to compare",
        reference.label
    );
    Ok(ReferenceCheck {
        label: row.label.clone(),
        reference: reference.label.clone(),
        tolerance,
        cells,
    })
}

/// `(cell, row's value, wanted value)` for every cell where a value is wanted: per dimension
/// the SR files in [`SR_FILES`] order, then `avg` (`want` as long as it goes), then STS-B test.
/// An error when `row` lacks a wanted cell (none is skipped), unless `evaluated_only`: then
/// the cells `row` lacks are left out, and an error when it has no SR cell.
fn paired_cells(
    row: &CompareRow,
    [structure, relation]: [&[Option<f64>]; 2],
    stsb_test: Option<f64>,
    evaluated_only: bool,
) -> Result<Vec<(String, f64, f64)>> {
    let names = SR_FILES.iter().copied().chain(["avg"]);
    let mut cells = Vec::new();
    for (dimension, got, want) in [
        (Dimension::Structure, &row.structure, structure),
        (Dimension::Relation, &row.relation, relation),
    ] {
        for ((name, got), want) in names.clone().zip(got).zip(want) {
            let cell = format!("{}/{name}", dimension.as_str());
            let Some(want) = want else { continue };
            let got = match got {
                Some(got) => *got,
                None if evaluated_only => continue,
                None => bail!("{}: no {cell} cell", row.label),
            };
            cells.push((cell, got, *want));
        }
    }
    if evaluated_only && cells.is_empty() {
        bail!("{}: no SR cell to compare", row.label);
    }
    if let Some(want) = stsb_test {
        let got = row
            .stsb_test_spearman
            .ok_or_else(|| anyhow!("{}: no STS-B test result", row.label))?;
        cells.push(("stsb_test".to_string(), got, want));
    }
    Ok(cells)
}
