//! The token file on disk: an exclusive lock around each read-modify-write (an advisory
//! `flock` on `FILE.lock` beside it, so that other processes wait too), reads that never
//! follow a symbolic link, and replacement through a temporary file this process created
//! (random name, `O_EXCL`, mode 0600), renamed over the file. A symbolic link planted as the
//! token file or its lock file is refused: nothing is read, written or created through it.
//! The lock is Unix only: elsewhere writers are not serialised.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

use crate::AuthError;

/// The longest a writer waits for another one (another process refreshing a token holds the
/// lock for its token request, which has a 30-second timeout).
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(60);

/// How often a waiting writer tries again.
#[cfg(unix)]
const POLL: Duration = Duration::from_millis(20);

/// An exclusive hold on the token file, released when dropped.
#[derive(Debug)]
pub(crate) struct FileLock {
    #[cfg(unix)]
    _held: nix::fcntl::Flock<std::fs::File>,
}

/// The lock file of the token file at `path`: `PATH.lock`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn store_error(path: &Path, e: &std::io::Error) -> AuthError {
    AuthError::Store(format!("{}: {e}", path.display()))
}

/// Creates the folder of the token file, mode 0700 for what is created.
pub(crate) fn create_dir(path: &Path) -> Result<(), AuthError> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| store_error(dir, &e))
}

/// The error of an open of `path` that failed with `e`: a symbolic link there (`ELOOP` from
/// `O_NOFOLLOW`) is named as such.
#[cfg(unix)]
fn open_error(path: &Path, e: &std::io::Error) -> AuthError {
    if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) {
        symlink_refused(path)
    } else {
        store_error(path, e)
    }
}

fn symlink_refused(path: &Path) -> AuthError {
    AuthError::Store(format!(
        "{} is a symbolic link; refusing to follow it (remove it, or point the store at the \
         file itself)",
        path.display()
    ))
}

/// Opens (creating it, mode 0600) the lock file; a symlink there is refused.
#[cfg(unix)]
fn open_lock(path: &Path) -> Result<std::fs::File, AuthError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    create_dir(path)?;
    let lock = lock_path(path);
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&lock)
        .map_err(|e| open_error(&lock, &e))
}

/// The token file's bytes, `None` if there is none; a symbolic link there is refused (its
/// target is not read).
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, AuthError> {
    use std::io::Read as _;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        nix::fcntl::OFlag::O_NOFOLLOW.bits(),
    );
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(symlink_refused(path));
    }
    let mut file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        #[cfg(unix)]
        Err(e) => return Err(open_error(path, &e)),
        #[cfg(not(unix))]
        Err(e) => return Err(store_error(path, &e)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| store_error(path, &e))?;
    Ok(Some(bytes))
}

/// One attempt at the lock: `Ok(Err(file))` when another holder has it.
#[cfg(unix)]
fn try_lock(
    path: &Path,
    file: std::fs::File,
) -> Result<Result<FileLock, std::fs::File>, AuthError> {
    use nix::fcntl::{Flock, FlockArg};
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(held) => Ok(Ok(FileLock { _held: held })),
        Err((file, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR)) => Ok(Err(file)),
        Err((_, e)) => Err(AuthError::Store(format!(
            "locking {}: {e}",
            lock_path(path).display()
        ))),
    }
}

#[cfg(unix)]
fn busy(path: &Path) -> AuthError {
    AuthError::Store(format!(
        "{} is locked by another process (waited {} s)",
        path.display(),
        LOCK_WAIT.as_secs()
    ))
}

/// Takes the lock, waiting up to [`LOCK_WAIT`] (blocking the thread).
pub(crate) fn lock_blocking(path: &Path) -> Result<FileLock, AuthError> {
    #[cfg(unix)]
    {
        let deadline = Instant::now() + LOCK_WAIT;
        let mut file = open_lock(path)?;
        loop {
            file = match try_lock(path, file)? {
                Ok(held) => return Ok(held),
                Err(file) => file,
            };
            if Instant::now() >= deadline {
                return Err(busy(path));
            }
            std::thread::sleep(POLL);
        }
    }
    #[cfg(not(unix))]
    {
        // No advisory lock here: writers are not serialised across processes.
        let _ = path;
        Ok(FileLock {})
    }
}

/// Takes the lock, waiting up to [`LOCK_WAIT`] without blocking the runtime.
pub(crate) async fn lock(path: &Path) -> Result<FileLock, AuthError> {
    #[cfg(unix)]
    {
        let deadline = Instant::now() + LOCK_WAIT;
        let mut file = open_lock(path)?;
        loop {
            file = match try_lock(path, file)? {
                Ok(held) => return Ok(held),
                Err(file) => file,
            };
            if Instant::now() >= deadline {
                return Err(busy(path));
            }
            tokio::time::sleep(POLL).await;
        }
    }
    #[cfg(not(unix))]
    {
        lock_blocking(path)
    }
}

/// Replaces the file at `path` with `bytes`: written to a new temporary file beside it
/// (never one already there, never through a symlink), synced, then renamed over it.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> Result<(), AuthError> {
    create_dir(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // tempfile creates it with O_EXCL and, on Unix, mode 0600.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| store_error(dir, &e))?;
    tmp.write_all(bytes)
        .map_err(|e| store_error(tmp.path(), &e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| store_error(tmp.path(), &e))?;
    tmp.persist(path).map_err(|e| store_error(path, &e.error))?;
    // The rename itself reaches the disk with the folder (best effort: not every file
    // system can sync a folder).
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
