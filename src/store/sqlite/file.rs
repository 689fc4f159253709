//! Private files and folders for a new database: the one place that creates them, used by
//! `create.rs` (a new file) and `open.rs`.

use std::fs;
use std::path::Path;

#[cfg(unix)]
/// Create `dir` and its missing parents, private to this user (0700 on Unix).
///
/// # Errors
/// The operating system's error.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(unix)]
/// Create the empty file `p`, private to this user (0600 on Unix); one that another process
/// created meanwhile is accepted.
///
/// # Errors
/// The operating system's error.
pub(crate) fn create_private_file(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(p)
    {
        // Another server created it between our check and now: theirs is as good as ours.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other.map(drop),
    }
}

#[cfg(not(unix))]
pub(crate) fn create_private_file(p: &Path) -> std::io::Result<()> {
    match fs::OpenOptions::new().write(true).create_new(true).open(p) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other.map(drop),
    }
}
