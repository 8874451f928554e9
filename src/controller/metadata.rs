//! The metadata log and the image built from it.
//!
//! Like KRaft's `__cluster_metadata`, every change is a record appended (and fsynced) before it
//! takes effect, and the in-memory image changes only by replaying records, at start-up and
//! after each append. The records are one line each: `topic <name> <id> <partitions> <internal>`,
//! `partitions <name> <count>`, `config <name> <key> <value>`, `unconfig <name> <key>`,
//! `delete <name>`, `producer_ids <next>`.
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::{Mutex, RwLock};

use crate::protocol::codec::Uuid;

/// How many producer ids one metadata record reserves (Kafka's ProducerIdsBlock size).
const PRODUCER_ID_BLOCK: i64 = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct TopicMeta {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    pub configs: BTreeMap<String, String>,
    pub is_internal: bool,
}

#[derive(Debug)]
pub enum MetadataError {
    Io(std::io::Error),
    Corrupt { line: usize, text: String },
    TopicExists(String),
    UnknownTopic(String),
}

impl std::fmt::Display for MetadataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl From<std::io::Error> for MetadataError {
    fn from(e: std::io::Error) -> Self {
        MetadataError::Io(e)
    }
}

#[derive(Debug, Default, Clone)]
struct Image {
    topics: BTreeMap<String, TopicMeta>,
    by_id: BTreeMap<Uuid, String>,
    /// First producer id not yet reserved by a record.
    producer_id_limit: i64,
}

impl Image {
    fn replay(&mut self, line: &str) -> Result<(), String> {
        let mut parts = line.splitn(4, ' ');
        let kind = parts.next().unwrap_or("");
        let mut next = || parts.next().ok_or_else(|| format!("short record: {line}"));
        match kind {
            "topic" => {
                let name = next()?.to_string();
                let id = Uuid::parse(next()?).ok_or("bad topic id")?;
                let rest = next()?;
                let (count, internal) = rest.split_once(' ').ok_or("short topic record")?;
                let partitions = count.parse().map_err(|_| "bad partition count")?;
                self.by_id.insert(id, name.clone());
                self.topics.insert(
                    name.clone(),
                    TopicMeta {
                        name,
                        id,
                        partitions,
                        configs: BTreeMap::new(),
                        is_internal: internal == "true",
                    },
                );
            }
            "partitions" => {
                let name = next()?;
                let count = next()?.parse().map_err(|_| "bad partition count")?;
                if let Some(t) = self.topics.get_mut(name) {
                    t.partitions = count;
                }
            }
            "config" => {
                let name = next()?.to_string();
                let key = next()?.to_string();
                let value = parts_rest(line, 3);
                if let Some(t) = self.topics.get_mut(&name) {
                    t.configs.insert(key, value);
                }
            }
            "unconfig" => {
                let name = next()?.to_string();
                let key = next()?;
                if let Some(t) = self.topics.get_mut(&name) {
                    t.configs.remove(key);
                }
            }
            "delete" => {
                let name = next()?;
                if let Some(t) = self.topics.remove(name) {
                    self.by_id.remove(&t.id);
                }
            }
            "producer_ids" => {
                self.producer_id_limit = next()?.parse().map_err(|_| "bad producer id")?;
            }
            _ => return Err(format!("unknown record kind {kind}")),
        }
        Ok(())
    }
}

/// The rest of a record line after `n` space-separated words (config values may hold spaces).
fn parts_rest(line: &str, n: usize) -> String {
    line.splitn(n + 1, ' ').nth(n).unwrap_or("").to_string()
}

pub struct MetadataStore {
    path: PathBuf,
    /// None for a cluster member's mirror of the replicated image: nothing is written here.
    file: Mutex<Option<File>>,
    image: RwLock<Image>,
    /// Next producer id to hand out; ids below `producer_id_limit` are reserved on disk.
    next_producer_id: Mutex<i64>,
}

impl MetadataStore {
    /// Opens `<dir>/__strata_metadata.log`, replaying every record.
    pub fn open(dir: &Path) -> Result<MetadataStore, MetadataError> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("__strata_metadata.log");
        let mut image = Image::default();
        if path.exists() {
            let text = std::fs::read(&path)?;
            let mut good_len = 0usize;
            let mut line_no = 0usize;
            let mut rest = &text[..];
            while !rest.is_empty() {
                line_no += 1;
                let (line, complete) = match rest.iter().position(|b| *b == b'\n') {
                    Some(i) => (&rest[..i], true),
                    None => (rest, false),
                };
                let consumed = line.len() + complete as usize;
                let parsed = std::str::from_utf8(line)
                    .map_err(|e| e.to_string())
                    .and_then(|l| {
                        if !complete {
                            return Err("no newline".to_string());
                        }
                        if l.is_empty() {
                            Ok(())
                        } else {
                            image.replay(l)
                        }
                    });
                match parsed {
                    Ok(()) => good_len += consumed,
                    // A torn last record from a crash mid-append is dropped; anything else is corruption.
                    Err(e) if rest.len() == consumed => {
                        tracing::warn!(error = %e, "dropping torn metadata record");
                        break;
                    }
                    Err(_) => {
                        return Err(MetadataError::Corrupt {
                            line: line_no,
                            text: String::from_utf8_lossy(line).into_owned(),
                        })
                    }
                }
                rest = &rest[consumed..];
            }
            if good_len < text.len() {
                let f = OpenOptions::new().write(true).open(&path)?;
                f.set_len(good_len as u64)?;
                f.sync_all()?;
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let next = image.producer_id_limit;
        Ok(MetadataStore {
            path,
            file: Mutex::new(Some(file)),
            image: RwLock::new(image),
            next_producer_id: Mutex::new(next),
        })
    }

    /// Every producer id below this one may have been handed out.
    pub fn producer_id_limit(&self) -> i64 {
        self.image.read().producer_id_limit
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends records durably, then applies them to the image.
    fn commit(&self, records: &[String]) -> Result<(), MetadataError> {
        let mut file = self.file.lock();
        let mut text = String::new();
        for r in records {
            debug_assert!(!r.contains('\n'));
            text.push_str(r);
            text.push('\n');
        }
        if let Some(file) = file.as_mut() {
            file.write_all(text.as_bytes())?;
            file.sync_data()?;
        }
        let mut image = self.image.write();
        for r in records {
            if let Err(e) = image.replay(r) {
                tracing::error!(record = %r, error = %e, "metadata record failed to apply");
            }
        }
        Ok(())
    }

    pub fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.image.read().topics.get(name).cloned()
    }

    pub fn topic_name_by_id(&self, id: &Uuid) -> Option<String> {
        self.image.read().by_id.get(id).cloned()
    }

    pub fn topics(&self) -> Vec<TopicMeta> {
        self.image.read().topics.values().cloned().collect()
    }

    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: &BTreeMap<String, String>,
        is_internal: bool,
    ) -> Result<TopicMeta, MetadataError> {
        if self.image.read().topics.contains_key(name) {
            return Err(MetadataError::TopicExists(name.to_string()));
        }
        let id = Uuid::random();
        let mut records = vec![format!("topic {name} {id} {partitions} {is_internal}")];
        for (k, v) in configs {
            records.push(format!("config {name} {k} {}", v.replace('\n', " ")));
        }
        self.commit(&records)?;
        self.topic(name)
            .ok_or_else(|| MetadataError::UnknownTopic(name.to_string()))
    }

    pub fn delete_topic(&self, name: &str) -> Result<TopicMeta, MetadataError> {
        let t = self
            .topic(name)
            .ok_or_else(|| MetadataError::UnknownTopic(name.to_string()))?;
        self.commit(&[format!("delete {name}")])?;
        Ok(t)
    }

    pub fn set_partition_count(&self, name: &str, count: i32) -> Result<(), MetadataError> {
        self.topic(name)
            .ok_or_else(|| MetadataError::UnknownTopic(name.to_string()))?;
        self.commit(&[format!("partitions {name} {count}")])
    }

    /// Replaces a topic's overrides: `Some(v)` sets, `None` removes.
    pub fn alter_topic_configs(
        &self,
        name: &str,
        changes: &[(String, Option<String>)],
    ) -> Result<(), MetadataError> {
        self.topic(name)
            .ok_or_else(|| MetadataError::UnknownTopic(name.to_string()))?;
        let records: Vec<String> = changes
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("config {name} {k} {}", v.replace('\n', " ")),
                None => format!("unconfig {name} {k}"),
            })
            .collect();
        if records.is_empty() {
            return Ok(());
        }
        self.commit(&records)
    }

    /// Hands out a fresh producer id, reserving a block on disk when the current one runs out,
    /// so ids are never reused across restarts.
    pub fn allocate_producer_id(&self) -> Result<i64, MetadataError> {
        let mut next = self.next_producer_id.lock();
        let limit = self.image.read().producer_id_limit;
        if *next >= limit {
            self.commit(&[format!("producer_ids {}", limit + PRODUCER_ID_BLOCK)])?;
        }
        let id = *next;
        *next += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_to_the_same_image() {
        let dir = tempfile::tempdir().unwrap();
        let store = MetadataStore::open(dir.path()).unwrap();
        let mut cfg = BTreeMap::new();
        cfg.insert("retention.ms".to_string(), "1000".to_string());
        let t = store.create_topic("a", 3, &cfg, false).unwrap();
        store.create_topic("b", 1, &BTreeMap::new(), false).unwrap();
        store.set_partition_count("a", 5).unwrap();
        store
            .alter_topic_configs(
                "a",
                &[("cleanup.policy".into(), Some("compact,delete".into()))],
            )
            .unwrap();
        store.delete_topic("b").unwrap();
        let p1 = store.allocate_producer_id().unwrap();
        let p2 = store.allocate_producer_id().unwrap();
        assert_eq!(p2, p1 + 1);
        let before = store.topics();
        drop(store);
        let store = MetadataStore::open(dir.path()).unwrap();
        assert_eq!(store.topics(), before);
        assert_eq!(store.topic("a").unwrap().id, t.id);
        assert_eq!(store.topic("a").unwrap().partitions, 5);
        assert!(
            store.allocate_producer_id().unwrap() > p2,
            "producer ids are not reused after restart"
        );
    }

    #[test]
    fn torn_last_record_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = MetadataStore::open(dir.path()).unwrap();
        store.create_topic("a", 1, &BTreeMap::new(), false).unwrap();
        drop(store);
        let path = dir.path().join("__strata_metadata.log");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"topic half").unwrap();
        let store = MetadataStore::open(dir.path()).unwrap();
        assert_eq!(store.topics().len(), 1);
        store.create_topic("b", 1, &BTreeMap::new(), false).unwrap();
        drop(store);
        let store = MetadataStore::open(dir.path()).unwrap();
        assert_eq!(store.topics().len(), 2, "records after a torn one are kept");
    }
}
