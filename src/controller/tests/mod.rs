//! Tests of the controller's records, image and decisions: every decision is checked by
//! applying the records it returns to the image and looking at the image.
mod cluster_tests;
mod directories_tests;
mod image_tests;
mod partitions_tests;
mod random_tests;
mod topics_tests;

use super::cluster::{broker_heartbeat, register_broker};
use super::topics::create_topics;
use super::*;

/// A controller under test: the image, the whole log that built it, and soft state.
pub(super) struct Harness {
    pub image: MetadataImage,
    pub log: Vec<MetadataRecord>,
    pub heartbeats: BrokerHeartbeats,
    pub config: ControllerConfig,
    pub now_ms: i64,
    next_topic_id: u8,
    /// The log dirs each broker registers with (none: a broker from before KIP-858).
    pub log_dirs: std::collections::BTreeMap<i32, Vec<[u8; 16]>>,
    /// The dirs each broker's heartbeats report offline.
    pub offline_dirs: std::collections::BTreeMap<i32, Vec<[u8; 16]>>,
}

impl Harness {
    pub fn new() -> Self {
        Harness {
            image: MetadataImage::default(),
            log: Vec::new(),
            heartbeats: BrokerHeartbeats::new(),
            config: ControllerConfig::default(),
            now_ms: 0,
            next_topic_id: 0,
            log_dirs: Default::default(),
            offline_dirs: Default::default(),
        }
    }

    /// A harness with brokers `1..=n` registered and unfenced.
    pub fn with_brokers(n: i32) -> Self {
        let mut h = Harness::new();
        for b in 1..=n {
            h.start_broker(b, "a");
        }
        h
    }

    /// "Commits" records: appends them to the log and applies them.
    pub fn commit(&mut self, records: Vec<MetadataRecord>) {
        for r in records {
            self.image.apply(&r);
            self.log.push(r);
        }
    }

    pub fn offset(&self) -> i64 {
        self.log.len() as i64
    }

    pub fn epoch(&self, broker: i32) -> i64 {
        self.image.broker(broker).map_or(-1, |b| b.broker_epoch)
    }

    pub fn register(
        &mut self,
        broker: i32,
        incarnation: &str,
    ) -> Result<i64, crate::error::ErrorCode> {
        let request = RegisterBrokerRequest {
            broker_id: broker,
            incarnation_id: format!("{broker}-{incarnation}"),
            endpoints: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "localhost".into(),
                port: 9000 + broker,
                security_protocol: 0,
            }],
            rack: None,
            log_dirs: self.log_dirs.get(&broker).cloned().unwrap_or_default(),
            features: crate::controller::features::broker_features(),
        };
        let (records, result) = register_broker(
            &self.image,
            &self.config,
            &request,
            &mut self.heartbeats,
            self.now_ms,
        );
        self.commit(records);
        result
    }

    pub fn heartbeat(
        &mut self,
        broker: i32,
        want_fence: bool,
        want_shutdown: bool,
    ) -> BrokerHeartbeatReply {
        let offset = self.offset();
        self.heartbeat_at(broker, offset, want_fence, want_shutdown)
    }

    /// A heartbeat from a broker that has applied the metadata log up to `applied_offset`.
    pub fn heartbeat_at(
        &mut self,
        broker: i32,
        applied_offset: i64,
        want_fence: bool,
        want_shutdown: bool,
    ) -> BrokerHeartbeatReply {
        let request = BrokerHeartbeatRequest {
            broker_id: broker,
            broker_epoch: self.epoch(broker),
            current_metadata_offset: applied_offset,
            want_fence,
            want_shutdown,
            offline_log_dirs: self.offline_dirs.get(&broker).cloned().unwrap_or_default(),
        };
        let offset = self.offset();
        let (records, reply) = broker_heartbeat(
            &self.image,
            &self.config,
            &request,
            &mut self.heartbeats,
            self.now_ms,
            offset,
        );
        self.commit(records);
        reply
    }

    /// Registers and heartbeats until unfenced.
    pub fn start_broker(&mut self, broker: i32, incarnation: &str) {
        self.register(broker, incarnation).expect("register");
        let reply = self.heartbeat(broker, false, false);
        assert!(!reply.is_fenced, "{reply:?}");
    }

    pub fn create(&mut self, name: &str, partitions: i32, rf: i16) -> CreateTopicResult {
        let spec = CreateTopicSpec {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: rf,
            ..Default::default()
        };
        self.create_spec(spec)
    }

    pub fn create_spec(&mut self, spec: CreateTopicSpec) -> CreateTopicResult {
        let (records, mut results) = {
            let next = &mut self.next_topic_id;
            let mut ids = || {
                *next += 1;
                [*next; 16]
            };
            create_topics(&self.image, &self.config, &[spec], false, &mut ids)
        };
        self.commit(records);
        results.remove(0)
    }

    pub fn partition(&self, topic: &str, p: i32) -> PartitionRegistration {
        self.image
            .partition(topic, p)
            .cloned()
            .expect("partition exists")
    }

    /// The replay check: the log rebuilds the live image.
    pub fn assert_replays(&self) {
        assert_eq!(MetadataImage::from_records(&self.log), self.image);
    }
}
