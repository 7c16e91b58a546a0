//! [`EvalPlan`]: the pairs of a run, each pointing at two of its unique sentences.

use std::collections::HashMap;

use anyhow::{bail, Result};

use crate::eval::data::{CzechFile, OwnPairs, SrFile, SrRow, StsFile, SR_FILES};
use crate::eval::report::Dimension;
use crate::eval::split::Split;

/// Which result a pair counts towards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Group {
    /// Index into `EvalPlan::sr_names`, and the dimension.
    Sr(usize, Dimension),
    StsbTest,
    Czech,
    /// A user's own file: `None` for the STS layout, the dimension for the SR layout.
    Own(Option<Dimension>),
}

/// One pair to score: two sentence ids and the gold score on its file's own scale.
#[derive(Debug, Clone)]
pub(super) struct PlannedPair {
    pub(super) group: Group,
    pub(super) line: usize,
    pub(super) left: usize,
    pub(super) right: usize,
    pub(super) gold: f64,
}

/// What the report says of a user's own file besides its cells.
#[derive(Debug, Clone)]
pub(super) struct OwnMeta {
    pub(super) name: String,
    pub(super) layout: &'static str,
    pub(super) scale_max: f64,
}

/// The pairs of a run and the unique sentences they need.
#[derive(Debug, Clone)]
pub struct EvalPlan {
    pub(super) split: Split,
    /// SR files in Table 4 order.
    pub(super) sr_names: Vec<String>,
    pub(super) czech: Option<CzechFile>,
    /// A user's own file: its name, layout and score scale.
    pub(super) own: Option<OwnMeta>,
    pub(super) sentences: Vec<String>,
    sentence_ids: HashMap<String, usize>,
    pub(super) pairs: Vec<PlannedPair>,
}

/// Checks that SR files are known and distinct, and puts them in Table 4 order.
pub(crate) fn sort_sr_files(sr_files: &mut [SrFile]) -> Result<()> {
    for (i, file) in sr_files.iter().enumerate() {
        if !SR_FILES.contains(&file.name.as_str()) {
            bail!(
                "unknown SR file '{}': expected one of {}",
                file.name,
                SR_FILES.join(", ")
            );
        }
        if sr_files[..i].iter().any(|other| other.name == file.name) {
            bail!("SR file '{}' given twice", file.name);
        }
    }
    sr_files.sort_by_key(|file| SR_FILES.iter().position(|name| *name == file.name));
    Ok(())
}

impl EvalPlan {
    /// A plan with no pairs yet.
    fn empty(split: Split, sr_names: Vec<String>) -> Self {
        EvalPlan {
            split,
            sr_names,
            czech: None,
            own: None,
            sentences: Vec::new(),
            sentence_ids: HashMap::new(),
            pairs: Vec::new(),
        }
    }

    /// Plans the SR pairs (sentence1 with its structure variant and with its relation
    /// variant) of the rows `split` keeps, and all STS-B test pairs if given. SR files may be
    /// any subset of [`SR_FILES`], in any order (results follow Table 4's order); unknown or
    /// repeated names are errors, and so is a plan with nothing to evaluate.
    pub fn new(
        mut sr_files: Vec<SrFile>,
        stsb_test: Option<StsFile>,
        split: Split,
    ) -> Result<Self> {
        sort_sr_files(&mut sr_files)?;

        let names = sr_files.iter().map(|file| file.name.clone()).collect();
        let mut plan = Self::empty(split, names);
        let total_rows: usize = sr_files.iter().map(|file| file.rows.len()).sum();
        for (file_index, file) in sr_files.iter().enumerate() {
            let kept = split.rows(&file.name, file.rows.len(), total_rows);
            let rows: Vec<&SrRow> = kept.iter().map(|&i| &file.rows[i]).collect();
            plan.add_sr_rows(&rows, |dimension| Group::Sr(file_index, dimension));
        }
        if let Some(stsb) = &stsb_test {
            for pair in &stsb.pairs {
                let (s1, s2) = (&pair.sentence1, &pair.sentence2);
                plan.add_pair(Group::StsbTest, pair.line, s1, s2, pair.score);
            }
        }
        if plan.pairs.is_empty() {
            bail!("nothing to evaluate: no SR rows and no STS-B test pairs");
        }
        Ok(plan)
    }

    /// Adds the Czech News STS test set: its pairs are scored, and the report compares the
    /// model with a random human annotator and the oracle bound ([`crate::eval::czech`]).
    /// Always used whole, whatever the split.
    pub fn with_czech(mut self, czech: CzechFile) -> Self {
        for pair in &czech.pairs {
            let (s1, s2) = (&pair.sentence1, &pair.sentence2);
            self.add_pair(Group::Czech, pair.line, s1, s2, pair.mean_score);
        }
        self.czech = Some(czech);
        self
    }

    /// A plan of the Czech News STS test set alone (`sr-bench eval-czech`).
    pub fn czech_only(czech: CzechFile) -> Result<Self> {
        if czech.pairs.is_empty() {
            bail!("nothing to evaluate: {} has no pairs", czech.name);
        }
        Ok(Self::empty(Split::Full, Vec::new()).with_czech(czech))
    }

    /// A plan of a user's own pairs file alone (`sr-bench eval --pairs FILE`, the page's
    /// "Your own pairs"): every row, whatever the split.
    pub fn own_only(own: OwnPairs) -> Result<Self> {
        let mut plan = Self::empty(Split::Full, Vec::new());
        plan.own = Some(OwnMeta {
            name: own.name().to_string(),
            layout: own.layout(),
            scale_max: own.scale_max(),
        });
        match &own {
            OwnPairs::Sts(file) => {
                for p in &file.pairs {
                    let (s1, s2) = (&p.sentence1, &p.sentence2);
                    plan.add_pair(Group::Own(None), p.line, s1, s2, p.score);
                }
            }
            OwnPairs::Sr(file) => {
                let rows: Vec<&SrRow> = file.rows.iter().collect();
                plan.add_sr_rows(&rows, |dimension| Group::Own(Some(dimension)));
            }
        }
        if plan.pairs.is_empty() {
            bail!("nothing to evaluate: {} has no pairs", own.name());
        }
        Ok(plan)
    }

    /// Each row's original against its structural variant, then (a second pass, so a
    /// dimension's pairs stay together) against its relational one, in `group(dimension)`.
    fn add_sr_rows(&mut self, rows: &[&SrRow], group: impl Fn(Dimension) -> Group) {
        for dimension in [Dimension::Structure, Dimension::Relation] {
            for row in rows {
                let (variant, gold) = match dimension {
                    Dimension::Structure => (&row.structure, row.structure_score),
                    Dimension::Relation => (&row.relation, row.relation_score),
                };
                self.add_pair(group(dimension), row.line, &row.sentence1, variant, gold);
            }
        }
    }

    /// The split this plan was made with.
    pub fn split(&self) -> Split {
        self.split
    }

    /// The SR files in the plan, in Table 4 order.
    pub fn sr_file_names(&self) -> &[String] {
        &self.sr_names
    }

    /// The unique sentences to embed, in first-use order.
    pub fn sentences(&self) -> &[String] {
        &self.sentences
    }

    /// Pairs to score across all files and dimensions.
    pub fn pair_count(&self) -> usize {
        self.pairs.len()
    }

    fn add_pair(&mut self, group: Group, line: usize, left: &str, right: &str, gold: f64) {
        let left = self.sentence_id(left);
        let right = self.sentence_id(right);
        self.pairs.push(PlannedPair {
            group,
            line,
            left,
            right,
            gold,
        });
    }

    /// The id of a sentence, adding it on first sight: each distinct text is embedded once.
    fn sentence_id(&mut self, text: &str) -> usize {
        if let Some(&id) = self.sentence_ids.get(text) {
            return id;
        }
        let id = self.sentences.len();
        self.sentences.push(text.to_string());
        self.sentence_ids.insert(text.to_string(), id);
        id
    }
}
