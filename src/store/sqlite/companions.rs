//! The `-wal` and `-shm` files beside a database a server has open, watched: deleting or
//! replacing them under a running server (an operator "cleaning up") and then starting another
//! server lost answered writes and destroyed the file. A server records their inodes once open
//! and checks them (two `stat` calls) before each write transaction; when either was unlinked
//! or replaced it refuses to write, with an error saying what happened and what to do.

use std::path::{Path, PathBuf};

use crate::store::StoreError;

/// The identity of a file: device and inode.
type FileId = (u64, u64);

/// The companions of one database file and their identities when the server opened it.
pub(crate) struct Companions {
    shown: String,
    files: Vec<(PathBuf, FileId)>,
}

#[cfg(unix)]
fn file_id(p: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &Path) -> Option<FileId> {
    None
}

impl Companions {
    /// Record the `-wal` and `-shm` of `real` (those that exist: both do once a WAL
    /// connection has read the file).
    pub(crate) fn record(real: &Path, shown: &str) -> Companions {
        let files = ["-wal", "-shm"]
            .iter()
            .map(|s| crate::store::with_suffix(real, s))
            .filter_map(|p| file_id(&p).map(|id| (p, id)))
            .collect();
        Companions {
            shown: shown.to_string(),
            files,
        }
    }

    /// Refuse to write when a recorded companion is gone or is another file now.
    ///
    /// # Errors
    /// [`StoreError::CompanionReplaced`] naming the file.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        for (p, id) in &self.files {
            let what = match file_id(p) {
                Some(now) if now == *id => continue,
                Some(_) => "was replaced by another file",
                None => "was deleted",
            };
            return Err(StoreError::CompanionReplaced {
                path: self.shown.clone(),
                file: p.display().to_string(),
                what,
            });
        }
        Ok(())
    }
}
