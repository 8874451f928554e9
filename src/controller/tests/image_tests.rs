use crate::controller::records::{BrokerEndpoint, MetadataRecord, NO_LEADER, RESOURCE_TOPIC};
use crate::controller::MetadataImage;
use crate::replica::{BrokerId, LeaderEpoch, PartitionEpoch};

const T: [u8; 16] = [7; 16];

fn register(id: i32, epoch: i64) -> MetadataRecord {
    MetadataRecord::RegisterBroker {
        broker_id: id,
        broker_epoch: epoch,
        incarnation_id: format!("inc-{id}-{epoch}"),
        endpoints: vec![BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: "localhost".into(),
            port: 9092 + id,
            security_protocol: 0,
        }],
        rack: None,
        fenced: true,
        log_dirs: vec![],
        features: vec![],
    }
}

fn log() -> Vec<MetadataRecord> {
    vec![
        register(1, 1),
        register(2, 2),
        MetadataRecord::UnfenceBroker {
            broker_id: 1,
            broker_epoch: 1,
        },
        MetadataRecord::Topic {
            name: "t".into(),
            topic_id: T,
        },
        MetadataRecord::Partition {
            topic_id: T,
            partition: 0,
            replicas: vec![1, 2],
            isr: vec![1, 2],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            adding_replicas: vec![],
            removing_replicas: vec![],
            directories: vec![],
        },
        MetadataRecord::Config {
            resource_type: RESOURCE_TOPIC,
            resource_name: "t".into(),
            name: "retention.ms".into(),
            value: Some("1000".into()),
        },
        MetadataRecord::ProducerIds {
            broker_id: 1,
            broker_epoch: 1,
            next_producer_id: 1000,
        },
    ]
}

#[test]
fn applies_brokers_topics_partitions_configs_and_producer_ids() {
    let image = MetadataImage::from_records(&log());
    assert!(image.is_live(1));
    assert!(!image.is_live(2), "registered fenced");
    assert_eq!(image.live_brokers().count(), 1);
    assert_eq!(
        image.broker_endpoint(2, "PLAINTEXT").map(|e| e.port),
        Some(9094)
    );
    assert!(image.broker_endpoint(2, "SSL").is_none());
    assert_eq!(image.last_broker_epoch, 2);
    assert_eq!(image.topic_by_id(&T).map(|t| t.name.as_str()), Some("t"));
    let p = image.partition("t", 0).expect("partition");
    assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (1, 0, 0));
    assert_eq!(image.topic_config("t", "retention.ms"), Some("1000"));
    assert_eq!(image.next_producer_id, 1000);
}

#[test]
fn partition_change_bumps_partition_epoch_always_and_leader_epoch_on_leader_change() {
    let mut image = MetadataImage::from_records(&log());
    let change = |leader: Option<i32>, isr: Option<Vec<i32>>| MetadataRecord::PartitionChange {
        topic_id: T,
        partition: 0,
        leader,
        isr,
        replicas: None,
        adding_replicas: None,
        removing_replicas: None,
        directories: None,
    };
    image.apply(&change(None, Some(vec![1])));
    let p = image.partition("t", 0).expect("partition");
    assert_eq!(
        (p.isr.clone(), p.leader_epoch, p.partition_epoch),
        (vec![1], 0, 1)
    );
    // The same leader restated is no change of leader.
    image.apply(&change(Some(1), None));
    let p = image.partition("t", 0).expect("partition");
    assert_eq!((p.leader_epoch, p.partition_epoch), (0, 2));
    image.apply(&change(Some(NO_LEADER), None));
    let p = image.partition("t", 0).expect("partition");
    assert_eq!(
        (p.leader, p.leader_epoch, p.partition_epoch),
        (NO_LEADER, 1, 3)
    );
    let pc = p.to_partition_change("t", 0, T);
    assert_eq!(pc.leader, None);
    assert_eq!(pc.leader_epoch, LeaderEpoch(1));
    assert_eq!(pc.partition_epoch, PartitionEpoch(3));
    assert_eq!(pc.replicas, vec![BrokerId(1), BrokerId(2)]);
}

#[test]
fn records_for_unknown_or_stale_targets_are_skipped() {
    let mut image = MetadataImage::from_records(&log());
    let before = image.clone();
    for r in [
        MetadataRecord::FenceBroker {
            broker_id: 9,
            broker_epoch: 1,
        },
        MetadataRecord::FenceBroker {
            broker_id: 1,
            broker_epoch: 7,
        },
        MetadataRecord::RemoveTopic { topic_id: [9; 16] },
        MetadataRecord::PartitionChange {
            topic_id: T,
            partition: 5,
            leader: Some(2),
            isr: None,
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
            directories: None,
        },
        MetadataRecord::Topic {
            name: "t".into(),
            topic_id: [3; 16],
        },
    ] {
        image.apply(&r);
    }
    assert_eq!(image, before);
}

#[test]
fn remove_topic_drops_partitions_and_configs() {
    let mut image = MetadataImage::from_records(&log());
    image.apply(&MetadataRecord::RemoveTopic { topic_id: T });
    assert!(image.topic("t").is_none());
    assert!(image.topic_names_by_id.is_empty());
    assert!(image.resource_configs(RESOURCE_TOPIC, "t").is_none());
}

#[test]
fn image_and_records_round_trip_through_serde_json() {
    let records = log();
    let image = MetadataImage::from_records(&records);
    let json = serde_json::to_string(&image).expect("serialize image");
    let back: MetadataImage = serde_json::from_str(&json).expect("deserialize image");
    assert_eq!(back, image);
    for r in &records {
        let json = serde_json::to_string(r).expect("serialize record");
        let back: MetadataRecord = serde_json::from_str(&json).expect("deserialize record");
        assert_eq!(&back, r);
    }
}

/// A partition change that would take an epoch past i32::MAX (only a corrupt or hostile
/// metadata log holds one) is skipped whole instead of overflowing: a panic with overflow checks
/// on, a wrap to a negative epoch (every later change looking stale) without.
#[test]
fn a_partition_change_past_the_largest_epoch_is_skipped() {
    for (leader_epoch, partition_epoch) in [(i32::MAX, 0), (0, i32::MAX)] {
        let mut image = MetadataImage::default();
        for r in [
            MetadataRecord::Topic {
                name: "t".into(),
                topic_id: T,
            },
            MetadataRecord::Partition {
                topic_id: T,
                partition: 0,
                replicas: vec![1, 2],
                isr: vec![1, 2],
                leader: 1,
                leader_epoch,
                partition_epoch,
                adding_replicas: vec![],
                removing_replicas: vec![],
                directories: vec![],
            },
            MetadataRecord::PartitionChange {
                topic_id: T,
                partition: 0,
                leader: Some(2),
                isr: Some(vec![2]),
                replicas: None,
                adding_replicas: None,
                removing_replicas: None,
                directories: None,
            },
        ] {
            image.apply(&r);
        }
        let p = image.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.isr.clone()), (1, vec![1, 2]), "skipped whole");
        assert_eq!(
            (p.leader_epoch, p.partition_epoch),
            (leader_epoch, partition_epoch)
        );
    }
}
