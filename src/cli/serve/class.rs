//! `sr-bench serve --class`: a class's quiz answers together on the teacher's machine. The
//! teacher's page creates a class (a code to show, and a token only the teacher's tab holds);
//! each student's device sends its picks once the quiz is done; the teacher's view reads the
//! class's figures ([`ClassFigures`]), exports the answers as CSV, and deletes the class.
//!
//! The API (JSON; every error `{"error": "…"}` with its status):
//! ```text
//! GET    /api/class                      {"class": true, "max_devices", "max_body_bytes"}
//! POST   /api/class                      {"seed", "set", "questions"} → 201 {"code", "teacher", …}
//! GET    /api/class/CODE                 {"code", "seed", "set", "questions"}  (students join)
//! POST   /api/class/CODE/answers         {"device": 16–64 hex, "picks": [0|1, …]} → {"count"}
//! GET    /api/class/CODE/figures         teacher: {"class", "figures"}  (Authorization: Bearer T)
//! GET    /api/class/CODE/answers.csv     teacher: student,q1,…,qN,right (no device ids)
//! DELETE /api/class/CODE                 teacher: the class and its answers
//! ```
//! Anonymous: a device sends a random id of its own and its picks, nothing else; no cookie is
//! set. Bounded: a body of at most [`MAX_BODY_BYTES`], [`MAX_DEVICES`] devices a class,
//! [`MAX_CLASSES`] classes, a rate limit per address ([`limit`]). Stored in SQLite
//! ([`store`]): a restarted server keeps every answer it acknowledged.

mod limit;
mod store;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::eval::quiz::class::{check_picks, ClassFigures};
use crate::eval::quiz::{self, Quiz, QuizSet};
use limit::Limiter;
use store::{ClassRow, Store, Stored};

/// Longest request body the API reads.
pub const MAX_BODY_BYTES: u64 = 8 * 1024;
/// Devices whose answers one class keeps.
pub const MAX_DEVICES: usize = 200;
/// Classes one server keeps.
pub const MAX_CLASSES: usize = 500;
/// A class code's letters: no 0/O, 1/I/L to misread on a projector.
const CODE_LETTERS: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LENGTH: usize = 6;

/// An API answer: its status line, content type and body.
pub struct Reply {
    pub status: &'static str,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

fn json_reply(status: &'static str, value: serde_json::Value) -> Reply {
    Reply {
        status,
        content_type: "application/json",
        body: value.to_string().into_bytes(),
    }
}

fn refused(status: &'static str, message: impl std::fmt::Display) -> Reply {
    json_reply(status, json!({ "error": message.to_string() }))
}

/// 64 random bits: std's hasher keys come from the operating system's random source.
fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.finish()
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewClass {
    seed: u32,
    set: QuizSet,
    questions: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answers {
    device: String,
    picks: Vec<u8>,
}

pub struct ClassServer {
    store: Mutex<Store>,
    /// The served site's data folder, which the quizzes are drawn from.
    data: PathBuf,
    quizzes: Mutex<HashMap<(u64, QuizSet, usize), Arc<Quiz>>>,
    limiter: Mutex<Limiter>,
}

impl ClassServer {
    /// The database at `db` (created if missing), drawing quizzes from `site`'s `data/`.
    pub fn open(db: &Path, site: &Path) -> Result<ClassServer> {
        let server = ClassServer {
            store: Mutex::new(Store::open(db)?),
            data: site.join("data"),
            quizzes: Mutex::default(),
            limiter: Mutex::default(),
        };
        server
            .quiz(1, QuizSet::Sr, quiz::DEFAULT_QUESTIONS)
            .with_context(|| {
                format!(
                    "the class server draws its quizzes from {}",
                    server.data.display()
                )
            })?;
        Ok(server)
    }

    fn quiz(&self, seed: u64, set: QuizSet, questions: usize) -> Result<Arc<Quiz>> {
        let key = (seed, set, questions);
        if let Some(q) = self
            .quizzes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(q.clone());
        }
        let gap = crate::eval::pairwise::DEFAULT_MIN_GAP;
        let drawn = Arc::new(match set {
            QuizSet::Sr => {
                quiz::draw_sr(&super::super::sr_files(&self.data)?, seed, questions, gap)?
            }
            QuizSet::Czech => {
                let file = super::super::parse_data_file(
                    &self.data,
                    "czech-news-sts/free-test.tsv",
                    crate::eval::parse_czech_sts,
                )?;
                quiz::draw_czech(&file, seed, questions, gap)?
            }
        });
        let mut cache = self.quizzes.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_CLASSES {
            cache.clear();
        }
        cache.insert(key, drawn.clone());
        Ok(drawn)
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answers one API request (`target` starts with `/api/`).
    pub fn answer(
        &self,
        method: &str,
        target: &str,
        authorization: Option<&str>,
        body: &[u8],
        peer: IpAddr,
    ) -> Reply {
        if !self
            .limiter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .allow(peer, Instant::now())
        {
            return refused(
                "429 Too Many Requests",
                "too many requests from this address: wait a moment",
            );
        }
        let path = target.split(['?', '#']).next().unwrap_or("");
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let result = match (method, parts.as_slice()) {
            ("GET", ["api", "class"]) => Ok(json_reply(
                "200 OK",
                json!({"class": true, "max_devices": MAX_DEVICES, "max_body_bytes": MAX_BODY_BYTES}),
            )),
            ("POST", ["api", "class"]) => self.create(body),
            (_, ["api", "class", code, rest @ ..]) => match self.class_of(code) {
                Err(reply) => Ok(reply),
                Ok(class) => match (method, rest) {
                    ("GET", []) => Ok(json_reply(
                        "200 OK",
                        json!({"code": class.code, "seed": class.seed, "set": class.set, "questions": class.questions}),
                    )),
                    ("POST", ["answers"]) => self.put_answers(&class, body),
                    (_, [] | ["figures"] | ["answers.csv"])
                        if !is_teacher(&class, authorization) =>
                    {
                        Ok(refused(
                            "401 Unauthorized",
                            "only the teacher's page that made this class may do that",
                        ))
                    }
                    ("GET", ["figures"]) => self.figures(&class),
                    ("GET", ["answers.csv"]) => self.csv(&class),
                    ("DELETE", []) => self
                        .store()
                        .delete(&class.code)
                        .map(|_| json_reply("200 OK", json!({"deleted": true}))),
                    _ => Ok(refused(
                        "405 Method Not Allowed",
                        format!("{method} {path}: not part of the class API"),
                    )),
                },
            },
            _ => Ok(refused(
                "404 Not Found",
                format!("{method} {path}: not part of the class API"),
            )),
        };
        result.unwrap_or_else(|e| {
            eprintln!("class API: {e:#}");
            refused(
                "500 Internal Server Error",
                "the class server could not do that; see its log",
            )
        })
    }

    /// The class `code` names, or the reply that says there is none.
    fn class_of(&self, code: &str) -> std::result::Result<ClassRow, Reply> {
        let well_formed =
            code.len() == CODE_LENGTH && code.bytes().all(|b| CODE_LETTERS.contains(&b));
        let found = if well_formed {
            self.store().class(code)
        } else {
            Ok(None)
        };
        match found {
            Ok(Some(class)) => Ok(class),
            Ok(None) => Err(refused(
                "404 Not Found",
                "no class has this code (it may have been deleted)",
            )),
            Err(e) => {
                eprintln!("class API: {e:#}");
                Err(refused(
                    "500 Internal Server Error",
                    "the class database could not be read",
                ))
            }
        }
    }

    fn create(&self, body: &[u8]) -> Result<Reply> {
        let new: NewClass =
            match parse_body(body, "a new class is {\"seed\", \"set\", \"questions\"}") {
                Ok(new) => new,
                Err(reply) => return Ok(reply),
            };
        if let Err(e) = self.quiz(u64::from(new.seed), new.set, new.questions) {
            return Ok(refused("400 Bad Request", format!("{e:#}")));
        }
        let store = self.store();
        if store.class_count()? >= MAX_CLASSES {
            return Ok(refused(
                "507 Insufficient Storage",
                format!("this server keeps {MAX_CLASSES} classes: delete one first"),
            ));
        }
        let teacher: String = (0..4).map(|_| format!("{:016x}", random_u64())).collect();
        for _ in 0..8 {
            let mut bits = random_u64();
            let code: String = (0..CODE_LENGTH)
                .map(|_| {
                    let letter = CODE_LETTERS[(bits % CODE_LETTERS.len() as u64) as usize];
                    bits /= CODE_LETTERS.len() as u64;
                    char::from(letter)
                })
                .collect();
            if store.class(&code)?.is_some() {
                continue;
            }
            store.create_class(&ClassRow {
                code: code.clone(),
                teacher_sha256: sha256_hex(&teacher),
                seed: u64::from(new.seed),
                set: new.set,
                questions: new.questions,
            })?;
            return Ok(json_reply(
                "201 Created",
                json!({"code": code, "teacher": teacher, "seed": new.seed, "set": new.set, "questions": new.questions}),
            ));
        }
        anyhow::bail!("no free class code after 8 tries")
    }

    fn class_quiz(&self, class: &ClassRow) -> Result<Arc<Quiz>> {
        self.quiz(class.seed, class.set, class.questions)
    }

    fn put_answers(&self, class: &ClassRow, body: &[u8]) -> Result<Reply> {
        let answers: Answers = match parse_body(body, "answers are {\"device\", \"picks\"}") {
            Ok(answers) => answers,
            Err(reply) => return Ok(reply),
        };
        let device_ok = (16..=64).contains(&answers.device.len())
            && answers.device.bytes().all(|b| b.is_ascii_hexdigit());
        if !device_ok {
            return Ok(refused(
                "400 Bad Request",
                "device: 16 to 64 hexadecimal digits (the page's random id)",
            ));
        }
        if let Err(e) = check_picks(&*self.class_quiz(class)?, &answers.picks) {
            return Ok(refused("400 Bad Request", format!("picks: {e}")));
        }
        let device = answers.device.to_ascii_lowercase();
        Ok(
            match self
                .store()
                .put_picks(&class.code, &device, &answers.picks, MAX_DEVICES)?
            {
                Stored::Kept(count) => json_reply("200 OK", json!({"count": count})),
                Stored::ClassFull => refused(
                    "409 Conflict",
                    format!("this class has answers from {MAX_DEVICES} devices already"),
                ),
            },
        )
    }

    fn figures(&self, class: &ClassRow) -> Result<Reply> {
        let quiz = self.class_quiz(class)?;
        let picks = self.store().picks(&class.code)?;
        let figures = ClassFigures::from_picks(&quiz, &picks)?;
        Ok(json_reply(
            "200 OK",
            json!({"class": {"code": class.code, "seed": class.seed, "set": class.set, "questions": class.questions},
                   "figures": figures}),
        ))
    }

    fn csv(&self, class: &ClassRow) -> Result<Reply> {
        let quiz = self.class_quiz(class)?;
        let picks = self.store().picks(&class.code)?;
        let mut out = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["student".to_owned()];
        header.extend((1..=quiz.questions.len()).map(|i| format!("q{i}")));
        header.push("right".into());
        out.write_record(&header)?;
        for (i, p) in picks.iter().enumerate() {
            let right = quiz
                .questions
                .iter()
                .zip(p)
                .filter(|(q, &x)| q.answer == usize::from(x))
                .count();
            let mut row = vec![(i + 1).to_string()];
            row.extend(p.iter().map(u8::to_string));
            row.push(right.to_string());
            out.write_record(&row)?;
        }
        Ok(Reply {
            status: "200 OK",
            content_type: "text/csv; charset=utf-8",
            body: out.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?,
        })
    }
}

/// A JSON body of the shape `what` describes, or the 400 that says why it is not one.
fn parse_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> std::result::Result<T, Reply> {
    serde_json::from_slice(body).map_err(|e| refused("400 Bad Request", format!("{what}: {e}")))
}

/// Whether `authorization` is `Bearer TOKEN` with the class's teacher token.
fn is_teacher(class: &ClassRow, authorization: Option<&str>) -> bool {
    authorization
        .and_then(|a| a.trim().strip_prefix("Bearer "))
        .is_some_and(|token| sha256_hex(token.trim()) == class.teacher_sha256)
}
