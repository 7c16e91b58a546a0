//! The class server's database (SQLite, one file): the classes and each device's picks. Every
//! write is one transaction, so an answer is either kept whole or not at all, and a restarted
//! server finds every answer it acknowledged.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::eval::quiz::QuizSet;

/// A class as stored: its quiz and its teacher's token (as a sha256: the token itself is never
/// kept).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassRow {
    pub code: String,
    pub teacher_sha256: String,
    pub seed: u64,
    pub set: QuizSet,
    pub questions: usize,
}

/// What storing one device's picks did.
#[derive(Debug, PartialEq)]
pub enum Stored {
    /// A new device's picks, or a device's new picks replacing its old ones; the class's count.
    Kept(usize),
    /// The class already holds answers from as many devices as it may.
    ClassFull,
}

pub struct Store {
    db: Connection,
}

impl Store {
    /// Opens (or creates) the database file.
    pub fn open(path: &Path) -> Result<Store> {
        let db = Connection::open(path)
            .with_context(|| format!("cannot open the class database {}", path.display()))?;
        db.execute_batch(
            "PRAGMA foreign_keys = ON;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS classes (
               code TEXT PRIMARY KEY, teacher_sha256 TEXT NOT NULL, seed INTEGER NOT NULL,
               quiz_set TEXT NOT NULL, questions INTEGER NOT NULL, created TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS answers (
               code TEXT NOT NULL REFERENCES classes(code) ON DELETE CASCADE,
               device TEXT NOT NULL, picks TEXT NOT NULL, received TEXT NOT NULL,
               PRIMARY KEY (code, device));",
        )
        .with_context(|| {
            format!(
                "{} is not a class database sr-bench can use",
                path.display()
            )
        })?;
        Ok(Store { db })
    }

    /// How many classes are kept.
    pub fn class_count(&self) -> Result<usize> {
        Ok(self
            .db
            .query_row("SELECT COUNT(*) FROM classes", [], |r| r.get::<_, i64>(0))?
            as usize)
    }

    pub fn create_class(&self, row: &ClassRow) -> Result<()> {
        self.db.execute(
            "INSERT INTO classes (code, teacher_sha256, seed, quiz_set, questions, created)
             VALUES (?1, ?2, ?3, ?4, ?5, datetime('now'))",
            params![
                row.code,
                row.teacher_sha256,
                row.seed as i64,
                row.set.as_str(),
                row.questions as i64
            ],
        )?;
        Ok(())
    }

    pub fn class(&self, code: &str) -> Result<Option<ClassRow>> {
        Ok(self
            .db
            .query_row(
                "SELECT code, teacher_sha256, seed, quiz_set, questions FROM classes WHERE code = ?1",
                [code],
                |r| {
                    Ok(ClassRow {
                        code: r.get(0)?,
                        teacher_sha256: r.get(1)?,
                        seed: r.get::<_, i64>(2)? as u64,
                        set: r.get::<_, String>(3)?.parse().map_err(|e: anyhow::Error| {
                            rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, e.into())
                        })?,
                        questions: r.get::<_, i64>(4)? as usize,
                    })
                },
            )
            .optional()?)
    }

    /// Keeps `device`'s picks (replacing its earlier ones) unless the class is full.
    pub fn put_picks(
        &mut self,
        code: &str,
        device: &str,
        picks: &[u8],
        max_devices: usize,
    ) -> Result<Stored> {
        let tx = self.db.transaction()?;
        let count = |tx: &rusqlite::Transaction| -> rusqlite::Result<usize> {
            tx.query_row(
                "SELECT COUNT(*) FROM answers WHERE code = ?1",
                [code],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
        };
        let known: bool = tx
            .query_row(
                "SELECT 1 FROM answers WHERE code = ?1 AND device = ?2",
                [code, device],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        if !known && count(&tx)? >= max_devices {
            return Ok(Stored::ClassFull);
        }
        let text: String = picks.iter().map(|p| char::from(b'0' + p)).collect();
        tx.execute(
            "INSERT INTO answers (code, device, picks, received) VALUES (?1, ?2, ?3, datetime('now'))
             ON CONFLICT (code, device) DO UPDATE SET picks = excluded.picks, received = excluded.received",
            params![code, device, text],
        )?;
        let n = count(&tx)?;
        tx.commit()?;
        Ok(Stored::Kept(n))
    }

    /// Every device's picks, in the order they first arrived.
    pub fn picks(&self, code: &str) -> Result<Vec<Vec<u8>>> {
        let mut query = self
            .db
            .prepare("SELECT picks FROM answers WHERE code = ?1 ORDER BY rowid")?;
        let rows = query.query_map([code], |r| r.get::<_, String>(0))?;
        rows.map(|text| Ok(text?.bytes().map(|b| b.wrapping_sub(b'0')).collect()))
            .collect()
    }

    /// Deletes a class and its answers; whether it existed.
    pub fn delete(&self, code: &str) -> Result<bool> {
        Ok(self
            .db
            .execute("DELETE FROM classes WHERE code = ?1", [code])?
            > 0)
    }
}
