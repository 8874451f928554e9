use super::Harness;
use crate::controller::configs::{incremental_alter_configs, AlterConfigOp, AlterConfigsResource};
use crate::controller::producer_ids::allocate_producer_ids;
use crate::controller::topics::{
    create_partitions, create_topics, delete_topics, validate_topic_name,
};
use crate::controller::{CreatePartitionsSpec, CreateTopicSpec, RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::error::ErrorCode;

#[test]
fn topic_names_follow_kafkas_rules() {
    assert!(validate_topic_name("a.b_c-D9").is_ok());
    for bad in ["", ".", "..", "a b", "a/b", "ü"] {
        assert!(validate_topic_name(bad).is_err(), "{bad:?}");
    }
    assert!(validate_topic_name(&"x".repeat(249)).is_ok());
    assert!(validate_topic_name(&"x".repeat(250)).is_err());
}

#[test]
fn create_places_partitions_across_live_brokers_and_records_configs() {
    let mut h = Harness::with_brokers(3);
    let r = h.create_spec(CreateTopicSpec {
        name: "t".into(),
        num_partitions: 6,
        replication_factor: 2,
        assignments: vec![],
        configs: vec![("retention.ms".into(), Some("5".into()))],
    });
    assert_eq!(r.error, ErrorCode::NONE);
    assert_eq!((r.num_partitions, r.replication_factor), (6, 2));
    let topic = h.image.topic("t").expect("created");
    assert_eq!(topic.topic_id, r.topic_id);
    let mut leaders = [0; 4];
    for p in topic.partitions.values() {
        assert_eq!(p.replicas.len(), 2);
        assert_ne!(p.replicas[0], p.replicas[1]);
        assert_eq!(p.isr, p.replicas);
        assert_eq!(
            (p.leader, p.leader_epoch, p.partition_epoch),
            (p.replicas[0], 0, 0)
        );
        leaders[p.leader as usize] += 1;
    }
    assert_eq!(&leaders[1..], &[2, 2, 2]);
    assert_eq!(h.image.topic_config("t", "retention.ms"), Some("5"));
    // The next one-partition topics start on different brokers.
    let a = h.create("a", 1, 1);
    let b = h.create("b", 1, 1);
    assert_eq!(a.error, ErrorCode::NONE);
    assert_ne!(h.partition("a", 0).leader, h.partition("b", 0).leader);
    assert_eq!(b.num_partitions, 1);
    h.assert_replays();
}

#[test]
fn create_errors() {
    let mut h = Harness::with_brokers(2);
    h.config.num_partitions = 3;
    h.config.default_replication_factor = 2;
    let d = h.create("defaults", -1, -1);
    assert_eq!(
        (d.error, d.num_partitions, d.replication_factor),
        (ErrorCode::NONE, 3, 2)
    );
    assert_eq!(
        h.create("defaults", 1, 1).error,
        ErrorCode::TOPIC_ALREADY_EXISTS
    );
    assert_eq!(
        h.create("bad name", 1, 1).error,
        ErrorCode::INVALID_TOPIC_EXCEPTION
    );
    assert_eq!(
        h.create("x", 1, 3).error,
        ErrorCode::INVALID_REPLICATION_FACTOR
    );
    assert_eq!(
        h.create("x", 1, 0).error,
        ErrorCode::INVALID_REPLICATION_FACTOR
    );
    assert_eq!(h.create("x", 0, 1).error, ErrorCode::INVALID_PARTITIONS);
    assert_eq!(h.create("x", -5, 1).error, ErrorCode::INVALID_PARTITIONS);
    let manual = |assignments: Vec<(i32, Vec<i32>)>| CreateTopicSpec {
        name: "m".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments,
        configs: vec![],
    };
    for bad in [
        vec![(0, vec![1, 1])],
        vec![(0, vec![1, 9])],
        vec![(0, vec![1]), (1, vec![1, 2])],
        vec![(0, vec![1]), (2, vec![2])],
        vec![(0, vec![])],
    ] {
        assert_eq!(
            h.create_spec(manual(bad.clone())).error,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            "{bad:?}"
        );
    }
    let mut both = manual(vec![(0, vec![1])]);
    both.num_partitions = 1;
    assert_eq!(h.create_spec(both).error, ErrorCode::INVALID_REQUEST);
    // A fenced broker counts for neither placement nor the replication factor.
    h.heartbeat(2, true, false);
    assert_eq!(
        h.create("x", 1, 2).error,
        ErrorCode::INVALID_REPLICATION_FACTOR
    );
    let ok = h.create_spec(manual(vec![(1, vec![2, 1]), (0, vec![1, 2])]));
    assert_eq!(ok.error, ErrorCode::NONE);
    let p1 = h.partition("m", 1);
    assert_eq!(
        (p1.replicas.clone(), p1.isr.clone(), p1.leader),
        (vec![2, 1], vec![1], 1)
    );
    h.assert_replays();
}

#[test]
fn validate_only_and_duplicate_names_in_one_request() {
    let h = Harness::with_brokers(1);
    let spec = CreateTopicSpec {
        name: "t".into(),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    };
    let mut n = 0u8;
    let mut ids = || {
        n += 1;
        [n; 16]
    };
    let (records, results) = create_topics(
        &h.image,
        &h.config,
        std::slice::from_ref(&spec),
        true,
        &mut ids,
    );
    assert!(records.is_empty());
    assert_eq!(results[0].error, ErrorCode::NONE);
    let (records, results) =
        create_topics(&h.image, &h.config, &[spec.clone(), spec], false, &mut ids);
    assert_eq!(records.len(), 2);
    assert_eq!(results[1].error, ErrorCode::TOPIC_ALREADY_EXISTS);
}

#[test]
fn delete_removes_topics_and_their_configs() {
    let mut h = Harness::with_brokers(1);
    let id = h.create("t", 2, 1).topic_id;
    let (records, results) = delete_topics(&h.image, &["t".into(), "nope".into()]);
    assert_eq!(results[0].1, Ok(id));
    assert_eq!(results[1].1, Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    h.commit(records);
    assert!(h.image.topic("t").is_none());
    assert!(h.image.topic_by_id(&id).is_none());
    h.assert_replays();
}

#[test]
fn create_partitions_grows_with_the_topics_replication_factor() {
    let mut h = Harness::with_brokers(3);
    h.create("t", 2, 2);
    let grow = |count, assignments| CreatePartitionsSpec {
        name: "t".into(),
        count,
        assignments,
    };
    let (records, results) = create_partitions(
        &h.image,
        &[
            grow(2, None),
            grow(4, Some(vec![vec![1, 2]])),
            grow(4, Some(vec![vec![1], vec![2]])),
            CreatePartitionsSpec {
                name: "nope".into(),
                count: 3,
                assignments: None,
            },
        ],
        false,
    );
    let codes: Vec<ErrorCode> = results.iter().map(|r| r.1).collect();
    assert_eq!(
        codes,
        vec![
            ErrorCode::INVALID_PARTITIONS,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        ]
    );
    assert!(records.is_empty());
    let (records, results) = create_partitions(
        &h.image,
        &[grow(4, None), grow(5, Some(vec![vec![3, 1]]))],
        false,
    );
    assert!(
        results.iter().all(|r| r.1 == ErrorCode::NONE),
        "{results:?}"
    );
    h.commit(records);
    assert_eq!(h.image.topic("t").expect("t").partitions.len(), 5);
    assert_eq!(h.partition("t", 4).replicas, vec![3, 1]);
    assert_eq!(h.partition("t", 3).replicas.len(), 2);
    let (records, _) = create_partitions(&h.image, &[grow(6, None)], true);
    assert!(records.is_empty());
    h.assert_replays();
}

#[test]
fn producer_id_blocks_never_overlap_and_need_the_current_epoch() {
    let mut h = Harness::with_brokers(2);
    let (records, block) = allocate_producer_ids(&h.image, 1, h.epoch(1));
    h.commit(records);
    let first = block.expect("block");
    let (records, block) = allocate_producer_ids(&h.image, 2, h.epoch(2));
    h.commit(records);
    let second = block.expect("block");
    assert_eq!(
        second.first_producer_id,
        first.first_producer_id + first.len
    );
    assert_eq!(
        h.image.next_producer_id,
        second.first_producer_id + second.len
    );
    let (records, block) = allocate_producer_ids(&h.image, 1, h.epoch(1) - 1);
    assert!(records.is_empty());
    assert_eq!(block, Err(ErrorCode::STALE_BROKER_EPOCH));
    assert_eq!(
        allocate_producer_ids(&h.image, 9, 1).1,
        Err(ErrorCode::STALE_BROKER_EPOCH)
    );
    h.assert_replays();
}

#[test]
fn incremental_alter_configs_on_topics_and_brokers() {
    let mut h = Harness::with_brokers(1);
    h.create("t", 1, 1);
    let topic = |ops: Vec<(&str, AlterConfigOp, Option<&str>)>| AlterConfigsResource {
        resource_type: RESOURCE_TOPIC,
        resource_name: "t".into(),
        ops: ops
            .into_iter()
            .map(|(k, op, v)| (k.to_string(), op, v.map(str::to_string)))
            .collect(),
    };
    let (records, results) = incremental_alter_configs(
        &h.image,
        &[
            topic(vec![
                ("retention.ms", AlterConfigOp::Set, Some("10")),
                ("cleanup.policy", AlterConfigOp::Append, Some("delete")),
            ]),
            AlterConfigsResource {
                resource_type: RESOURCE_TOPIC,
                resource_name: "nope".into(),
                ops: vec![],
            },
            AlterConfigsResource {
                resource_type: RESOURCE_BROKER,
                resource_name: "1".into(),
                ops: vec![(
                    "log.retention.ms".into(),
                    AlterConfigOp::Set,
                    Some("7".into()),
                )],
            },
            AlterConfigsResource {
                resource_type: 3,
                resource_name: "x".into(),
                ops: vec![],
            },
            topic(vec![(
                "unclean.leader.election.enable",
                AlterConfigOp::Set,
                Some("maybe"),
            )]),
            topic(vec![("min.insync.replicas", AlterConfigOp::Set, Some("0"))]),
            topic(vec![("retention.ms", AlterConfigOp::Set, None)]),
        ],
        false,
    );
    let codes: Vec<ErrorCode> = results.iter().map(|r| r.0).collect();
    assert_eq!(
        codes,
        vec![
            ErrorCode::NONE,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode::NONE,
            ErrorCode::INVALID_REQUEST,
            ErrorCode::INVALID_CONFIG,
            ErrorCode::INVALID_CONFIG,
            ErrorCode::INVALID_CONFIG
        ]
    );
    h.commit(records);
    assert_eq!(h.image.topic_config("t", "retention.ms"), Some("10"));
    assert_eq!(
        h.image
            .resource_configs(RESOURCE_BROKER, "1")
            .and_then(|m| m.get("log.retention.ms"))
            .map(String::as_str),
        Some("7")
    );
    let (records, _) = incremental_alter_configs(
        &h.image,
        &[topic(vec![
            ("cleanup.policy", AlterConfigOp::Append, Some("compact")),
            ("retention.ms", AlterConfigOp::Delete, None),
        ])],
        false,
    );
    h.commit(records);
    assert_eq!(
        h.image.topic_config("t", "cleanup.policy"),
        Some("delete,compact")
    );
    assert_eq!(h.image.topic_config("t", "retention.ms"), None);
    let (records, _) = incremental_alter_configs(
        &h.image,
        &[topic(vec![(
            "cleanup.policy",
            AlterConfigOp::Subtract,
            Some("delete"),
        )])],
        true,
    );
    assert!(records.is_empty());
    h.assert_replays();
}
