//! `sr-bench eval`'s retrieval measures (STS-B test as retrieval) against trec_eval's own
//! code: MiniLM q8_0's ranking, written with `--trec`, scored by pytrec_eval (PyPI, linked by
//! `./build.sh fixtures` as tests/artifacts/pytrec/bin/python): nDCG@10 and MRR@10 equal the
//! report's to 1e-6, over the same queries; the corpus and the queries are counted again here
//! from the data file.
#![cfg(not(target_arch = "wasm32"))]

mod cli_common;
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use sr_bench::eval::{parse_stsb, STSB_TEST_PATH};

/// pytrec_eval's per-measure means (and the query count) over DIR/stsb_test.{run,qrels}.
const TREC_EVAL: &str = r#"
import json, sys, pytrec_eval
def read(path, parse):
    out = {}
    for line in open(path):
        parse(out, line.split())
    return out
def qrel(out, f): out.setdefault(f[0], {})[f[2]] = int(f[3])
def run(out, f): out.setdefault(f[0], {})[f[2]] = float(f[4])
qrels = read(sys.argv[1] + "/stsb_test.qrels", qrel)
ranking = read(sys.argv[1] + "/stsb_test.run", run)
per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank"}).evaluate(ranking)
mean = lambda m: sum(q[m] for q in per_query.values()) / len(per_query)
print(json.dumps({"queries": len(per_query), "ndcg_at_10": mean("ndcg_cut_10"), "mrr_at_10": mean("recip_rank")}))
"#;

#[test]
fn ndcg_and_mrr_equal_trec_evals_on_the_same_ranking() {
    let python = common::root().join("tests/artifacts/pytrec/bin/python");
    assert!(
        python.exists(),
        "{}: run ./build.sh fixtures",
        python.display()
    );
    let dir = cli_common::temp_dir("retrieval", "trec");
    let model = common::model_path("all-MiniLM-L6-v2", "q8_0");
    let json = dir.join("report.json");
    let trec = dir.to_str().unwrap();
    let (ok, stdout, stderr) = cli_common::eval_to_json(
        &model,
        &["--split", "quick", "--files", "biosses", "--trec", trec],
        &json,
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("STS-B test as retrieval"), "{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let ours = &report["retrieval"]["stsb_test"];

    let out = Command::new(&python)
        .args(["-c", TREC_EVAL, dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("sr-bench {ours}\npytrec_eval {theirs}");
    assert_eq!(ours["queries"], theirs["queries"]);
    for m in ["ndcg_at_10", "mrr_at_10"] {
        let (a, b) = (ours[m].as_f64().unwrap(), theirs[m].as_f64().unwrap());
        assert!((a - b).abs() <= 1e-6, "{m}: sr-bench {a}, trec_eval {b}");
        assert!(a > 0.5 && a < 1.0, "{m} {a}: MiniLM finds most paraphrases");
    }

    // The retrieval set, built again from the file: every distinct sentence is a document;
    // a sentence with a partner scored >= 4 (not itself) is a query.
    let stsb = parse_stsb(
        "stsb-en-test.csv",
        &std::fs::read(common::data_dir().join(STSB_TEST_PATH)).unwrap(),
    )
    .unwrap();
    let mut documents = BTreeSet::new();
    let mut partners: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for p in &stsb.pairs {
        documents.insert(p.sentence1.as_str());
        documents.insert(p.sentence2.as_str());
        if p.score >= 4.0 && p.sentence1 != p.sentence2 {
            partners
                .entry(&p.sentence1)
                .or_default()
                .insert(&p.sentence2);
            partners
                .entry(&p.sentence2)
                .or_default()
                .insert(&p.sentence1);
        }
    }
    assert_eq!(ours["documents"], documents.len() - 1);
    assert_eq!(ours["queries"], partners.len());
    let judged: usize = partners.values().map(BTreeSet::len).sum();
    let qrels = std::fs::read_to_string(dir.join("stsb_test.qrels")).unwrap();
    assert_eq!(qrels.lines().count(), judged);
}
