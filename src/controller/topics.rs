//! Topic creation and deletion and partition growth (the topic half of Kafka's
//! `ReplicationControlManager`: `createTopics`, `deleteTopics`, `createPartitions`), as
//! records: `Topic`, one `Partition` per partition, one `Config` per override; `RemoveTopic`.
use std::collections::BTreeSet;

use super::controller_config::ControllerConfig;
use super::election::Batch;
use super::image::MetadataImage;
use super::placement::place_replicas;
use super::records::{MetadataRecord, RESOURCE_TOPIC};
use crate::error::ErrorCode;

/// Kafka's limit on topic name length.
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// One topic of a CreateTopics request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreateTopicSpec {
    pub name: String,
    /// -1: the controller default.
    pub num_partitions: i32,
    /// -1: the controller default.
    pub replication_factor: i16,
    /// Manual assignment as (partition index, replicas); then both counts must be -1.
    pub assignments: Vec<(i32, Vec<i32>)>,
    pub configs: Vec<(String, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicResult {
    pub name: String,
    pub error: ErrorCode,
    pub error_message: Option<String>,
    pub topic_id: [u8; 16],
    pub num_partitions: i32,
    pub replication_factor: i16,
}

impl CreateTopicResult {
    fn error(name: &str, error: ErrorCode, message: impl Into<String>) -> Self {
        CreateTopicResult {
            name: name.to_string(),
            error,
            error_message: Some(message.into()),
            topic_id: [0; 16],
            num_partitions: -1,
            replication_factor: -1,
        }
    }
}

/// Kafka's `Topic.validate`: 1 to 249 of `[a-zA-Z0-9._-]`, and not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("topic name is empty".into());
    }
    if name == "." || name == ".." {
        return Err(format!("topic name cannot be '{name}'"));
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(format!(
            "topic name is longer than {MAX_TOPIC_NAME_LEN} characters"
        ));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
    {
        return Err(format!(
            "topic name '{name}' has characters outside [a-zA-Z0-9._-]"
        ));
    }
    Ok(())
}

/// Brokers new replicas may go to: unfenced and not shutting down, by id.
pub fn usable_brokers(image: &MetadataImage) -> Vec<i32> {
    image
        .brokers
        .values()
        .filter(|b| b.is_eligible())
        .map(|b| b.broker_id)
        .collect()
}

/// Where the striped placer starts: moves on with every partition created so far.
fn placement_start(image: &MetadataImage) -> usize {
    image.topics.values().map(|t| t.partitions.len()).sum()
}

/// Checks one manual assignment: non-empty, no duplicate, every broker registered, and at
/// least one of them usable to lead.
fn validate_assignment(image: &MetadataImage, replicas: &[i32]) -> Result<(), String> {
    if replicas.is_empty() {
        return Err("empty replica assignment".into());
    }
    let distinct: BTreeSet<i32> = replicas.iter().copied().collect();
    if distinct.len() != replicas.len() {
        return Err(format!(
            "duplicate broker in replica assignment {replicas:?}"
        ));
    }
    if let Some(b) = replicas.iter().find(|b| image.broker(**b).is_none()) {
        return Err(format!(
            "broker {b} in the replica assignment is not registered"
        ));
    }
    if !replicas.iter().any(|b| image.is_eligible(*b)) {
        return Err(format!(
            "every broker of {replicas:?} is fenced or shutting down"
        ));
    }
    Ok(())
}

/// The records of one new partition: ISR = its usable replicas, leader the first of them.
fn partition_record(
    image: &MetadataImage,
    topic_id: [u8; 16],
    partition: i32,
    replicas: Vec<i32>,
) -> MetadataRecord {
    let isr: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|b| image.is_eligible(*b))
        .collect();
    let leader = isr.first().copied().unwrap_or(super::records::NO_LEADER);
    let directories = replicas
        .iter()
        .map(|b| super::directories::default_dir(image, *b))
        .collect();
    MetadataRecord::Partition {
        topic_id,
        partition,
        replicas,
        isr,
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
        directories,
    }
}

/// The replicas of each partition of a spec, or the error to answer with.
fn assign(
    image: &MetadataImage,
    config: &ControllerConfig,
    spec: &CreateTopicSpec,
) -> Result<Vec<Vec<i32>>, (ErrorCode, String)> {
    if !spec.assignments.is_empty() {
        if spec.num_partitions != -1 || spec.replication_factor != -1 {
            return Err((
                ErrorCode::INVALID_REQUEST,
                "both a manual assignment and partition counts given".into(),
            ));
        }
        let mut sorted = spec.assignments.clone();
        sorted.sort_by_key(|(p, _)| *p);
        let rf = sorted[0].1.len();
        let mut out = Vec::with_capacity(sorted.len());
        for (i, (p, replicas)) in sorted.into_iter().enumerate() {
            if usize::try_from(p).ok() != Some(i) {
                return Err((
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    "partitions must be numbered consecutively from 0".into(),
                ));
            }
            if replicas.len() != rf {
                return Err((
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    "every partition must have the same number of replicas".into(),
                ));
            }
            validate_assignment(image, &replicas)
                .map_err(|m| (ErrorCode::INVALID_REPLICA_ASSIGNMENT, m))?;
            out.push(replicas);
        }
        return Ok(out);
    }
    let partitions = match spec.num_partitions {
        -1 => config.num_partitions,
        n => n,
    };
    if partitions <= 0 {
        return Err((
            ErrorCode::INVALID_PARTITIONS,
            format!("number of partitions {partitions} is not positive"),
        ));
    }
    let rf = match spec.replication_factor {
        -1 => config.default_replication_factor,
        n => n,
    };
    let brokers = usable_brokers(image);
    place_replicas(&brokers, partitions, rf, placement_start(image)).map_err(|_| {
        (
            ErrorCode::INVALID_REPLICATION_FACTOR,
            format!(
                "replication factor {rf} is not between 1 and the {} usable brokers",
                brokers.len()
            ),
        )
    })
}

/// Creates topics (or, with `validate_only`, only checks them and returns no records).
/// `new_topic_id` supplies fresh ids (`|| Uuid::random().0` outside tests).
pub fn create_topics(
    image: &MetadataImage,
    config: &ControllerConfig,
    specs: &[CreateTopicSpec],
    validate_only: bool,
    new_topic_id: &mut dyn FnMut() -> [u8; 16],
) -> (Vec<MetadataRecord>, Vec<CreateTopicResult>) {
    let mut batch = Batch::new(image);
    let mut results = Vec::with_capacity(specs.len());
    for spec in specs {
        if let Err(m) = validate_topic_name(&spec.name) {
            results.push(CreateTopicResult::error(
                &spec.name,
                ErrorCode::INVALID_TOPIC_EXCEPTION,
                m,
            ));
            continue;
        }
        if batch.image.topic(&spec.name).is_some() {
            results.push(CreateTopicResult::error(
                &spec.name,
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("topic '{}' already exists", spec.name),
            ));
            continue;
        }
        if spec.configs.iter().any(|(_, v)| v.is_none()) {
            results.push(CreateTopicResult::error(
                &spec.name,
                ErrorCode::INVALID_CONFIG,
                "null config value",
            ));
            continue;
        }
        let assignment = match assign(&batch.image, config, spec) {
            Ok(a) => a,
            Err((code, m)) => {
                results.push(CreateTopicResult::error(&spec.name, code, m));
                continue;
            }
        };
        // Ids are random: one already in use (or zero, Kafka's "no id") is drawn again.
        let mut topic_id = [0u8; 16];
        for _ in 0..16 {
            let candidate = new_topic_id();
            if candidate != [0; 16] && !batch.image.topic_names_by_id.contains_key(&candidate) {
                topic_id = candidate;
                break;
            }
        }
        if topic_id == [0; 16] {
            results.push(CreateTopicResult::error(
                &spec.name,
                ErrorCode::UNKNOWN_SERVER_ERROR,
                "no fresh topic id",
            ));
            continue;
        }
        let rf = assignment.first().map_or(0, Vec::len);
        results.push(CreateTopicResult {
            name: spec.name.clone(),
            error: ErrorCode::NONE,
            error_message: None,
            topic_id,
            num_partitions: i32::try_from(assignment.len()).unwrap_or(i32::MAX),
            replication_factor: i16::try_from(rf).unwrap_or(i16::MAX),
        });
        if validate_only {
            continue;
        }
        batch.push(MetadataRecord::Topic {
            name: spec.name.clone(),
            topic_id,
        });
        for (p, replicas) in (0..).zip(assignment) {
            let record = partition_record(&batch.image, topic_id, p, replicas);
            batch.push(record);
        }
        for (name, value) in &spec.configs {
            batch.push(MetadataRecord::Config {
                resource_type: RESOURCE_TOPIC,
                resource_name: spec.name.clone(),
                name: name.clone(),
                value: value.clone(),
            });
        }
    }
    (batch.records, results)
}

/// (name, topic id or error) of one deleted topic.
pub type DeleteTopicResult = (String, Result<[u8; 16], ErrorCode>);
/// (name, error, message) of one CreatePartitions topic.
pub type CreatePartitionsResult = (String, ErrorCode, Option<String>);

/// Deletes topics by name; each result is the topic id or the error.
pub fn delete_topics(
    image: &MetadataImage,
    names: &[String],
) -> (Vec<MetadataRecord>, Vec<DeleteTopicResult>) {
    let mut batch = Batch::new(image);
    let mut results = Vec::with_capacity(names.len());
    for name in names {
        match batch.image.topic(name).map(|t| t.topic_id) {
            Some(topic_id) => {
                batch.push(MetadataRecord::RemoveTopic { topic_id });
                results.push((name.clone(), Ok(topic_id)));
            }
            None => results.push((name.clone(), Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))),
        }
    }
    (batch.records, results)
}

/// One topic of a CreatePartitions request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsSpec {
    pub name: String,
    /// The total partition count wanted.
    pub count: i32,
    /// Replicas of each new partition, if the client chose them.
    pub assignments: Option<Vec<Vec<i32>>>,
}

/// Grows topics to `count` partitions, the new ones placed like at creation with the topic's
/// replication factor (that of its partition 0).
pub fn create_partitions(
    image: &MetadataImage,
    specs: &[CreatePartitionsSpec],
    validate_only: bool,
) -> (Vec<MetadataRecord>, Vec<CreatePartitionsResult>) {
    let mut batch = Batch::new(image);
    let mut results = Vec::with_capacity(specs.len());
    for spec in specs {
        let outcome = grow(&batch.image, spec);
        match outcome {
            Ok(records) => {
                results.push((spec.name.clone(), ErrorCode::NONE, None));
                if !validate_only {
                    for r in records {
                        batch.push(r);
                    }
                }
            }
            Err((code, m)) => results.push((spec.name.clone(), code, Some(m))),
        }
    }
    (batch.records, results)
}

fn grow(
    image: &MetadataImage,
    spec: &CreatePartitionsSpec,
) -> Result<Vec<MetadataRecord>, (ErrorCode, String)> {
    let Some(topic) = image.topic(&spec.name) else {
        return Err((
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic '{}' does not exist", spec.name),
        ));
    };
    let current = i32::try_from(topic.partitions.len()).unwrap_or(i32::MAX);
    if spec.count <= current {
        return Err((
            ErrorCode::INVALID_PARTITIONS,
            format!(
                "topic has {current} partitions, cannot go to {}",
                spec.count
            ),
        ));
    }
    let new = spec.count - current;
    let rf = topic
        .partitions
        .values()
        .next()
        .map_or(1, |p| p.replicas.len());
    let assignment = match &spec.assignments {
        Some(a) => {
            if a.len() != usize::try_from(new).unwrap_or(0) {
                return Err((
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    format!("{} assignments for {new} new partitions", a.len()),
                ));
            }
            for replicas in a {
                if replicas.len() != rf {
                    return Err((
                        ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                        format!("the topic's replication factor is {rf}"),
                    ));
                }
                validate_assignment(image, replicas)
                    .map_err(|m| (ErrorCode::INVALID_REPLICA_ASSIGNMENT, m))?;
            }
            a.clone()
        }
        None => {
            let brokers = usable_brokers(image);
            let rf16 = i16::try_from(rf).unwrap_or(i16::MAX);
            place_replicas(&brokers, new, rf16, placement_start(image)).map_err(|_| {
                (
                    ErrorCode::INVALID_REPLICATION_FACTOR,
                    format!(
                        "cannot place {rf} replicas on {} usable brokers",
                        brokers.len()
                    ),
                )
            })?
        }
    };
    Ok((current..)
        .zip(assignment)
        .map(|(p, replicas)| partition_record(image, topic.topic_id, p, replicas))
        .collect())
}
