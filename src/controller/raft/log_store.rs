//! The durable raft log of the controller quorum (KRaft's `__cluster_metadata-0` log): an
//! append-only file of entries, each `[u32 length][u32 CRC-32C][serde_json entry]`, fsynced
//! before an append is acknowledged; the vote and the purge point each in their own file,
//! replaced atomically. At start a torn tail (short frame, bad CRC, undecodable entry, index
//! gap) is truncated: an unacknowledged append may be lost, an acknowledged one never.
//! Writes and fsyncs run on tokio's blocking pool, off the runtime threads.
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, OptionalSend, RaftLogReader, StorageIOError};
use parking_lot::Mutex;

use super::types::{write_durably, Entry, LogId, StorageError, TypeConfig, Vote};
use crate::controller::quorum::ReplicatedState;

const LOG_FILE: &str = "raft.log";
const VOTE_FILE: &str = "vote.json";
const PURGED_FILE: &str = "purged.json";
const COMMITTED_FILE: &str = "committed.json";
const FRAME_HEADER_BYTES: usize = 8;
/// One entry is a batch of metadata records; anything larger is a corrupt length.
const MAX_ENTRY_BYTES: usize = 64 * 1024 * 1024;

struct LogInner<S: ReplicatedState> {
    dir: PathBuf,
    file: File,
    /// index -> (file offset of its frame, entry)
    entries: BTreeMap<u64, (u64, Entry<S>)>,
    file_len: u64,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
    committed: Option<LogId>,
}

/// The log store; clones share the same log (a clone is also the log reader).
pub struct LogStore<S: ReplicatedState> {
    inner: Arc<Mutex<LogInner<S>>>,
}

impl<S: ReplicatedState> Clone for LogStore<S> {
    fn clone(&self) -> Self {
        LogStore {
            inner: self.inner.clone(),
        }
    }
}

fn io_err(subject: ErrorSubject<u64>, verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError {
    StorageIOError::new(subject, verb, openraft::AnyError::error(e.to_string())).into()
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Appends one frame of the log file: length, CRC-32C of the entry, the entry as JSON.
pub fn encode_frame<S: ReplicatedState>(
    entry: &Entry<S>,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    let json = serde_json::to_vec(entry)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&json).to_be_bytes());
    out.extend_from_slice(&json);
    Ok(())
}

/// Decodes frames from `buf`; returns the entries with their offsets and the length of the
/// valid prefix (everything after it is a torn or corrupt tail). Public for the fuzz target
/// `metadata_records`: a log file is read back at start, whatever a crash left in it.
pub fn decode_frames<S: ReplicatedState>(
    buf: &[u8],
    last_purged: Option<LogId>,
) -> (BTreeMap<u64, (u64, Entry<S>)>, u64) {
    let mut entries = BTreeMap::new();
    let mut pos = 0usize;
    let mut prev_index: Option<u64> = None;
    while buf.len() - pos >= FRAME_HEADER_BYTES {
        let len = u32::from_be_bytes([buf[pos], buf[pos + 1], buf[pos + 2], buf[pos + 3]]) as usize;
        let crc = u32::from_be_bytes([buf[pos + 4], buf[pos + 5], buf[pos + 6], buf[pos + 7]]);
        if len > MAX_ENTRY_BYTES || buf.len() - pos - FRAME_HEADER_BYTES < len {
            break;
        }
        let body = &buf[pos + FRAME_HEADER_BYTES..pos + FRAME_HEADER_BYTES + len];
        if crc32c::crc32c(body) != crc {
            break;
        }
        let Ok(entry) = serde_json::from_slice::<Entry<S>>(body) else {
            break;
        };
        let index = entry.log_id.index;
        if let Some(prev) = prev_index {
            if index != prev + 1 {
                break;
            }
        }
        prev_index = Some(index);
        // Entries up to the purge point may survive a crash between the purge record and the
        // rewrite of the file; they are dropped, not replayed.
        if last_purged.map_or(true, |p| index > p.index) {
            entries.insert(index, (pos as u64, entry));
        }
        pos += FRAME_HEADER_BYTES + len;
    }
    (entries, pos as u64)
}

impl<S: ReplicatedState> LogStore<S> {
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let vote: Option<Vote> = read_json(&dir.join(VOTE_FILE))?;
        let last_purged: Option<LogId> = read_json(&dir.join(PURGED_FILE))?;
        // Written without fsync (a hint, see `save_committed`): after a power cut it may be
        // empty or torn, which means no hint, not a broken log.
        let committed: Option<LogId> = match read_json(&dir.join(COMMITTED_FILE)) {
            Ok(committed) => committed,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                tracing::warn!(error = %e, "unreadable committed.json (not fsynced); ignoring the hint");
                None
            }
            Err(e) => return Err(e),
        };
        let path = dir.join(LOG_FILE);
        let mut buf = Vec::new();
        match File::open(&path) {
            Ok(mut f) => {
                f.read_to_end(&mut buf)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let (entries, valid_len) = decode_frames::<S>(&buf, last_purged);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        if valid_len < buf.len() as u64 {
            tracing::warn!(
                dir = %dir.display(),
                valid_len,
                file_len = buf.len(),
                "metadata log has a torn tail; truncating"
            );
            file.set_len(valid_len)?;
            file.sync_all()?;
        }
        Ok(LogStore {
            inner: Arc::new(Mutex::new(LogInner {
                dir: dir.to_path_buf(),
                file,
                entries,
                file_len: valid_len,
                last_purged,
                vote,
                committed,
            })),
        })
    }

    /// Number of entries held (after the purge point); for tests and metrics.
    pub fn entry_count(&self) -> usize {
        self.inner.lock().entries.len()
    }
}

impl<S: ReplicatedState> LogInner<S> {
    fn append(&mut self, entries: Vec<Entry<S>>) -> std::io::Result<()> {
        let mut buf = Vec::new();
        let mut offsets = Vec::with_capacity(entries.len());
        for entry in &entries {
            offsets.push(self.file_len + buf.len() as u64);
            encode_frame(entry, &mut buf)?;
        }
        self.file.write_all(&buf)?;
        self.file.sync_data()?;
        self.file_len += buf.len() as u64;
        for (offset, entry) in offsets.into_iter().zip(entries) {
            self.entries.insert(entry.log_id.index, (offset, entry));
        }
        Ok(())
    }

    fn truncate_from(&mut self, index: u64) -> std::io::Result<()> {
        let Some((&first, &(offset, _))) = self.entries.range(index..).next() else {
            return Ok(());
        };
        self.entries.split_off(&first);
        self.file.set_len(offset)?;
        self.file.sync_all()?;
        self.file_len = offset;
        Ok(())
    }

    fn purge_upto(&mut self, log_id: LogId) -> std::io::Result<()> {
        // The purge point goes first: after a crash the old frames are skipped at load.
        write_durably(&self.dir.join(PURGED_FILE), &json_bytes(&log_id)?)?;
        self.last_purged = Some(log_id);
        self.entries = self.entries.split_off(&(log_id.index + 1));
        // Rewrite the file with the remaining entries so it does not grow forever.
        let mut buf = Vec::new();
        let mut kept = BTreeMap::new();
        for (index, (_, entry)) in std::mem::take(&mut self.entries) {
            let offset = buf.len() as u64;
            encode_frame(&entry, &mut buf)?;
            kept.insert(index, (offset, entry));
        }
        let path = self.dir.join(LOG_FILE);
        write_durably(&path, &buf)?;
        self.file = OpenOptions::new().create(true).append(true).open(&path)?;
        self.file_len = buf.len() as u64;
        self.entries = kept;
        Ok(())
    }
}

impl<S: ReplicatedState> LogStore<S> {
    /// Runs a write of the log on the blocking pool: an fsync must not hold a runtime thread
    /// (the brokers' request handling shares it). openraft awaits each log write before the
    /// next, so the writes keep their order.
    async fn write<R: Send + 'static>(
        &self,
        op: impl FnOnce(&mut LogInner<S>) -> std::io::Result<R> + Send + 'static,
    ) -> std::io::Result<R> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || op(&mut inner.lock()))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
    }
}

fn json_bytes<T: serde::Serialize>(v: &T) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

impl<S: ReplicatedState> RaftLogReader<TypeConfig<S>> for LogStore<S> {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<S>>, StorageError> {
        let inner = self.inner.lock();
        Ok(inner
            .entries
            .range(range)
            .map(|(_, (_, e))| e.clone())
            .collect())
    }
}

impl<S: ReplicatedState> RaftLogStorage<TypeConfig<S>> for LogStore<S> {
    type LogReader = LogStore<S>;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig<S>>, StorageError> {
        let inner = self.inner.lock();
        let last = inner.entries.values().next_back().map(|(_, e)| e.log_id);
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last.or(inner.last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let vote = *vote;
        let bytes =
            json_bytes(&vote).map_err(|e| io_err(ErrorSubject::Vote, ErrorVerb::Write, e))?;
        self.write(move |inner| {
            write_durably(&inner.dir.join(VOTE_FILE), &bytes)?;
            inner.vote = Some(vote);
            Ok(())
        })
        .await
        .map_err(|e| io_err(ErrorSubject::Vote, ErrorVerb::Write, e))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.inner.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        // Only a hint that lets a restarted node re-apply its committed tail before hearing
        // from a leader; openraft does not require it to be durable, so no fsync.
        if self.inner.lock().committed == committed {
            return Ok(());
        }
        let bytes =
            json_bytes(&committed).map_err(|e| io_err(ErrorSubject::Store, ErrorVerb::Write, e))?;
        self.write(move |inner| {
            std::fs::write(inner.dir.join(COMMITTED_FILE), bytes)?;
            inner.committed = committed;
            Ok(())
        })
        .await
        .map_err(|e| io_err(ErrorSubject::Store, ErrorVerb::Write, e))
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.inner.lock().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig<S>>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry<S>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<S>> = entries.into_iter().collect();
        let result = self.write(move |inner| inner.append(entries)).await;
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let msg = e.to_string();
                callback.log_io_completed(Err(e));
                Err(io_err(ErrorSubject::Logs, ErrorVerb::Write, msg))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.write(move |inner| inner.truncate_from(log_id.index))
            .await
            .map_err(|e| io_err(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.write(move |inner| inner.purge_upto(log_id))
            .await
            .map_err(|e| io_err(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }
}
