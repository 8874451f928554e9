//! Small text files Kafka keeps next to the logs, byte-compatible with Kafka's own:
//! offset checkpoints (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
//! `replication-offset-checkpoint`;
//! Kafka's `OffsetCheckpointFile`), the `leader-epoch-checkpoint` (`LeaderEpochCheckpointFile`),
//! `partition.metadata` (`PartitionMetadataFile`), `meta.properties` (`MetaProperties`, v1) and
//! the `.kafka_cleanshutdown` marker. Every write goes to a temp file and is renamed; it is
//! fsynced at once, except the two per-partition files Kafka also makes durable later
//! (`leader-epoch-checkpoint` on assign, KAFKA-15046; `partition.metadata`, flushed with the
//! log): creating a partition must not cost fsyncs, or thousands of partitions take minutes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::protocol::codec::Uuid;

use super::error::{IoContext, Result, StorageError};

pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// High watermarks per partition (Kafka's `ReplicaManager.HighWatermarkFilename`).
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
pub const PARTITION_METADATA: &str = "partition.metadata";
pub const META_PROPERTIES: &str = "meta.properties";
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";

/// Writes `contents` to `path` atomically: temp file, fsync, rename, fsync of the directory.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    write_replacing(path, contents, true)
}

/// As [`write_atomic`] without the fsyncs: readers see the old or the new contents, never a
/// mix, but a crash may lose the file (or leave it empty) until [`sync_file`] ran.
pub fn write_atomic_deferred(path: &Path, contents: &[u8]) -> Result<()> {
    write_replacing(path, contents, false)
}

fn write_replacing(path: &Path, contents: &[u8], durable: bool) -> Result<()> {
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    {
        let mut f = std::fs::File::create(&tmp).ctx("create temp file", &tmp)?;
        f.write_all(contents).ctx("write temp file", &tmp)?;
        if durable {
            f.sync_all().ctx("fsync temp file", &tmp)?;
        }
    }
    std::fs::rename(&tmp, path).ctx("rename temp file", path)?;
    if durable {
        sync_dir_of(path);
    }
    Ok(())
}

/// Makes a file written by [`write_atomic_deferred`] durable: the file, then its directory.
pub fn sync_file(path: &Path) -> Result<()> {
    match std::fs::File::open(path) {
        Ok(f) => f.sync_all().ctx("fsync", path)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).ctx("open for fsync", path),
    }
    sync_dir_of(path);
    Ok(())
}

fn sync_dir_of(path: &Path) {
    if let Some(dir) = path.parent() {
        // Directory fsync makes the rename durable; some filesystems refuse it, which is harmless.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StorageError::Io {
            op: "read",
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StorageError {
    StorageError::CorruptFile {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Parses the `0\n<count>\n<entry>\n...` frame shared by Kafka's checkpoint files.
fn parse_versioned_lines<'a>(path: &Path, text: &'a str) -> Result<Vec<&'a str>> {
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("0") => {}
        other => return Err(corrupt(path, format!("unsupported version {other:?}"))),
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| corrupt(path, "missing entry count"))?;
    let entries: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    if entries.len() != count {
        return Err(corrupt(
            path,
            format!("expected {count} entries, found {}", entries.len()),
        ));
    }
    Ok(entries)
}

/// Offsets per (topic, partition).
pub type OffsetMap = BTreeMap<(String, i32), i64>;

pub fn read_offset_checkpoint(path: &Path) -> Result<OffsetMap> {
    let Some(text) = read_optional(path)? else {
        return Ok(OffsetMap::new());
    };
    let mut out = OffsetMap::new();
    for line in parse_versioned_lines(path, &text)? {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [topic, partition, offset] = parts[..] else {
            return Err(corrupt(path, format!("malformed line {line:?}")));
        };
        let partition: i32 = partition
            .parse()
            .map_err(|_| corrupt(path, "bad partition"))?;
        let offset: i64 = offset.parse().map_err(|_| corrupt(path, "bad offset"))?;
        out.insert((topic.to_string(), partition), offset);
    }
    Ok(out)
}

pub fn write_offset_checkpoint(path: &Path, offsets: &OffsetMap) -> Result<()> {
    let mut s = format!("0\n{}\n", offsets.len());
    for ((topic, partition), offset) in offsets {
        s.push_str(&format!("{topic} {partition} {offset}\n"));
    }
    write_atomic(path, s.as_bytes())
}

/// (epoch, start_offset) entries in order.
pub fn read_leader_epoch_checkpoint(path: &Path) -> Result<Vec<(i32, i64)>> {
    let Some(text) = read_optional(path)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for line in parse_versioned_lines(path, &text)? {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [epoch, offset] = parts[..] else {
            return Err(corrupt(path, format!("malformed line {line:?}")));
        };
        let epoch: i32 = epoch.parse().map_err(|_| corrupt(path, "bad epoch"))?;
        let offset: i64 = offset.parse().map_err(|_| corrupt(path, "bad offset"))?;
        out.push((epoch, offset));
    }
    Ok(out)
}

/// Writes the checkpoint; `durable` false defers the fsync to [`sync_file`].
pub fn write_leader_epoch_checkpoint(
    path: &Path,
    entries: &[(i32, i64)],
    durable: bool,
) -> Result<()> {
    let mut s = format!("0\n{}\n", entries.len());
    for (epoch, offset) in entries {
        s.push_str(&format!("{epoch} {offset}\n"));
    }
    write_replacing(path, s.as_bytes(), durable)
}

pub fn read_partition_metadata(path: &Path) -> Result<Option<Uuid>> {
    let Some(text) = read_optional(path)? else {
        return Ok(None);
    };
    let mut version = None;
    let mut topic_id = None;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            match k.trim() {
                "version" => version = Some(v.trim().to_string()),
                "topic_id" => topic_id = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    if version.as_deref() != Some("0") {
        return Err(corrupt(path, format!("unsupported version {version:?}")));
    }
    let id = topic_id.ok_or_else(|| corrupt(path, "missing topic_id"))?;
    Uuid::parse(&id)
        .map(Some)
        .ok_or_else(|| corrupt(path, "bad topic_id"))
}

/// Writes `partition.metadata` without an fsync; the log makes it durable at its next flush.
pub fn write_partition_metadata(path: &Path, topic_id: Uuid) -> Result<()> {
    write_atomic_deferred(
        path,
        format!("version: 0\ntopic_id: {topic_id}\n").as_bytes(),
    )
}

/// The fields of a KRaft (v1) `meta.properties`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    pub cluster_id: String,
    pub node_id: i32,
    pub directory_id: Uuid,
}

/// Reads a Java properties file (`key=value`, `#` comments) into a map.
fn parse_properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

pub fn read_meta_properties(path: &Path) -> Result<Option<MetaProperties>> {
    let Some(text) = read_optional(path)? else {
        return Ok(None);
    };
    let props = parse_properties(&text);
    if props.get("version").map(String::as_str) != Some("1") {
        return Err(corrupt(
            path,
            "only meta.properties version=1 (KRaft) is supported",
        ));
    }
    let cluster_id = props
        .get("cluster.id")
        .cloned()
        .ok_or_else(|| corrupt(path, "missing cluster.id"))?;
    let node_id = props
        .get("node.id")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| corrupt(path, "missing or bad node.id"))?;
    let directory_id = match props.get("directory.id") {
        Some(v) => Uuid::parse(v).ok_or_else(|| corrupt(path, "bad directory.id"))?,
        None => Uuid::random(),
    };
    Ok(Some(MetaProperties {
        cluster_id,
        node_id,
        directory_id,
    }))
}

pub fn write_meta_properties(path: &Path, meta: &MetaProperties) -> Result<()> {
    let s = format!(
        "#\n#Written by Strata\ncluster.id={}\ndirectory.id={}\nnode.id={}\nversion=1\n",
        meta.cluster_id, meta.directory_id, meta.node_id
    );
    write_atomic(path, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_checkpoint_round_trip_and_kafka_format() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RECOVERY_POINT_CHECKPOINT);
        assert!(read_offset_checkpoint(&path)
            .expect("missing is empty")
            .is_empty());
        let mut m = OffsetMap::new();
        m.insert(("my-topic".into(), 0), 42);
        m.insert(("other".into(), 3), 7);
        write_offset_checkpoint(&path, &m).expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text, "0\n2\nmy-topic 0 42\nother 3 7\n");
        assert_eq!(read_offset_checkpoint(&path).expect("read"), m);
        std::fs::write(&path, "0\n3\nmy-topic 0 42\n").expect("write");
        assert!(matches!(
            read_offset_checkpoint(&path),
            Err(StorageError::CorruptFile { .. })
        ));
        std::fs::write(&path, "1\n0\n").expect("write");
        assert!(read_offset_checkpoint(&path).is_err());
    }

    #[test]
    fn leader_epoch_and_partition_metadata_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        write_leader_epoch_checkpoint(&path, &[(0, 0), (3, 120)], true).expect("write");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "0\n2\n0 0\n3 120\n"
        );
        assert_eq!(
            read_leader_epoch_checkpoint(&path).expect("read"),
            vec![(0, 0), (3, 120)]
        );

        let path = dir.path().join(PARTITION_METADATA);
        let id = Uuid::random();
        write_partition_metadata(&path, id).expect("write");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            format!("version: 0\ntopic_id: {id}\n")
        );
        assert_eq!(read_partition_metadata(&path).expect("read"), Some(id));
    }

    #[test]
    fn meta_properties_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(META_PROPERTIES);
        let meta = MetaProperties {
            cluster_id: "abc".into(),
            node_id: 5,
            directory_id: Uuid::random(),
        };
        write_meta_properties(&path, &meta).expect("write");
        assert_eq!(read_meta_properties(&path).expect("read"), Some(meta));
        std::fs::write(&path, "version=0\nbroker.id=1\ncluster.id=x\n").expect("write");
        assert!(read_meta_properties(&path).is_err());
    }
}
