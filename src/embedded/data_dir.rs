//! Where an embedded cluster keeps its data: a kept directory, or an ephemeral one removed
//! when the run ends (and, after a run that died without cleaning up, by the next one).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use tempfile::TempDir;

use crate::cli::ClusterArgs;

/// Where the cluster keeps its data.
#[derive(Debug)]
pub enum DataDir {
    /// Kept across runs.
    Persistent(PathBuf),
    /// Removed when dropped.
    Ephemeral(TempDir),
}

const EPHEMERAL_PREFIX: &str = "kdeck-";
/// In an ephemeral data directory: the id of the process that owns it.
const EPHEMERAL_OWNER: &str = "kdeck.pid";

/// Removes the ephemeral data directories of runs that died without cleaning up (a crash,
/// SIGKILL): those under `temp` named `kdeck-*` whose owner file names a process that no
/// longer runs. Directories without that file are left alone; failures are only logged.
pub fn remove_stale_ephemeral_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let named = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(EPHEMERAL_PREFIX));
        if !named || !path.is_dir() {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(path.join(EPHEMERAL_OWNER)) else {
            continue;
        };
        let Ok(pid) = owner.trim().parse::<i32>() else { continue };
        if pid <= 0 || process_alive(pid) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {
                tracing::info!(dir = %path.display(), pid, "removed the data directory of an ephemeral run that did not clean up")
            }
            Err(e) => {
                tracing::warn!(dir = %path.display(), error = %e, "cannot remove a stale ephemeral data directory")
            }
        }
    }
}

/// Whether process `pid` may still run: on Linux its `/proc` entry tells; where there is no
/// `/proc` every owner counts as running, so nothing is removed by mistake.
fn process_alive(pid: i32) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

impl DataDir {
    /// `--ephemeral`: a new temporary directory; `--data-dir DIR`: that directory; otherwise
    /// `kdeck/` in the platform data directory.
    pub fn prepare(args: &ClusterArgs) -> Result<DataDir> {
        let dir = if args.ephemeral {
            let temp = std::env::temp_dir();
            remove_stale_ephemeral_dirs(&temp);
            let dir = tempfile::Builder::new()
                .prefix(EPHEMERAL_PREFIX)
                .tempdir_in(&temp)
                .context("creating a temporary data directory")?;
            std::fs::write(dir.path().join(EPHEMERAL_OWNER), std::process::id().to_string())
                .with_context(|| format!("marking {} as this run's", dir.path().display()))?;
            DataDir::Ephemeral(dir)
        } else {
            let path = match &args.data_dir {
                Some(d) => d.clone(),
                None => dirs::data_dir()
                    .map(|d| d.join("kdeck"))
                    .ok_or_else(|| anyhow!("no platform data directory here; pass --data-dir DIR or --ephemeral"))?,
            };
            std::fs::create_dir_all(&path)
                .with_context(|| format!("creating the data directory {}", path.display()))?;
            DataDir::Persistent(path)
        };
        Ok(dir)
    }

    pub fn path(&self) -> &Path {
        match self {
            DataDir::Persistent(p) => p,
            DataDir::Ephemeral(t) => t.path(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ephemeral_dirs_of_processes_that_are_gone_are_removed() {
        let temp = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("true").spawn().expect("spawn true");
        let gone = child.id();
        child.wait().expect("wait");
        let make = |name: &str, owner: Option<String>| {
            let dir = temp.path().join(name);
            std::fs::create_dir(&dir).expect("mkdir");
            if let Some(pid) = owner {
                std::fs::write(dir.join(EPHEMERAL_OWNER), pid).expect("owner file");
            }
            dir
        };
        let stale = make("kdeck-stale", Some(gone.to_string()));
        let live = make("kdeck-live", Some(std::process::id().to_string()));
        let unmarked = make("kdeck-unmarked", None);
        let other = make("other-stale", Some(gone.to_string()));
        remove_stale_ephemeral_dirs(temp.path());
        assert!(!stale.exists(), "a dead run's directory is removed");
        assert!(live.exists(), "a running kdeck's directory stays");
        assert!(unmarked.exists(), "a directory kdeck did not mark stays");
        assert!(other.exists(), "only kdeck-* directories are considered");
    }
}
