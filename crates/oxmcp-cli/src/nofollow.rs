//! Writing files under a folder the user named (`oxmcp skills --out DIR`) without following a
//! symlink found under it: each folder is opened relative to its parent with `O_NOFOLLOW`,
//! and each file is created with `O_EXCL | O_NOFOLLOW` (a plain file already there is
//! removed first), so nothing planted in DIR can redirect a write elsewhere, even when it is
//! planted while the files are being written. DIR itself is followed: it is the user's.

use std::ffi::OsStr;
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use anyhow::{Context, bail};
use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};

/// A folder the files are written under.
#[derive(Debug)]
pub(crate) struct OutDir {
    root: OwnedFd,
    path: std::path::PathBuf,
}

impl OutDir {
    /// Opens (creating it if needed) the folder at `path`.
    pub(crate) fn create(path: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(path)
            .with_context(|| format!("could not create {}", path.display()))?;
        let root = nix::fcntl::open(
            path,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("could not open {}", path.display()))?;
        Ok(Self {
            root,
            path: path.to_owned(),
        })
    }

    /// Writes `bytes` to `rel` (a plain relative path) under the folder, creating the
    /// folders on the way; refuses a symlink at any level.
    pub(crate) fn write(&self, rel: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        let names: Vec<&OsStr> = rel
            .components()
            .map(|c| match c {
                Component::Normal(n) => Ok(n),
                _ => Err(anyhow::anyhow!(
                    "refused to write {rel:?}: not a plain relative path"
                )),
            })
            .collect::<anyhow::Result<_>>()?;
        let Some((file, folders)) = names.split_last() else {
            bail!("refused to write an empty path");
        };
        let mut opened: Option<OwnedFd> = None;
        for (i, name) in folders.iter().enumerate() {
            let shown = self.shown(&folders[..=i]);
            let parent = opened.as_ref().map_or(self.root.as_fd(), AsFd::as_fd);
            let next = open_folder(parent, name).map_err(|e| refusal(parent, name, &shown, e))?;
            opened = Some(next);
        }
        let parent = opened.as_ref().map_or(self.root.as_fd(), AsFd::as_fd);
        let shown = self.shown(&names);
        let fd = create_file(parent, file).map_err(|e| refusal(parent, file, &shown, e))?;
        std::fs::File::from(fd)
            .write_all(bytes)
            .with_context(|| format!("could not write {shown}"))
    }

    fn shown(&self, names: &[&OsStr]) -> String {
        let mut p = self.path.clone();
        p.extend(names);
        p.display().to_string()
    }
}

/// Opens the folder `name` in `parent`, creating it if needed, never through a symlink.
fn open_folder(parent: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    match mkdirat(parent, name, Mode::from_bits_truncate(0o755)) {
        Ok(()) | Err(Errno::EEXIST) => {}
        Err(e) => return Err(e),
    }
    openat(
        parent,
        name,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Creates the file `name` in `parent` (mode 0644 before the umask), never through a
/// symlink; a plain file already there is replaced.
fn create_file(parent: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    let create = || {
        openat(
            parent,
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o644),
        )
    };
    match create() {
        Err(Errno::EEXIST) if kind(parent, name) == Some(SFlag::S_IFREG) => {
            unlinkat(parent, name, UnlinkatFlags::NoRemoveDir)?;
            create()
        }
        other => other,
    }
}

/// What `name` in `parent` is, not following a symlink.
fn kind(parent: BorrowedFd<'_>, name: &OsStr) -> Option<SFlag> {
    let st: FileStat = fstatat(parent, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
    Some(SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT)
}

/// The error for `name` in `parent` (shown as `shown`): a symlink is named as such.
fn refusal(parent: BorrowedFd<'_>, name: &OsStr, shown: &str, e: Errno) -> anyhow::Error {
    match kind(parent, name) {
        Some(SFlag::S_IFLNK) => {
            anyhow::anyhow!("refused to write through {shown}: it is a symbolic link")
        }
        _ => anyhow::anyhow!("could not write {shown}: {e}"),
    }
}
