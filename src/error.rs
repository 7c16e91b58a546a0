//! Error codes: what kind of failure an error is, chosen where it happens (not guessed by a
//! caller from its call site). The wasm layer hands the code to the page as `Error.code`; the
//! page's `ERR` table (`www/shared/protocol.js`) lists the same strings, and a unit test here
//! keeps the two equal.

use std::fmt;

/// A machine-readable failure kind. `as_str` is the contract with the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The model file is not one we can read (not a GGUF, truncated, bad metadata or tensors).
    BadModel,
    /// The file is readable but its architecture is not one we run.
    UnsupportedArchitecture,
    /// A tensor type our kernels do not run.
    UnsupportedDtype,
    /// An allocation would not fit (GPU buffer limits, device out of memory).
    OutOfMemory,
    /// WebGPU was asked for and there is no API, no adapter or no device.
    NoAdapter,
    /// The GPU device was lost or failed during a run.
    DeviceLost,
    /// A benchmark data file is malformed.
    Data,
    /// A call's arguments are wrong (unknown backend or split, calls out of order).
    BadRequest,
    /// Anything else: a bug or an unexpected failure inside the engine.
    Engine,
}

impl ErrorCode {
    /// Every code, in the order the page's `ERR` table lists them.
    pub const ALL: [ErrorCode; 9] = [
        Self::BadModel,
        Self::UnsupportedArchitecture,
        Self::UnsupportedDtype,
        Self::OutOfMemory,
        Self::NoAdapter,
        Self::DeviceLost,
        Self::Data,
        Self::BadRequest,
        Self::Engine,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadModel => "bad-model",
            Self::UnsupportedArchitecture => "unsupported-architecture",
            Self::UnsupportedDtype => "unsupported-dtype",
            Self::OutOfMemory => "out-of-memory",
            Self::NoAdapter => "no-adapter",
            Self::DeviceLost => "device-lost",
            Self::Data => "data",
            Self::BadRequest => "bad-request",
            Self::Engine => "engine",
        }
    }
}

/// An error that carries its [`ErrorCode`]. Displays exactly as the error it wraps, so adding a
/// code never changes a message.
#[derive(Debug)]
pub struct CodedError {
    pub code: ErrorCode,
    inner: anyhow::Error,
}

impl fmt::Display for CodedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.inner)
    }
}

impl std::error::Error for CodedError {}

/// A new error with a code and a message.
pub fn coded(code: ErrorCode, message: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(CodedError {
        code,
        inner: anyhow::anyhow!("{message}"),
    })
}

/// Gives an error a code (the innermost code wins: the place that failed knows best).
pub fn with_code(error: impl Into<anyhow::Error>, code: ErrorCode) -> anyhow::Error {
    let error = error.into();
    if error.chain().any(|e| e.is::<CodedError>()) {
        return error;
    }
    anyhow::Error::new(CodedError { code, inner: error })
}

/// `result.code(ErrorCode::X)`: [`with_code`] on the error of a `Result`.
pub trait ResultExt<T> {
    fn code(self, code: ErrorCode) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> ResultExt<T> for Result<T, E> {
    fn code(self, code: ErrorCode) -> anyhow::Result<T> {
        self.map_err(|e| with_code(e, code))
    }
}

/// The code of an error: the innermost one in its chain, else [`ErrorCode::Engine`].
pub fn code_of(error: &anyhow::Error) -> ErrorCode {
    error
        .chain()
        .filter_map(|e| e.downcast_ref::<CodedError>())
        .last()
        .map_or(ErrorCode::Engine, |c| c.code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_code_survives_context_and_the_message_is_unchanged() {
        let e: anyhow::Result<()> = Err(coded(ErrorCode::BadModel, "not a GGUF file"));
        let e = e.context("loading m.gguf").unwrap_err();
        assert_eq!(code_of(&e), ErrorCode::BadModel);
        assert_eq!(format!("{e:#}"), "loading m.gguf: not a GGUF file");
    }

    #[test]
    fn the_innermost_code_wins_and_uncoded_errors_are_engine_errors() {
        let inner = coded(ErrorCode::NoAdapter, "no adapter");
        assert_eq!(
            code_of(&with_code(inner, ErrorCode::Engine)),
            ErrorCode::NoAdapter
        );
        assert_eq!(code_of(&anyhow::anyhow!("boom")), ErrorCode::Engine);
        let wrapped: anyhow::Result<()> = Err(anyhow::anyhow!("bad csv"));
        assert_eq!(
            code_of(&wrapped.code(ErrorCode::Data).unwrap_err()),
            ErrorCode::Data
        );
    }

    /// The text of `js` between `start` and the next `end`.
    fn between<'a>(js: &'a str, start: &str, end: &str) -> &'a str {
        let rest = js.split_once(start).map(|(_, rest)| rest);
        let found = rest
            .and_then(|rest| rest.split_once(end))
            .map(|(text, _)| text);
        found.unwrap_or_else(|| panic!("protocol.js: no '{start}' … '{end}'"))
    }

    /// The page's copy of the contract: `ERR`'s Rust section and `SR_FILES` in
    /// `www/shared/protocol.js` must list exactly Rust's codes and SR files, in order.
    #[test]
    fn the_page_lists_the_same_error_codes_and_sr_files_as_rust() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/www/shared/protocol.js");
        let js = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let section = between(
            &js,
            "// set by the wasm API (Rust)",
            "// page and worker only",
        );
        // Lines `NAME: 'code', // comment`: the quoted string is the code.
        let page: Vec<&str> = section
            .lines()
            .filter_map(|line| line.split('\'').nth(1))
            .collect();
        let rust: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(page, rust, "ERR in {path} differs from ErrorCode::ALL");

        let files = between(&js, "export const SR_FILES = Object.freeze([", "])");
        let page: Vec<&str> = files
            .split(',')
            .map(|f| f.trim().trim_matches('\''))
            .collect();
        assert_eq!(page, crate::eval::SR_FILES, "SR_FILES in {path}");
    }
}
