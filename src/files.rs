//! Files the console writes (`export --out`, `report --out`, `backup`), replaced whole: the
//! destination is checked first ([`check_destination`]), the content is written to a private
//! temporary file beside it ([`Staged`]), synced, and renamed into place, so that the
//! destination is either what it was or the complete new file, never a mix, and a failure
//! leaves nothing behind.
//!
//! A destination is refused when it is a symbolic link (a dangling one would create its
//! target), the database in use or one of its `-wal`/`-shm`/`-journal` companions (by name or
//! by inode, so a hard link is caught too), any SQLite file (by its header), something other
//! than a regular file, or an existing file when the command was not given `--force`.

use std::fs;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// The file `p` names: absolute, every symbolic link resolved (a dangling one too, so that the
/// file it points to is the one created and made private), `.` and `..` applied, as the store
/// resolves `--db`.
///
/// # Errors
/// A symlink that cannot be read, or more than 40 links in a row (a loop).
pub fn resolve_path(p: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(p)?;
    let mut pending: Vec<PathBuf> = absolute
        .components()
        .rev()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut out = PathBuf::new();
    let mut links = 0;
    while let Some(part) = pending.pop() {
        match part.components().next() {
            Some(Component::Prefix(_) | Component::RootDir) => out.push(&part),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Normal(name)) => {
                let next = out.join(name);
                let is_link = fs::symlink_metadata(&next)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if !is_link {
                    out = next;
                    continue;
                }
                links += 1;
                if links > 40 {
                    return Err(std::io::Error::other("too many levels of symbolic links"));
                }
                let target = fs::read_link(&next)?;
                // A relative target is read from the link's directory (`out`); an absolute one
                // restarts from its root, which `push` does.
                pending.extend(
                    target
                        .components()
                        .rev()
                        .map(|c| PathBuf::from(c.as_os_str())),
                );
            }
        }
    }
    Ok(out)
}

/// `p` with `suffix` appended to its file name (`db` + `-wal`): a database's companion file.
pub fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The first 16 bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The companions SQLite keeps beside a database file.
pub const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// What to do with a destination that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse it: the command never replaces a file (`backup`).
    Keep,
    /// Refuse it, saying that `--force` replaces it.
    Refuse,
    /// Replace it (`--force`), unless another rule refuses it.
    Replace,
}

impl Existing {
    /// [`Existing::Replace`] with `--force`, else [`Existing::Refuse`].
    pub fn force(force: bool) -> Existing {
        if force {
            Existing::Replace
        } else {
            Existing::Refuse
        }
    }
}

/// Why a destination was refused or could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {reason}")]
pub struct FileError {
    /// The destination as given.
    pub path: String,
    /// What is wrong and what to do.
    pub reason: String,
}

impl FileError {
    fn new(path: &Path, reason: impl Into<String>) -> FileError {
        FileError {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }
}

/// Check that `dest` may be written: not a symbolic link, not `database` (the file served,
/// symbolic links resolved) nor one of its companions, not an SQLite file, a regular file if it
/// exists, and an existing file only as `existing` says.
///
/// # Errors
/// [`FileError`] saying which rule refused it and what to do instead.
pub fn check_destination(
    dest: &Path,
    database: Option<&Path>,
    existing: Existing,
) -> Result<(), FileError> {
    if dest.file_name().is_none() {
        return Err(FileError::new(dest, "it names no file"));
    }
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(FileError::new(dest, e.to_string())),
    };
    if meta.as_ref().is_some_and(|m| m.file_type().is_symlink()) {
        return Err(FileError::new(
            dest,
            "it is a symbolic link, which is never followed; name the file itself",
        ));
    }
    if let Some(db) = database
        && is_database_file(dest, meta.as_ref(), db)
    {
        return Err(FileError::new(
            dest,
            format!(
                "it is the database in use ({}) or one of its -wal/-shm/-journal files; \
                 choose another file",
                db.display()
            ),
        ));
    }
    let Some(meta) = meta else {
        return Ok(());
    };
    if !meta.is_file() {
        return Err(FileError::new(
            dest,
            "it exists and is not a regular file; choose another path",
        ));
    }
    if starts_with_sqlite_magic(dest) {
        return Err(FileError::new(
            dest,
            "it is an SQLite database, which is never written over; choose another file",
        ));
    }
    match existing {
        Existing::Replace => Ok(()),
        Existing::Refuse => Err(FileError::new(
            dest,
            "it exists; add --force to replace it, or choose another file",
        )),
        Existing::Keep => Err(FileError::new(
            dest,
            "it exists, and this command never replaces a file; choose another file",
        )),
    }
}

/// Whether `dest` is the database `db` or one of its companions: the same path once the
/// folders' symbolic links are resolved, or the same inode.
fn is_database_file(dest: &Path, dest_meta: Option<&std::fs::Metadata>, db: &Path) -> bool {
    let real_db = resolve_path(db).unwrap_or_else(|_| db.to_path_buf());
    let candidates: Vec<PathBuf> = std::iter::once(real_db.clone())
        .chain(COMPANIONS.iter().map(|s| with_suffix(&real_db, s)))
        .collect();
    let real_dest = std::path::absolute(dest)
        .ok()
        .and_then(|abs| {
            let parent = abs.parent()?;
            let name = abs.file_name()?;
            Some(
                resolve_path(parent)
                    .unwrap_or_else(|_| parent.to_path_buf())
                    .join(name),
            )
        })
        .unwrap_or_else(|| dest.to_path_buf());
    if candidates.contains(&real_dest) {
        return true;
    }
    same_inode(dest_meta, &candidates)
}

#[cfg(unix)]
fn same_inode(dest_meta: Option<&std::fs::Metadata>, candidates: &[PathBuf]) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(d) = dest_meta else {
        return false;
    };
    candidates
        .iter()
        .any(|c| std::fs::metadata(c).is_ok_and(|m| m.dev() == d.dev() && m.ino() == d.ino()))
}

#[cfg(not(unix))]
fn same_inode(_: Option<&std::fs::Metadata>, _: &[PathBuf]) -> bool {
    false
}

/// Whether the file at `p` begins with [`SQLITE_MAGIC`].
pub fn starts_with_sqlite_magic(p: &Path) -> bool {
    let mut head = [0u8; 16];
    File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == SQLITE_MAGIC)
}

/// A new file being written beside its destination under a temporary name
/// (`.NAME.partial-PID-RANDOM`, created 0600): [`Staged::commit`] syncs it and renames it to
/// the destination; dropped uncommitted, it is removed (with any `-journal`, `-wal` or `-shm`
/// SQLite made beside it).
pub struct Staged {
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<File>,
    committed: bool,
}

impl Staged {
    /// Check `dest` ([`check_destination`]) and create the temporary file beside it.
    ///
    /// # Errors
    /// [`FileError`]: the destination is refused, or its folder cannot be written.
    pub fn create(
        dest: &Path,
        database: Option<&Path>,
        existing: Existing,
    ) -> Result<Staged, FileError> {
        check_destination(dest, database, existing)?;
        let name = dest
            .file_name()
            .ok_or_else(|| FileError::new(dest, "it names no file"))?
            .to_string_lossy()
            .into_owned();
        let tmp = dest.with_file_name(format!(
            ".{name}.partial-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let file = create_private(&tmp).map_err(|e| FileError::new(dest, e.to_string()))?;
        Ok(Staged {
            tmp,
            dest: dest.to_path_buf(),
            file: Some(file),
            committed: false,
        })
    }

    /// The temporary file's path (for SQLite's backup, which opens it itself).
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Write all of `bytes` to the temporary file.
    ///
    /// # Errors
    /// [`FileError`] naming the destination (a full disk, a file-size limit).
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        let dest = &self.dest;
        match self.file.as_mut() {
            Some(f) => f
                .write_all(bytes)
                .map_err(|e| FileError::new(dest, e.to_string())),
            None => Err(FileError::new(dest, "the file was already finished")),
        }
    }

    /// Sync the temporary file, check the destination again (it may have appeared meanwhile),
    /// rename it into place and sync the folder.
    ///
    /// # Errors
    /// [`FileError`]; the temporary file is then removed and the destination left as it was.
    pub fn commit(
        mut self,
        database: Option<&Path>,
        existing: Existing,
    ) -> Result<PathBuf, FileError> {
        let fail = |e: std::io::Error| FileError::new(&self.dest, e.to_string());
        let file = match self.file.take() {
            Some(f) => f,
            None => File::open(&self.tmp).map_err(fail)?,
        };
        file.sync_all().map_err(fail)?;
        drop(file);
        check_destination(&self.dest, database, existing)?;
        std::fs::rename(&self.tmp, &self.dest).map_err(fail)?;
        self.committed = true;
        if let Some(dir) = self.dest.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(self.dest.clone())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
            for suffix in COMPANIONS {
                let _ = std::fs::remove_file(with_suffix(&self.tmp, suffix));
            }
        }
    }
}

/// Write `bytes` to `dest` whole: [`Staged::create`], write, [`Staged::commit`].
///
/// # Errors
/// As [`Staged::create`] and [`Staged::commit`].
pub fn replace_whole(
    dest: &Path,
    database: Option<&Path>,
    existing: Existing,
    bytes: &[u8],
) -> Result<PathBuf, FileError> {
    let mut staged = Staged::create(dest, database, existing)?;
    staged.write_all(bytes)?;
    staged.commit(database, existing)
}

/// `bytes` as lowercase hex (a sha256 digest).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Create `p`, which must not exist, readable and writable by this user only (0600 on Unix).
#[cfg(unix)]
fn create_private(p: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(p)
}

#[cfg(not(unix))]
fn create_private(p: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_and_its_companions_are_refused_by_name_before_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        std::fs::write(&db, b"x").unwrap();
        for name in ["s.db", "s.db-wal", "s.db-shm", "s.db-journal"] {
            let e = check_destination(&dir.path().join(name), Some(&db), Existing::Replace)
                .unwrap_err();
            assert!(e.reason.contains("database in use"), "{name}: {e}");
        }
        check_destination(&dir.path().join("s.db-other"), Some(&db), Existing::Refuse).unwrap();
    }
}
