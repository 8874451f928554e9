//! The state machine side of the controller quorum: applies committed entries to the
//! replicated state (the metadata image in KRaft) and publishes each new state on a watch,
//! and keeps the snapshot that lets start-up replay only the log tail (KIP-630 snapshots).
use std::collections::VecDeque;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, OptionalSend, RaftSnapshotBuilder, Snapshot,
    SnapshotMeta, StorageIOError,
};
use parking_lot::Mutex;
use tokio::sync::watch;

use super::types::{
    write_durably_off_runtime, Entry, LogId, SnapshotFile, StorageError, StoredMembership,
    TypeConfig,
};
use crate::controller::quorum::{NodeId, ReplicatedState};

const SNAPSHOT_FILE: &str = "snapshot.json";

type Meta = SnapshotMeta<NodeId, openraft::BasicNode>;

struct SmInner<S: ReplicatedState> {
    dir: PathBuf,
    last_applied: Option<LogId>,
    last_membership: StoredMembership,
    state: Arc<S>,
    /// The latest snapshot: its meta and the serialized [`SnapshotFile`].
    snapshot: Option<(Meta, Arc<Vec<u8>>)>,
    /// The last entries applied, contiguous and ending at `last_applied` (raft's blank and
    /// membership entries as empty record lists), from which observers are sent deltas.
    recent: VecDeque<(u64, Vec<S::Record>)>,
}

/// Entries kept for observers; one further behind gets the whole state.
const RECENT_ENTRIES_MAX: usize = 4096;

/// What an observer that has applied everything up to some index needs next.
pub enum Catchup<S: ReplicatedState> {
    /// Nothing applied after that index yet.
    UpToDate,
    /// The entries after that index, in order.
    Entries(Vec<(u64, Vec<S::Record>)>),
    /// Too far behind (or ahead of a state it cannot have): the whole state at `index`.
    State { index: u64, state: Arc<S> },
}

/// The state machine; clones share it (a clone is also the snapshot builder).
pub struct StateMachineStore<S: ReplicatedState> {
    inner: Arc<Mutex<SmInner<S>>>,
    tx: Arc<watch::Sender<(u64, Arc<S>)>>,
}

impl<S: ReplicatedState> Clone for StateMachineStore<S> {
    fn clone(&self) -> Self {
        StateMachineStore {
            inner: self.inner.clone(),
            tx: self.tx.clone(),
        }
    }
}

fn sm_err(verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError {
    StorageIOError::new(
        ErrorSubject::StateMachine,
        verb,
        openraft::AnyError::error(e.to_string()),
    )
    .into()
}

fn applied_index(last_applied: Option<LogId>) -> u64 {
    last_applied.map_or(0, |l| l.index)
}

fn snapshot_id(last_applied: Option<LogId>) -> String {
    match last_applied {
        Some(l) => format!("{}-{}-{}", l.leader_id.term, l.leader_id.node_id, l.index),
        None => "empty".to_string(),
    }
}

impl<S: ReplicatedState> StateMachineStore<S> {
    /// Loads the snapshot in `dir` if there is one; the log tail after it is re-applied by
    /// openraft.
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut inner = SmInner {
            dir: dir.to_path_buf(),
            last_applied: None,
            last_membership: StoredMembership::default(),
            state: Arc::new(S::default()),
            snapshot: None,
            recent: VecDeque::new(),
        };
        match std::fs::read(dir.join(SNAPSHOT_FILE)) {
            Ok(bytes) => {
                // Written by rename, so a bad file is real corruption: refuse to start rather
                // than come up with an empty image.
                let file: SnapshotFile<S> = serde_json::from_slice(&bytes)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                let meta = Meta {
                    last_log_id: file.last_applied,
                    last_membership: file.last_membership.clone(),
                    snapshot_id: file.snapshot_id.clone(),
                };
                inner.last_applied = file.last_applied;
                inner.last_membership = file.last_membership;
                inner.state = Arc::new(file.state);
                inner.snapshot = Some((meta, Arc::new(bytes)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let (tx, _) = watch::channel((applied_index(inner.last_applied), inner.state.clone()));
        Ok(StateMachineStore {
            inner: Arc::new(Mutex::new(inner)),
            tx: Arc::new(tx),
        })
    }

    pub fn subscribe(&self) -> watch::Receiver<(u64, Arc<S>)> {
        self.tx.subscribe()
    }

    /// At most `max_entries` of what follows `after_index`, for an observer
    /// (see [`super::observer`]).
    pub fn catchup(&self, after_index: u64, max_entries: usize) -> Catchup<S> {
        let inner = self.inner.lock();
        let applied = applied_index(inner.last_applied);
        // An observer ahead of this leader's applied index has seen entries this leader has
        // committed but not applied yet: it waits for them rather than go back.
        if after_index >= applied {
            return Catchup::UpToDate;
        }
        let first_kept = inner.recent.front().map(|(index, _)| *index);
        match first_kept {
            Some(first) if first <= after_index + 1 => {
                let skip = (after_index + 1 - first) as usize;
                Catchup::Entries(
                    inner
                        .recent
                        .iter()
                        .skip(skip)
                        .take(max_entries.max(1))
                        .cloned()
                        .collect(),
                )
            }
            _ => Catchup::State {
                index: applied,
                state: inner.state.clone(),
            },
        }
    }

    fn publish(&self, inner: &SmInner<S>) {
        self.tx
            .send_replace((applied_index(inner.last_applied), inner.state.clone()));
    }
}

impl<S: ReplicatedState> RaftSnapshotBuilder<TypeConfig<S>> for StateMachineStore<S> {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig<S>>, StorageError> {
        let (file_bytes, meta, dir) = {
            let inner = self.inner.lock();
            let file = SnapshotFile::<S> {
                last_applied: inner.last_applied,
                last_membership: inner.last_membership.clone(),
                snapshot_id: snapshot_id(inner.last_applied),
                state: (*inner.state).clone(),
            };
            let bytes = serde_json::to_vec(&file).map_err(|e| sm_err(ErrorVerb::Write, e))?;
            let meta = Meta {
                last_log_id: file.last_applied,
                last_membership: file.last_membership,
                snapshot_id: file.snapshot_id,
            };
            (bytes, meta, inner.dir.clone())
        };
        let file_bytes = Arc::new(file_bytes);
        write_durably_off_runtime(dir.join(SNAPSHOT_FILE), file_bytes.clone())
            .await
            .map_err(|e| sm_err(ErrorVerb::Write, e))?;
        let snapshot = Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(file_bytes.to_vec())),
        };
        self.inner.lock().snapshot = Some((meta, file_bytes));
        Ok(snapshot)
    }
}

impl<S: ReplicatedState> RaftStateMachine<TypeConfig<S>> for StateMachineStore<S> {
    type SnapshotBuilder = StateMachineStore<S>;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let inner = self.inner.lock();
        Ok((inner.last_applied, inner.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry<S>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut replies = Vec::new();
        let mut inner = self.inner.lock();
        for entry in entries {
            inner.last_applied = Some(entry.log_id);
            let applied = match entry.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(records) => {
                    let state = Arc::make_mut(&mut inner.state);
                    for record in &records {
                        state.apply_at(entry.log_id.index, record);
                    }
                    records
                }
                EntryPayload::Membership(m) => {
                    inner.last_membership = StoredMembership::new(Some(entry.log_id), m);
                    Vec::new()
                }
            };
            if inner.recent.len() == RECENT_ENTRIES_MAX {
                inner.recent.pop_front();
            }
            inner.recent.push_back((entry.log_id.index, applied));
            replies.push(());
        }
        self.publish(&inner);
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let bytes = snapshot.into_inner();
        let file: SnapshotFile<S> =
            serde_json::from_slice(&bytes).map_err(|e| sm_err(ErrorVerb::Read, e))?;
        let dir = self.inner.lock().dir.clone();
        let bytes = Arc::new(bytes);
        write_durably_off_runtime(dir.join(SNAPSHOT_FILE), bytes.clone())
            .await
            .map_err(|e| sm_err(ErrorVerb::Write, e))?;
        let mut inner = self.inner.lock();
        inner.last_applied = meta.last_log_id;
        inner.last_membership = meta.last_membership.clone();
        inner.state = Arc::new(file.state);
        inner.snapshot = Some((meta.clone(), bytes));
        inner.recent.clear();
        self.publish(&inner);
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig<S>>>, StorageError> {
        let inner = self.inner.lock();
        Ok(inner.snapshot.as_ref().map(|(meta, bytes)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(bytes.as_ref().clone())),
        }))
    }
}
