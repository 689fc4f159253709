//! Which project the server's rows belong to: every lesson, directive and belief carries one,
//! and a server reads and writes only its own (issue 28). The project is found once at
//! start-up from the working directory, or named with `--project` / `META_UTL_PROJECT`:
//!
//! 1. the `origin` remote of the enclosing git repository, normalised ([`normalise_remote`]):
//!    scheme, user, password, port and a trailing `.git` dropped, the host lowercased, so
//!    `git@github.com:acme/shop.git`, `https://github.com/acme/shop` and a clone elsewhere
//!    are one project, `github.com/acme/shop`;
//! 2. else the repository root's path (a repository without an `origin`);
//! 3. else the working directory's path.
//!
//! The repository is read from its files (`.git` as a folder, or a `.git` file pointing at
//! a worktree's or submodule's git folder, with `commondir`), without running git: the
//! server starts in a few milliseconds and needs no git installed. `insteadOf` rewrites and
//! `include`d config files are not followed (name the project with `--project` then).

use std::fs;
use std::path::{Path, PathBuf};

/// Environment variable naming the project (what `--project` sets).
pub const PROJECT_ENV: &str = "META_UTL_PROJECT";

/// Longest project name, in characters.
pub const MAX_PROJECT_CHARS: usize = 256;

/// The project of rows written before projects existed (an upgraded database); shown as
/// [`UNASSIGNED_LABEL`] and moved to a real project with `console projects move`.
pub const UNASSIGNED: &str = "";

/// How [`UNASSIGNED`] is shown to people and accepted on the console's command line.
pub const UNASSIGNED_LABEL: &str = "(unassigned)";

/// A project and where its name came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The name rows are stored under: a normalised remote (`github.com/acme/shop`), an
    /// absolute path, or the name given.
    pub name: String,
    /// Where the name came from.
    pub source: ProjectSource,
}

/// Where a [`Project`]'s name came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectSource {
    /// `--project` or [`PROJECT_ENV`].
    Named,
    /// The `origin` remote of the git repository at this root.
    Remote(PathBuf),
    /// A git repository without an `origin` remote: its root's path.
    RepositoryRoot,
    /// No git repository: the working directory's path.
    WorkingDirectory,
}

impl Project {
    /// The project named explicitly (`--project NAME`), checked with [`check_name`].
    ///
    /// # Errors
    /// What is wrong with the name, for the user.
    pub fn named(name: &str) -> Result<Project, String> {
        Ok(Project {
            name: check_name(name)?,
            source: ProjectSource::Named,
        })
    }

    /// The project of the working directory `cwd` (see the module documentation). Never
    /// fails: an unreadable git folder counts as no repository.
    pub fn detect(cwd: &Path) -> Project {
        let cwd = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let Some((root, git_dir)) = enclosing_repository(&cwd) else {
            return Project {
                name: cwd.display().to_string(),
                source: ProjectSource::WorkingDirectory,
            };
        };
        match origin_url(&git_dir).and_then(|url| normalise_remote(&url)) {
            Some(name) => Project {
                name,
                source: ProjectSource::Remote(root),
            },
            None => Project {
                name: root.display().to_string(),
                source: ProjectSource::RepositoryRoot,
            },
        }
    }

    /// How the project was chosen, for the start-up log line and `status`.
    pub fn describe(&self) -> String {
        match &self.source {
            ProjectSource::Named => format!("{} (named)", self.name),
            ProjectSource::Remote(root) => {
                format!("{} (git remote origin of {})", self.name, root.display())
            }
            ProjectSource::RepositoryRoot => {
                format!("{} (git repository without an origin remote)", self.name)
            }
            ProjectSource::WorkingDirectory => {
                format!("{} (working directory; not in a git repository)", self.name)
            }
        }
    }
}

/// A project name as given on the command line: surrounding spaces trimmed; 1 to
/// [`MAX_PROJECT_CHARS`] characters, no control characters. [`UNASSIGNED_LABEL`] names the
/// rows without a project.
///
/// # Errors
/// What is wrong, for the user.
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name == UNASSIGNED_LABEL {
        return Ok(UNASSIGNED.to_owned());
    }
    if name.is_empty() {
        return Err(format!(
            "the project name is empty; give a name such as github.com/acme/shop, or \
             {UNASSIGNED_LABEL:?} for rows stored before projects existed"
        ));
    }
    if name.chars().count() > MAX_PROJECT_CHARS {
        return Err(format!(
            "the project name is longer than {MAX_PROJECT_CHARS} characters"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("the project name contains a control character".into());
    }
    Ok(name.to_owned())
}

/// A project name as people see it: [`UNASSIGNED_LABEL`] for [`UNASSIGNED`].
pub fn label(name: &str) -> &str {
    if name == UNASSIGNED {
        UNASSIGNED_LABEL
    } else {
        name
    }
}

/// The innermost folder at or above `dir` holding `.git`, and its git folder (`.git` itself,
/// or where a `.git` file's `gitdir:` line points).
fn enclosing_repository(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    for root in dir.ancestors() {
        let dot_git = root.join(".git");
        let Ok(meta) = fs::metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return Some((root.to_path_buf(), dot_git));
        }
        let text = fs::read_to_string(&dot_git).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        return Some((root.to_path_buf(), root.join(target)));
    }
    None
}

/// The `url` of `[remote "origin"]` in the repository's config (a worktree's or submodule's
/// git folder names the shared one in `commondir`).
fn origin_url(git_dir: &Path) -> Option<String> {
    let common = match fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => git_dir.join(rel.trim()),
        Err(_) => git_dir.to_path_buf(),
    };
    let config = fs::read_to_string(common.join("config")).ok()?;
    origin_in_config(&config)
}

/// The first `url` in section `[remote "origin"]` of git config text. Section names compare
/// case-insensitively, subsection names exactly, keys case-insensitively (git's rules);
/// a value in double quotes loses them.
fn origin_in_config(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.split(']').next().unwrap_or_default().trim();
            in_origin = match header.split_once(char::is_whitespace) {
                Some((section, sub)) => {
                    section.eq_ignore_ascii_case("remote") && sub.trim() == "\"origin\""
                }
                None => false,
            };
            continue;
        }
        if !in_origin {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("url") {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            return (!value.is_empty()).then(|| value.to_owned());
        }
    }
    None
}

/// A git remote URL as a project name: `HOST/PATH` with the scheme, user, password and port
/// dropped, the host lowercased, the path's trailing `/` and `.git` dropped. Handles
/// `scheme://[user[:password]@]host[:port]/path` and scp-like `[user@]host:path`; a local
/// path (`/srv/git/shop.git`, `file:///srv/git/shop.git`) keeps its path without `.git`.
/// `None` for an empty result.
pub fn normalise_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((_, rest)) = url.split_once("://") {
        match rest.split_once('/') {
            // `file:///srv/git/shop.git`: no host, an absolute path.
            Some(("", _)) => ("", rest),
            Some((authority, path)) => {
                let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                let host = match host.rsplit_once(':') {
                    Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
                    _ => host,
                };
                (host, path)
            }
            None => (rest, ""),
        }
    } else if let Some((before, path)) = url.split_once(':').filter(|(b, _)| {
        // scp-like syntax: no slash before the first colon (git's rule), not a Windows drive.
        !b.contains('/') && b.len() > 1
    }) {
        let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
        (host, path)
    } else {
        ("", url)
    };
    let path = path.trim_end_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    let name = if host.is_empty() {
        path.to_owned()
    } else {
        let path = path.trim_start_matches('/');
        format!("{}/{}", host.to_ascii_lowercase(), path)
    };
    let name = name.trim_end_matches('/').to_owned();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_of_one_remote_are_one_project() {
        for url in [
            "git@github.com:acme/shop.git",
            "git@github.com:acme/shop",
            "https://github.com/acme/shop",
            "https://github.com/acme/shop.git",
            "https://github.com/acme/shop/",
            "https://user:s3cret@GitHub.com:443/acme/shop.git",
            "ssh://git@github.com:22/acme/shop.git",
            "ssh://git@GITHUB.COM/acme/shop",
            "git://github.com/acme/shop.git",
            "  github.com:acme/shop.git\n",
        ] {
            assert_eq!(
                normalise_remote(url).as_deref(),
                Some("github.com/acme/shop"),
                "{url}"
            );
        }
    }

    #[test]
    fn other_remotes_stay_apart_and_local_paths_keep_their_path() {
        assert_eq!(
            normalise_remote("git@gitlab.example.com:group/sub/shop.git").as_deref(),
            Some("gitlab.example.com/group/sub/shop")
        );
        assert_ne!(
            normalise_remote("git@github.com:acme/shop.git"),
            normalise_remote("git@github.com:acme/shop-api.git")
        );
        assert_eq!(
            normalise_remote("/srv/git/shop.git").as_deref(),
            Some("/srv/git/shop")
        );
        assert_eq!(
            normalise_remote("file:///srv/git/shop.git").as_deref(),
            Some("/srv/git/shop")
        );
        assert_eq!(normalise_remote(""), None);
        assert_eq!(normalise_remote(".git"), None);
    }

    #[test]
    fn the_origin_url_is_read_from_its_section_only() {
        let config = "[core]\n\turl = nope\n[remote \"upstream\"]\n\turl = git@x:y/z.git\n\
                      [Remote \"origin\"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                      \tURL = \"git@github.com:acme/shop.git\"\n";
        assert_eq!(
            origin_in_config(config).as_deref(),
            Some("git@github.com:acme/shop.git")
        );
        assert_eq!(origin_in_config("[remote \"Origin\"]\nurl = a:b\n"), None);
        assert_eq!(origin_in_config(""), None);
    }

    #[test]
    fn detection_walks_up_to_the_repository_and_follows_a_gitdir_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        // No repository: the working directory.
        let plain = Project::detect(&root);
        assert_eq!(plain.source, ProjectSource::WorkingDirectory);
        assert_eq!(plain.name, root.display().to_string());
        // A repository without origin: its root, also from a subfolder.
        let repo = root.join("shop");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(repo.join("src/deep")).unwrap();
        fs::write(repo.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        let p = Project::detect(&repo.join("src/deep"));
        assert_eq!(p.source, ProjectSource::RepositoryRoot);
        assert_eq!(p.name, repo.display().to_string());
        // With origin: the normalised remote.
        fs::write(
            repo.join(".git/config"),
            "[remote \"origin\"]\n\turl = git@github.com:acme/shop.git\n",
        )
        .unwrap();
        assert_eq!(
            Project::detect(&repo.join("src")).name,
            "github.com/acme/shop"
        );
        // A worktree elsewhere: `.git` is a file naming its git folder, whose commondir is
        // the main repository's.
        let wt_git = repo.join(".git/worktrees/feature");
        fs::create_dir_all(&wt_git).unwrap();
        fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = root.join("feature");
        fs::create_dir_all(&wt).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        let p = Project::detect(&wt);
        assert_eq!(p.name, "github.com/acme/shop");
        assert_eq!(p.source, ProjectSource::Remote(wt.clone()));
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(check_name("  acme/shop ").unwrap(), "acme/shop");
        assert_eq!(check_name(UNASSIGNED_LABEL).unwrap(), UNASSIGNED);
        assert!(check_name("  ").unwrap_err().contains("empty"));
        assert!(check_name("a\nb").unwrap_err().contains("control"));
        assert!(check_name(&"x".repeat(MAX_PROJECT_CHARS + 1)).is_err());
        assert_eq!(label(UNASSIGNED), UNASSIGNED_LABEL);
        assert_eq!(label("a"), "a");
    }
}
