//! The openraft type configuration for a quorum replicating a [`ReplicatedState`]: an entry
//! carries a batch of the state's records (one KRaft record batch), node ids are Kafka node
//! ids, and a snapshot is the serialized state.
use std::fmt;
use std::io::Cursor;
use std::marker::PhantomData;

use openraft::raft::responder::OneshotResponder;
use openraft::{BasicNode, RaftTypeConfig, TokioRuntime};

use crate::controller::quorum::{NodeId, ReplicatedState};

/// Type-level only; `fn() -> S` keeps it `Send + Sync + Copy` whatever `S` is.
pub struct TypeConfig<S>(PhantomData<fn() -> S>);

impl<S> Clone for TypeConfig<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for TypeConfig<S> {}
impl<S> Default for TypeConfig<S> {
    fn default() -> Self {
        TypeConfig(PhantomData)
    }
}
impl<S> fmt::Debug for TypeConfig<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TypeConfig")
    }
}
impl<S> PartialEq for TypeConfig<S> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<S> Eq for TypeConfig<S> {}
impl<S> PartialOrd for TypeConfig<S> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<S> Ord for TypeConfig<S> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<S: ReplicatedState> RaftTypeConfig for TypeConfig<S> {
    type D = Vec<S::Record>;
    type R = ();
    type NodeId = NodeId;
    type Node = BasicNode;
    type Entry = openraft::Entry<Self>;
    type SnapshotData = Cursor<Vec<u8>>;
    type AsyncRuntime = TokioRuntime;
    type Responder = OneshotResponder<Self>;
}

pub type Entry<S> = openraft::Entry<TypeConfig<S>>;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type StoredMembership = openraft::StoredMembership<NodeId, BasicNode>;
pub type StorageError = openraft::StorageError<NodeId>;

/// The snapshot file and the snapshot sent to a lagging follower: the state and the log
/// position it reflects.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(bound = "")]
pub struct SnapshotFile<S: ReplicatedState> {
    pub last_applied: Option<LogId>,
    pub last_membership: StoredMembership,
    pub snapshot_id: String,
    pub state: S,
}

/// Writes `bytes` to `path` atomically and durably: temp file, fsync, rename, fsync dir.
pub fn write_durably(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// [`write_durably`] on tokio's blocking pool, so that its fsyncs do not hold a runtime thread.
pub async fn write_durably_off_runtime(
    path: std::path::PathBuf,
    bytes: std::sync::Arc<Vec<u8>>,
) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || write_durably(&path, &bytes))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
}
