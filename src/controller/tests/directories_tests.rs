//! KIP-858 in the controller: directory assignments recorded by replay, a heartbeat's offline
//! dirs moving leaderships and shrinking ISRs, and unassigned replicas counted online until
//! their broker names their dir.
use super::Harness;
use crate::controller::directories::{
    assign_replicas_to_dirs, default_dir, is_reserved, AssignReplicasToDirsRequest, DirAssignment,
    LOST, MIGRATING, UNASSIGNED,
};
use crate::controller::{CreateTopicSpec, MetadataRecord, NO_LEADER};
use crate::error::ErrorCode;

/// Dir `d` (1 or 2) of broker `b`.
fn dir(b: i32, d: u8) -> [u8; 16] {
    let mut id = [0xd0; 16];
    id[0] = b as u8;
    id[1] = d;
    id
}

/// Brokers 1..=4 with two dirs each, and topic "t" with partitions on the given replicas.
fn setup(assignments: Vec<Vec<i32>>) -> Harness {
    let mut h = Harness::new();
    for b in 1..=4 {
        h.log_dirs.insert(b, vec![dir(b, 1), dir(b, 2)]);
        h.start_broker(b, "a");
    }
    let result = h.create_spec(CreateTopicSpec {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: assignments
            .into_iter()
            .enumerate()
            .map(|(i, r)| (i as i32, r))
            .collect(),
        configs: vec![],
    });
    assert_eq!(result.error, ErrorCode::NONE);
    h
}

fn topic_id(h: &Harness) -> [u8; 16] {
    h.image.topic("t").expect("topic").topic_id
}

/// Broker `b` places its replicas of `partitions` of "t" in `d`.
fn assign(
    h: &mut Harness,
    b: i32,
    d: [u8; 16],
    partitions: &[i32],
) -> Result<Vec<(i32, ErrorCode)>, ErrorCode> {
    let request = AssignReplicasToDirsRequest {
        broker_id: b,
        broker_epoch: h.epoch(b),
        directories: vec![DirAssignment {
            dir: d,
            topics: vec![(topic_id(h), partitions.to_vec())],
        }],
    };
    let (records, result) = assign_replicas_to_dirs(&h.image, &h.config, &request);
    h.commit(records);
    result.map(|mut dirs| dirs.remove(0).1.remove(0).1)
}

#[test]
fn reserved_ids_and_default_dirs_follow_kafka() {
    assert!(is_reserved(&UNASSIGNED) && is_reserved(&LOST) && is_reserved(&MIGRATING));
    assert!(!is_reserved(&dir(1, 1)));
    let mut h = Harness::new();
    h.log_dirs.insert(1, vec![dir(1, 1)]);
    h.log_dirs.insert(2, vec![dir(2, 1), dir(2, 2)]);
    for b in 1..=3 {
        h.start_broker(b, "a");
    }
    // One dir: new replicas go there; several: unassigned until the broker says; none
    // (a broker from before KIP-858): migrating.
    assert_eq!(default_dir(&h.image, 1), dir(1, 1));
    assert_eq!(default_dir(&h.image, 2), UNASSIGNED);
    assert_eq!(default_dir(&h.image, 3), MIGRATING);
    h.create_spec(CreateTopicSpec {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2, 3])],
        configs: vec![],
    });
    assert_eq!(
        h.partition("t", 0).directories,
        vec![dir(1, 1), UNASSIGNED, MIGRATING]
    );
    // A registration naming a reserved id or one dir twice is refused.
    h.log_dirs.insert(4, vec![dir(4, 1), dir(4, 1)]);
    assert_eq!(h.register(4, "a"), Err(ErrorCode::INVALID_REGISTRATION));
    h.log_dirs.insert(4, vec![LOST]);
    assert_eq!(h.register(4, "a"), Err(ErrorCode::INVALID_REGISTRATION));
    h.assert_replays();
}

#[test]
fn an_assignment_is_a_partition_change_replayed_like_any_other() {
    let mut h = setup(vec![vec![1, 2, 3], vec![2, 3, 4]]);
    let before = h.partition("t", 0);
    assert_eq!(before.directories, vec![UNASSIGNED; 3]);
    assert_eq!(
        assign(&mut h, 2, dir(2, 2), &[0, 1]),
        Ok(vec![(0, ErrorCode::NONE), (1, ErrorCode::NONE)])
    );
    let after = h.partition("t", 0);
    assert_eq!(after.directories, vec![UNASSIGNED, dir(2, 2), UNASSIGNED]);
    // The partition epoch moves (the leader must learn it), the leader epoch does not.
    assert_eq!(after.partition_epoch, before.partition_epoch + 1);
    assert_eq!(after.leader_epoch, before.leader_epoch);
    assert_eq!(h.partition("t", 1).directory_of(2), dir(2, 2));
    // The same assignment again changes nothing.
    let n = h.log.len();
    assert_eq!(
        assign(&mut h, 2, dir(2, 2), &[0]),
        Ok(vec![(0, ErrorCode::NONE)])
    );
    assert_eq!(h.log.len(), n);
    // Dirs follow their replicas through a replica-set change.
    h.commit(vec![MetadataRecord::PartitionChange {
        topic_id: topic_id(&h),
        partition: 0,
        leader: None,
        isr: None,
        replicas: Some(vec![2, 1, 4]),
        adding_replicas: None,
        removing_replicas: None,
        directories: None,
    }]);
    assert_eq!(
        h.partition("t", 0).directories,
        vec![dir(2, 2), UNASSIGNED, UNASSIGNED]
    );
    h.assert_replays();
}

#[test]
fn assignments_are_validated_like_kafka() {
    let mut h = setup(vec![vec![1, 2, 3]]);
    let mut request = AssignReplicasToDirsRequest {
        broker_id: 1,
        broker_epoch: h.epoch(1) - 1,
        directories: vec![DirAssignment {
            dir: dir(1, 1),
            topics: vec![(topic_id(&h), vec![0])],
        }],
    };
    let (records, result) = assign_replicas_to_dirs(&h.image, &h.config, &request);
    assert!(records.is_empty());
    assert_eq!(result, Err(ErrorCode::STALE_BROKER_EPOCH));
    request.broker_id = 9;
    let (_, result) = assign_replicas_to_dirs(&h.image, &h.config, &request);
    assert_eq!(result, Err(ErrorCode::STALE_BROKER_EPOCH));

    // Per partition: unknown partition, no replica on the broker, unknown topic id.
    assert_eq!(
        assign(&mut h, 4, dir(4, 1), &[0, 7]),
        Ok(vec![
            (0, ErrorCode::NOT_LEADER_OR_FOLLOWER),
            (7, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        ])
    );
    let request = AssignReplicasToDirsRequest {
        broker_id: 1,
        broker_epoch: h.epoch(1),
        directories: vec![DirAssignment {
            dir: dir(1, 1),
            topics: vec![([0xee; 16], vec![0])],
        }],
    };
    let (records, result) = assign_replicas_to_dirs(&h.image, &h.config, &request);
    assert!(records.is_empty());
    assert_eq!(
        result,
        Ok(vec![(
            dir(1, 1),
            vec![([0xee; 16], vec![(0, ErrorCode::UNKNOWN_TOPIC_ID)])]
        )])
    );
}

#[test]
fn an_offline_dir_moves_its_leaderships_and_shrinks_isrs() {
    // Broker 1 leads p0 and p1, follows in p2; p0 and p2 sit in its dir 1, p1 in dir 2.
    let mut h = setup(vec![vec![1, 2, 3], vec![1, 3, 4], vec![2, 1, 4]]);
    assign(&mut h, 1, dir(1, 1), &[0, 2]).expect("assign");
    assign(&mut h, 1, dir(1, 2), &[1]).expect("assign");
    let p1_before = h.partition("t", 1);
    h.offline_dirs.insert(1, vec![dir(1, 1)]);
    let reply = h.heartbeat(1, false, false);
    assert_eq!(reply.error, ErrorCode::NONE);
    assert!(!reply.is_fenced && !reply.should_shutdown);
    assert_eq!(h.image.broker(1).expect("broker").log_dirs, vec![dir(1, 2)]);
    let p0 = h.partition("t", 0);
    assert_eq!((p0.leader, p0.isr.clone()), (2, vec![2, 3]));
    let p2 = h.partition("t", 2);
    assert_eq!((p2.leader, p2.isr.clone()), (2, vec![2, 4]));
    // The healthy dir's partition is untouched: broker 1 still leads it.
    assert_eq!(h.partition("t", 1), p1_before);
    // The report repeats with every heartbeat and changes nothing more.
    let n = h.log.len();
    h.heartbeat(1, false, false);
    assert_eq!(h.log.len(), n);
    // Broker 1's replica in the offline dir can no longer lead or rejoin the ISR: a
    // preferred election of p0 is refused.
    let (_, results) = crate::controller::elect_leaders(
        &h.image,
        crate::controller::ElectionType::Preferred,
        &[("t".to_string(), 0)],
    );
    assert_eq!(results[0].2, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE);
    h.assert_replays();
}

#[test]
fn the_last_isr_member_in_an_offline_dir_stays_in_the_isr_without_leading() {
    let mut h = setup(vec![vec![1, 2, 3]]);
    let id = topic_id(&h);
    assign(&mut h, 1, dir(1, 1), &[0]).expect("assign");
    h.commit(vec![MetadataRecord::PartitionChange {
        topic_id: id,
        partition: 0,
        leader: None,
        isr: Some(vec![1]),
        replicas: None,
        adding_replicas: None,
        removing_replicas: None,
        directories: None,
    }]);
    h.offline_dirs.insert(1, vec![dir(1, 1)]);
    h.heartbeat(1, false, false);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, vec![1]));
    // Another broker coming back does not elect the offline replica either.
    h.heartbeat(2, true, false);
    h.heartbeat(2, false, false);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    h.assert_replays();
}

#[test]
fn unassigned_replicas_count_online_until_assigned_to_the_offline_dir() {
    let mut h = setup(vec![vec![1, 2, 3]]);
    let before = h.partition("t", 0);
    assert_eq!(before.directory_of(1), UNASSIGNED);
    h.offline_dirs.insert(1, vec![dir(1, 1)]);
    h.heartbeat(1, false, false);
    // Only the registration changed: the controller cannot know the replica was there.
    assert_eq!(h.image.broker(1).expect("broker").log_dirs, vec![dir(1, 2)]);
    assert_eq!(h.partition("t", 0), before);
    // The broker then names the offline dir (Kafka's broker does for the replicas of a
    // failed dir the controller had not placed yet): the replica is offline now.
    assert_eq!(
        assign(&mut h, 1, dir(1, 1), &[0]),
        Ok(vec![(0, ErrorCode::NONE)])
    );
    let p = h.partition("t", 0);
    assert_eq!(p.directory_of(1), dir(1, 1));
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2, 3]));
    h.assert_replays();
}

#[test]
fn a_new_registration_brings_a_repaired_dir_back() {
    let mut h = setup(vec![vec![1, 2, 3]]);
    assign(&mut h, 1, dir(1, 1), &[0]).expect("assign");
    h.offline_dirs.insert(1, vec![dir(1, 1)]);
    h.heartbeat(1, false, false);
    assert_eq!(h.partition("t", 0).leader, 2);
    // Restarted with the dir repaired: registered again with both dirs, the replica may
    // lead again once back in the ISR.
    h.offline_dirs.remove(&1);
    h.now_ms += 60_000;
    h.start_broker(1, "b");
    assert_eq!(
        h.image.broker(1).expect("broker").log_dirs,
        vec![dir(1, 1), dir(1, 2)]
    );
    let p = h.partition("t", 0);
    assert!(crate::controller::election::is_acceptable_leader(
        &h.image, &p, 1
    ));
    h.assert_replays();
}
