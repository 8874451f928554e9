//! The records of the KRaft-style metadata log: every change to cluster metadata is one of
//! these, proposed to the quorum by the controller and applied by every node through
//! [`MetadataImage::apply`](super::image::MetadataImage::apply).
//!
//! They follow the semantics of Kafka's metadata records (`RegisterBrokerRecord`,
//! `FenceBrokerRecord`, `TopicRecord`, `PartitionRecord`, `PartitionChangeRecord`,
//! `ConfigRecord`, `ProducerIdsRecord`, ...), not their wire format: the quorum replicates them
//! with serde. Topic ids are the raw 16 bytes of a [`Uuid`](crate::protocol::codec::Uuid).
use serde::{Deserialize, Serialize};

/// Kafka's `ConfigResource.Type` for a topic.
pub const RESOURCE_TOPIC: i8 = 2;
/// Kafka's `ConfigResource.Type` for a broker.
pub const RESOURCE_BROKER: i8 = 4;
/// Kafka's `ConfigResource.Type` for a client-metrics subscription (KIP-714).
pub const RESOURCE_CLIENT_METRICS: i8 = 16;
/// Kafka's `ConfigResource.Type` for a group's dynamic configs (KIP-848).
pub const RESOURCE_GROUP: i8 = 32;
/// The `leader` of a partition that has none.
pub const NO_LEADER: i32 = -1;

/// One listener a broker serves, as registered (Kafka's `BrokerEndpoint`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerEndpoint {
    /// The listener name, e.g. `PLAINTEXT`.
    pub name: String,
    pub host: String,
    pub port: i32,
    /// Kafka's `SecurityProtocol` id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL).
    pub security_protocol: i16,
}

/// One entry of the metadata log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MetadataRecord {
    /// A broker (re)registered: a new incarnation with a new broker epoch (KIP-903).
    RegisterBroker {
        broker_id: i32,
        broker_epoch: i64,
        incarnation_id: String,
        endpoints: Vec<BrokerEndpoint>,
        rack: Option<String>,
        fenced: bool,
        /// The broker's online log dirs by `directory.id` (KIP-858; registration `LogDirs`,
        /// v2+). Empty in records written before JBOD support.
        #[serde(default)]
        log_dirs: Vec<[u8; 16]>,
        /// The feature levels the broker supports: (name, min, max) (registration
        /// `Features`). Empty in records written before feature versioning.
        #[serde(default)]
        features: Vec<(String, i16, i16)>,
    },
    /// A registered broker's online log dirs changed: some went offline (Kafka's
    /// `BrokerRegistrationChangeRecord` with `LogDirs`, KIP-858).
    BrokerRegistrationChange {
        broker_id: i32,
        broker_epoch: i64,
        log_dirs: Vec<[u8; 16]>,
    },
    UnregisterBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// The broker may no longer lead or be added to an ISR (session expired or asked for it).
    FenceBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// The broker caught up with the metadata log after registering.
    UnfenceBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// The broker is shutting down in a controlled way: it is moved out of leaderships.
    BrokerControlledShutdown {
        broker_id: i32,
        broker_epoch: i64,
    },
    Topic {
        name: String,
        topic_id: [u8; 16],
    },
    /// Removes the topic, its partitions and its config overrides.
    RemoveTopic {
        topic_id: [u8; 16],
    },
    /// The full state of a new partition (Kafka's `PartitionRecord`).
    Partition {
        topic_id: [u8; 16],
        partition: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
        /// [`NO_LEADER`] when there is none.
        leader: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        adding_replicas: Vec<i32>,
        removing_replicas: Vec<i32>,
        /// The log dir of each replica, by position in `replicas` (KIP-858); reserved ids
        /// (`controller::directories`) for replicas not yet placed in a dir.
        #[serde(default)]
        directories: Vec<[u8; 16]>,
    },
    /// A delta to an existing partition (Kafka's `PartitionChangeRecord`). Applying it bumps
    /// the partition epoch always, and the leader epoch when the leader or the replica set
    /// changes (Kafka's `PartitionChangeBuilder`).
    PartitionChange {
        topic_id: [u8; 16],
        partition: i32,
        /// None: unchanged; `Some(NO_LEADER)`: no leader.
        leader: Option<i32>,
        isr: Option<Vec<i32>>,
        replicas: Option<Vec<i32>>,
        adding_replicas: Option<Vec<i32>>,
        removing_replicas: Option<Vec<i32>>,
        /// The log dir of each replica of the resulting replica set (KIP-858). None with a
        /// new replica set: replicas kept keep their dir and new ones are unassigned.
        #[serde(default)]
        directories: Option<Vec<[u8; 16]>>,
    },
    /// Sets (`Some`) or removes (`None`) one config override of a resource.
    Config {
        /// [`RESOURCE_TOPIC`] or [`RESOURCE_BROKER`].
        resource_type: i8,
        resource_name: String,
        name: String,
        value: Option<String>,
    },
    /// A block of producer ids handed to a broker: every id below `next_producer_id` is taken.
    ProducerIds {
        broker_id: i32,
        broker_epoch: i64,
        next_producer_id: i64,
    },
    // Authorization (issue 13): Kafka's AccessControlEntryRecord and
    // RemoveAccessControlEntryRecord; the image indexes them in `controller::acls`.
    /// Adds one ACL under a fresh id.
    AccessControlEntry {
        id: [u8; 16],
        acl: super::acls::AclBinding,
    },
    /// Removes the ACL with this id.
    RemoveAccessControlEntry {
        id: [u8; 16],
    },
    // Issue 13, sasl slice: SCRAM credentials (Kafka's UserScramCredentialRecord and
    // RemoveUserScramCredentialRecord); the state they build is `controller::scram`.
    /// Sets one user's credential for one mechanism (ids as `ScramMechanism::id`).
    UserScramCredential {
        name: String,
        mechanism: i8,
        salt: Vec<u8>,
        stored_key: Vec<u8>,
        server_key: Vec<u8>,
        iterations: i32,
    },
    /// Removes one user's credential for one mechanism.
    RemoveUserScramCredential {
        name: String,
        mechanism: i8,
    },
    // Delegation tokens (KIP-48): Kafka's DelegationTokenRecord and RemoveDelegationTokenRecord;
    // the state they build is `controller::delegation_tokens`.
    /// Creates a token, or replaces it whole (a renewal or a new expiry).
    DelegationToken {
        token: super::delegation_tokens::TokenInformation,
    },
    /// Removes a token (expired by a client or swept by the controller).
    RemoveDelegationToken {
        token_id: String,
    },
    // Quotas slice (issue 13): client quotas (Kafka's `ClientQuotaRecord`).
    /// Sets (`Some`) or removes (`None`) one quota value of a client quota entity.
    ClientQuota {
        entity: super::client_quotas::QuotaEntity,
        key: String,
        value: Option<f64>,
    },
    // Feature versioning (KIP-584/KIP-778): Kafka's FeatureLevelRecord; the state it builds is
    // `controller::features::FinalizedFeatures`.
    /// Finalizes `name` at `level` (0 disables a feature).
    FeatureLevel {
        name: String,
        level: i16,
    },
}
