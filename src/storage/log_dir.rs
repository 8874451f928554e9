//! One log dir's health: online until an I/O error (ENOSPC, EIO, ...) on anything written or
//! read in it, then offline for the rest of the process (Kafka's `LogDirFailureChannel` and
//! `maybeHandleIOException`; KIP-858 names the dir by its `directory_id` from
//! `meta.properties`). Every partition log of the dir shares one `LogDirState`, so the first
//! failing operation takes the whole dir offline and later operations in it fail fast with
//! [`StorageError::LogDirOffline`] instead of touching a disk that is known to be bad.
//!
//! Faults are injectable per dir ([`LogDirState::inject_io_failure`]): tests trip a dir instead
//! of filling or unmounting a real disk. Nothing here knows the network; the replica manager
//! reacts to an offline dir (drops its partitions, tells the controller).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::error::{Result, StorageError};
use crate::protocol::codec::Uuid;

#[derive(Debug)]
pub struct LogDirState {
    path: PathBuf,
    directory_id: Uuid,
    offline: AtomicBool,
    /// Set by tests: every later I/O in this dir fails as a full disk would.
    injected_failure: AtomicBool,
    /// Why the dir went offline (the first failure), for logs and diagnostics.
    reason: Mutex<Option<String>>,
}

impl LogDirState {
    pub fn new(path: PathBuf, directory_id: Uuid) -> Self {
        LogDirState {
            path,
            directory_id,
            offline: AtomicBool::new(false),
            injected_failure: AtomicBool::new(false),
            reason: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The dir's `directory.id` from `meta.properties` (zero for a log opened on its own).
    pub fn directory_id(&self) -> Uuid {
        self.directory_id
    }

    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
    }

    /// Why the dir went offline, if it did.
    pub fn offline_reason(&self) -> Option<String> {
        self.reason.lock().clone()
    }

    /// The fault hook: from now on every I/O in this dir fails with ENOSPC, as on a full disk.
    /// The first operation to meet it takes the dir offline.
    pub fn inject_io_failure(&self) {
        self.injected_failure.store(true, Ordering::Release);
    }

    /// Takes the dir offline; true if it was online. Kafka logs the first error and never
    /// brings a dir back while the process lives.
    pub fn mark_offline(&self, reason: &str) -> bool {
        let mut r = self.reason.lock();
        if self.offline.swap(true, Ordering::AcqRel) {
            return false;
        }
        *r = Some(reason.to_string());
        tracing::error!(log_dir = %self.path.display(), reason, "log dir is offline");
        true
    }

    /// Refuses any operation in an offline dir, and meets the injected fault.
    pub(crate) fn check(&self) -> Result<()> {
        if self.is_offline() {
            return Err(self.offline_error());
        }
        if self.injected_failure.load(Ordering::Acquire) {
            let e = StorageError::Io {
                op: "write (injected failure)",
                path: self.path.clone(),
                source: std::io::Error::from_raw_os_error(libc::ENOSPC),
            };
            self.mark_offline(&e.to_string());
            return Err(e);
        }
        Ok(())
    }

    /// Runs one storage operation of this dir: refused if the dir is offline, and an I/O error
    /// it returns takes the dir offline (other errors, bad input, leave it alone).
    pub(crate) fn guard<T>(&self, op: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check()?;
        let result = op();
        if let Err(e @ StorageError::Io { .. }) = &result {
            self.mark_offline(&e.to_string());
        }
        result
    }

    /// Removes `.deleted` files of a log in this dir (the cleaner's replaced segments, the
    /// delayed deletes of retention). A failure other than the file being gone takes the dir
    /// offline, as Kafka's `LocalLog.deleteSegmentFiles` does, without undoing the operation
    /// that renamed them: their data is no longer part of the log.
    pub(crate) fn delete_files(&self, paths: Vec<PathBuf>) {
        for path in paths {
            match std::fs::remove_file(&path) {
                Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                    let e = StorageError::Io {
                        op: "delete file",
                        path,
                        source,
                    };
                    self.mark_offline(&e.to_string());
                }
                _ => {}
            }
        }
    }

    pub(crate) fn offline_error(&self) -> StorageError {
        StorageError::LogDirOffline {
            log_dir: self.path.clone(),
        }
    }
}
