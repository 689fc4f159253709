//! The `-wal` and `-shm` files beside a database a server has open, watched: deleting or
//! replacing them under a running server (an operator "cleaning up") and then starting another
//! server lost answered writes and destroyed the file. A server records their inodes once open
//! and checks them (two `stat` calls) before each write transaction; when either was unlinked
//! or replaced it refuses to write, with an error saying what happened and what to do.
//!
//! Two more guards close the rest of that failure. A process about to open the file refuses
//! when another process holds it open (SQLite's `SHARED` lock, which a WAL-mode connection
//! keeps while open) but its `-wal` or `-shm` is missing: opening would start a new WAL beside
//! the other process's deleted one ([`refuse_orphaned`]). And a server whose companions were
//! deleted, as it closes, locks every other process out of the file and copies its deleted WAL
//! into it, so that the writes it answered are kept ([`lock_out_others`]); when another
//! process has the file open it cannot, and it closes without writing into the file.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::store::StoreError;

/// The identity of a file: device and inode.
type FileId = (u64, u64);

/// The companions of one database file and their identities when the server opened it.
#[derive(Clone)]
pub(crate) struct Companions {
    real: PathBuf,
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
            real: real.to_path_buf(),
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

/// First byte of the range SQLite's unix VFS locks for a `SHARED` lock on a database file:
/// `PENDING_BYTE` (0x40000000) + 2 (`os_unix.c`, `SHARED_FIRST`).
const SHARED_FIRST: i64 = 0x4000_0002;

/// Bytes in that range (`SHARED_SIZE`).
const SHARED_SIZE: i64 = 510;

/// How long [`refuse_orphaned`] waits for a missing companion to appear (or the lock to go)
/// before it decides, and the pause between looks. Another process may be between taking its
/// lock and creating the companions, or between deleting them and releasing its lock as it
/// closes; on a loaded machine that window lasted over 40 ms (a CI run refused a server that
/// was merely starting beside five others).
const ORPHAN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);
const ORPHAN_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

impl Companions {
    /// The database file, as shown to users.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// When a companion is gone or replaced: lock every other process out of the database
    /// file ([`lock_out_others`]), so that this process may copy its own, deleted WAL into
    /// the file. `None` when another process has the file open (then nothing may be written
    /// into it), or the companions are in place.
    pub(crate) fn lock_out_others_if_gone(&self) -> Option<Result<Exclusive, u32>> {
        self.check().err()?;
        Some(lock_out_others(&self.real))
    }
}

/// A write lock on the database file's whole `SHARED` range, held by this process: no other
/// process can open the file (SQLite's open waits for its `SHARED` lock) until it is dropped.
/// Drop it only after this process's connections to the file are closed: closing any
/// descriptor of a file releases all of a process's POSIX locks on it.
pub(crate) struct Exclusive(#[allow(dead_code)] File);

/// The `struct flock` for SQLite's `SHARED` range.
#[cfg(unix)]
fn shared_range(kind: libc::c_short) -> libc::flock {
    // SAFETY: `flock` is plain data; every field this uses is set below.
    let mut f: libc::flock = unsafe { std::mem::zeroed() };
    f.l_type = kind;
    f.l_whence = libc::SEEK_SET as libc::c_short;
    f.l_start = SHARED_FIRST;
    f.l_len = SHARED_SIZE;
    f
}

/// Take [`Exclusive`] without waiting; `Err(pid)` names a process that holds a lock there.
#[cfg(unix)]
pub(crate) fn lock_out_others(real: &Path) -> Result<Exclusive, u32> {
    use std::os::fd::AsRawFd;
    let file = File::options()
        .read(true)
        .write(true)
        .open(real)
        .map_err(|_| 0u32)?;
    let mut f = shared_range(libc::F_WRLCK as libc::c_short);
    // SAFETY: a valid descriptor and a valid `flock`.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &mut f) } == 0 {
        return Ok(Exclusive(file));
    }
    Err(lock_held(&file).map_or(0, |held| held.pid))
}

#[cfg(not(unix))]
pub(crate) fn lock_out_others(_: &Path) -> Result<Exclusive, u32> {
    Err(0)
}

/// A lock another process holds in the `SHARED` range of a database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    /// The process (0 when the kernel could not name it, e.g. another PID namespace).
    pid: u32,
    /// A write lock: SQLite's `EXCLUSIVE`, which a WAL-mode connection takes only while it
    /// closes (checkpointing, then deleting the companions), or [`Exclusive`]. A read lock
    /// is the `SHARED` lock every open WAL-mode connection keeps.
    write: bool,
}

/// The lock, other than this process's, in the `SHARED` range of `file` (`F_GETLK` names one
/// of them when there are several).
#[cfg(unix)]
fn lock_held(file: &File) -> Option<Held> {
    use std::os::fd::AsRawFd;
    let mut f = shared_range(libc::F_WRLCK as libc::c_short);
    // SAFETY: a valid descriptor and a valid `flock`.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut f) } != 0 {
        return None;
    }
    (f.l_type != libc::F_UNLCK as libc::c_short).then(|| Held {
        pid: u32::try_from(f.l_pid).unwrap_or(0),
        write: f.l_type == libc::F_WRLCK as libc::c_short,
    })
}

#[cfg(not(unix))]
fn lock_held(_: &File) -> Option<Held> {
    None
}

/// Whether process `pid` keeps a deleted file named like `companion` open: what a process
/// shows when the companion was deleted under it (SQLite keeps the `-wal` and `-shm` open
/// for as long as the database is). `None` when that cannot be learned (no `/proc`, another
/// user's process, an unnamed process).
///
/// Matched by file name, not the whole path (a link in the path would make the same file
/// read differently), so a mistake can only err towards refusing.
fn keeps_deleted(pid: u32, companion: &Path) -> Option<bool> {
    let name = companion.file_name()?.to_str()?;
    let deleted = format!("/{name} (deleted)");
    if pid == 0 {
        return None;
    }
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let mut any = false;
    for fd in fds.flatten() {
        any = true;
        if std::fs::read_link(fd.path()).is_ok_and(|t| t.to_string_lossy().ends_with(&deleted)) {
            return Some(true);
        }
    }
    // A process holding a lock has the database open: no descriptor seen means the listing
    // was not really readable.
    any.then_some(false)
}

/// Whether the file's header says WAL mode (bytes 18 and 19 are 2: "write and read format
/// versions", sqlite.org/fileformat.html §1.3.3).
fn header_says_wal(file: &mut File) -> bool {
    let mut header = [0u8; 20];
    file.read_exact(&mut header).is_ok() && header[18] == 2 && header[19] == 2
}

/// Refuse to open `real` when another process holds it open in WAL mode but its `-wal` or
/// `-shm` is missing: they were deleted under that process, whose committed writes may live
/// only in its deleted WAL; opening would start another WAL beside it, and the file would be
/// damaged or those writes lost.
///
/// A missing companion beside a held lock is also what a process shows for a moment while it
/// opens the file (lock taken, `-shm` not created yet) or closes it (companions deleted, lock
/// not yet released). So it refuses at once only on proof: the holder, holding a read lock,
/// keeps a deleted file of that name open (read from `/proc/PID/fd`). Otherwise it looks
/// again every [`ORPHAN_WAIT`] for up to [`ORPHAN_DEADLINE`]; then it opens if the holder
/// was seen to keep no deleted companion, and refuses when that could not be learned.
///
/// # Errors
/// [`StoreError::Orphaned`] naming the process and the missing file.
pub(crate) fn refuse_orphaned(real: &Path, shown: &str) -> Result<(), StoreError> {
    let start = std::time::Instant::now();
    loop {
        let Ok(mut file) = File::open(real) else {
            return Ok(()); // the caller's own checks say why
        };
        let missing = ["-wal", "-shm"]
            .iter()
            .map(|s| crate::files::with_suffix(real, s))
            .find(|p| !p.exists());
        let (Some(missing), true) = (missing, header_says_wal(&mut file)) else {
            return Ok(());
        };
        let Some(held) = lock_held(&file) else {
            return Ok(());
        };
        let orphaned = || StoreError::Orphaned {
            path: shown.to_string(),
            file: missing.display().to_string(),
            pid: held.pid,
        };
        let evidence = keeps_deleted(held.pid, &missing);
        // A reader keeping the deleted companion open: certain, refuse now. A writer doing so
        // is closing (or copying its WAL in): wait for it to let go.
        if evidence == Some(true) && !held.write {
            return Err(orphaned());
        }
        if start.elapsed() >= ORPHAN_DEADLINE {
            // Still there: refuse unless the holder was seen not to keep a deleted companion
            // (a process that took its lock but has not created the file yet, and is slow).
            return match evidence {
                Some(false) => Ok(()),
                _ => Err(orphaned()),
            };
        }
        std::thread::sleep(ORPHAN_WAIT);
    }
}
