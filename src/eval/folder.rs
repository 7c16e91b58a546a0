//! Where the datasets live on disk (native only): the one rule every CLI subcommand and every
//! test uses for the data folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that names the data folder.
pub const DATA_ENV: &str = "SR_BENCH_DATA";

/// The folder `build.sh` fills (pinned, sha256-checked), relative to the working directory.
pub const DATA_DIR: &str = "data";

/// The offline mirror `build.sh` copies the data from, relative to the working directory.
pub const SHARED_DATA_DIR: &str = "../shared/data";

/// The default data folder: `$SR_BENCH_DATA` if set; else `data` if it holds `sr/`; else
/// `../shared/data` if that does; else `data` (so a missing folder is named in the error).
/// `--data` on the command line overrides it. Tests run in the crate root, so relative
/// folders mean the same there as for the CLI run from the repository root.
pub fn default_data_dir() -> PathBuf {
    choose(std::env::var_os(DATA_ENV), |dir| dir.join("sr").is_dir())
}

/// [`default_data_dir`] given the variable's value and a test for "holds the data".
fn choose(env: Option<OsString>, holds_data: impl Fn(&Path) -> bool) -> PathBuf {
    if let Some(dir) = env {
        return PathBuf::from(dir);
    }
    [DATA_DIR, SHARED_DATA_DIR]
        .into_iter()
        .map(PathBuf::from)
        .find(|dir| holds_data(dir))
        .unwrap_or_else(|| PathBuf::from(DATA_DIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_wins_then_data_then_the_shared_mirror() {
        let all = |_: &Path| true;
        let none = |_: &Path| false;
        let only_shared = |dir: &Path| dir == Path::new("../shared/data");
        assert_eq!(choose(Some("/d".into()), none), PathBuf::from("/d"));
        assert_eq!(choose(None, all), PathBuf::from("data"));
        assert_eq!(choose(None, only_shared), PathBuf::from("../shared/data"));
        assert_eq!(choose(None, none), PathBuf::from("data"));
    }
}
