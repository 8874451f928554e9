use super::Harness;
use crate::controller::partitions::{
    alter_partition, alter_partition_reassignments, elect_leaders, list_partition_reassignments,
    ElectionType, ReassignmentRequest,
};
use crate::controller::{CreateTopicSpec, NO_LEADER};
use crate::error::ErrorCode;
use crate::replica::{
    AlterPartition, AlterPartitionError, BrokerEpoch, BrokerId, IsrMember, LeaderEpoch,
    PartitionEpoch,
};

/// Topic "t" with one partition on replicas [1, 2, 3], leader 1.
fn setup() -> Harness {
    let mut h = Harness::with_brokers(4);
    h.create_spec(CreateTopicSpec {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2, 3])],
        configs: vec![],
    });
    h
}

/// An AlterPartition from the current leader at the current epochs.
fn request(h: &Harness, isr: &[i32]) -> AlterPartition {
    let p = h.partition("t", 0);
    AlterPartition {
        topic: "t".into(),
        partition: 0,
        leader: BrokerId(p.leader),
        leader_epoch: LeaderEpoch(p.leader_epoch),
        partition_epoch: PartitionEpoch(p.partition_epoch),
        new_isr: isr
            .iter()
            .map(|b| IsrMember {
                broker: BrokerId(*b),
                broker_epoch: BrokerEpoch(h.epoch(*b)),
            })
            .collect(),
    }
}

fn alter(h: &mut Harness, req: AlterPartition) -> Result<(), AlterPartitionError> {
    let (records, mut results) = alter_partition(&h.image, &[req]);
    h.commit(records);
    results.remove(0).map(|_| ())
}

fn alter_isr(h: &mut Harness, isr: &[i32]) -> Result<(), AlterPartitionError> {
    let req = request(h, isr);
    alter(h, req)
}

#[test]
fn alter_partition_shrinks_and_expands_the_isr() {
    let mut h = setup();
    let (records, results) = alter_partition(&h.image, &[request(&h, &[1, 2])]);
    let reg = results[0].clone().expect("accepted");
    h.commit(records);
    assert_eq!(h.partition("t", 0), reg);
    assert_eq!(
        (reg.isr, reg.leader_epoch, reg.partition_epoch),
        (vec![1, 2], 0, 1)
    );
    alter_isr(&mut h, &[1, 2, 3]).expect("expand");
    assert_eq!(h.partition("t", 0).isr, vec![1, 2, 3]);
    h.assert_replays();
}

#[test]
fn alter_partition_errors() {
    let mut h = setup();
    let mut r = request(&h, &[1, 2]);
    r.topic = "nope".into();
    assert_eq!(
        alter(&mut h, r),
        Err(AlterPartitionError::UnknownTopicOrPartition)
    );
    let mut r = request(&h, &[1, 2]);
    r.partition = 7;
    assert_eq!(
        alter(&mut h, r),
        Err(AlterPartitionError::UnknownTopicOrPartition)
    );
    let mut r = request(&h, &[1, 2]);
    r.leader_epoch = LeaderEpoch(1);
    assert_eq!(
        alter(&mut h, r),
        Err(AlterPartitionError::NotLeaderOrFollower)
    );
    let mut r = request(&h, &[1, 2]);
    r.leader = BrokerId(2);
    assert_eq!(
        alter(&mut h, r),
        Err(AlterPartitionError::NotLeaderOrFollower)
    );
    let mut r = request(&h, &[1, 2]);
    r.partition_epoch = PartitionEpoch(5);
    assert_eq!(
        alter(&mut h, r),
        Err(AlterPartitionError::InvalidUpdateVersion)
    );
    assert_eq!(
        alter_isr(&mut h, &[1, 4]),
        Err(AlterPartitionError::InvalidRequest)
    );
    assert_eq!(
        alter_isr(&mut h, &[1, 1]),
        Err(AlterPartitionError::InvalidRequest)
    );
    assert_eq!(
        alter_isr(&mut h, &[2, 3]),
        Err(AlterPartitionError::InvalidRequest)
    );
    // KIP-903: a stale incarnation and a fenced broker may not join.
    let mut r = request(&h, &[1, 2]);
    r.new_isr[1].broker_epoch = BrokerEpoch(h.epoch(2) - 1);
    assert_eq!(
        alter(&mut h, r),
        Err(AlterPartitionError::IneligibleReplica)
    );
    alter_isr(&mut h, &[1]).expect("shrink");
    h.heartbeat(2, true, false);
    assert_eq!(
        alter_isr(&mut h, &[1, 2]),
        Err(AlterPartitionError::IneligibleReplica)
    );
    let mut r = request(&h, &[1, 3]);
    r.new_isr[1].broker_epoch = BrokerEpoch::UNKNOWN;
    alter(&mut h, r).expect("unknown broker epoch is accepted");
    // A leader deposed by a fence gets FENCED_LEADER_EPOCH for its old epoch.
    let stale = request(&h, &[1]);
    h.heartbeat(1, true, false);
    assert_eq!(
        alter(&mut h, stale),
        Err(AlterPartitionError::FencedLeaderEpoch)
    );
    assert_eq!(h.partition("t", 0).leader, 3);
    h.assert_replays();
}

#[test]
fn preferred_and_unclean_elections() {
    let mut h = setup();
    let elect = |h: &mut Harness, t: ElectionType| {
        let (records, results) = elect_leaders(&h.image, t, &[("t".into(), 0), ("nope".into(), 0)]);
        h.commit(records);
        assert_eq!(results[1].2, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
        results[0].2
    };
    assert_eq!(
        elect(&mut h, ElectionType::Preferred),
        ErrorCode::ELECTION_NOT_NEEDED
    );
    h.heartbeat(1, true, false);
    assert_eq!(h.partition("t", 0).leader, 2);
    assert_eq!(
        elect(&mut h, ElectionType::Preferred),
        ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
    );
    assert_eq!(
        elect(&mut h, ElectionType::Unclean),
        ErrorCode::ELECTION_NOT_NEEDED
    );
    // Broker 1 returns (not in the ISR any more), is let back in, then preferred again.
    h.heartbeat(1, false, false);
    alter_isr(&mut h, &[2, 3, 1]).expect("expand");
    let epoch = h.partition("t", 0).leader_epoch;
    assert_eq!(elect(&mut h, ElectionType::Preferred), ErrorCode::NONE);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.leader_epoch), (1, epoch + 1));
    // Every ISR member but one out, and that one fenced: offline; unclean takes broker 2.
    alter_isr(&mut h, &[1]).expect("shrink");
    h.heartbeat(1, true, false);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    assert_eq!(elect(&mut h, ElectionType::Unclean), ErrorCode::NONE);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2]));
    // Nobody eligible at all.
    for b in [2, 3] {
        h.heartbeat(b, true, false);
    }
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    assert_eq!(
        elect(&mut h, ElectionType::Unclean),
        ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE
    );
    assert_eq!(ElectionType::from_i8(2), None);
    h.assert_replays();
}

fn reassign(h: &mut Harness, target: Option<Vec<i32>>) -> ErrorCode {
    let (records, results) = alter_partition_reassignments(
        &h.image,
        &h.config,
        &[ReassignmentRequest {
            topic: "t".into(),
            partition: 0,
            target,
            allow_replication_factor_change: true,
        }],
    );
    h.commit(records);
    results[0].2
}

#[test]
fn reassignment_completes_when_the_target_joins_the_isr() {
    let mut h = setup();
    assert_eq!(reassign(&mut h, Some(vec![4, 2, 3])), ErrorCode::NONE);
    let p = h.partition("t", 0);
    assert_eq!(p.replicas, vec![4, 2, 3, 1]);
    assert_eq!(
        (p.adding_replicas.clone(), p.removing_replicas.clone()),
        (vec![4], vec![1])
    );
    assert_eq!(p.leader, 1);
    let listed = list_partition_reassignments(&h.image);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].adding_replicas, vec![4]);
    // Broker 4 catches up and joins: the reassignment completes, leader 1 leaves.
    let epoch = p.leader_epoch;
    alter_isr(&mut h, &[1, 2, 3, 4]).expect("expand");
    let p = h.partition("t", 0);
    assert_eq!(p.replicas, vec![4, 2, 3]);
    assert_eq!(p.isr, vec![2, 3, 4]);
    assert!(!p.is_reassigning());
    assert_eq!((p.leader, p.leader_epoch), (4, epoch + 1));
    assert!(list_partition_reassignments(&h.image).is_empty());
    h.assert_replays();
}

#[test]
fn reassignment_cancel_replace_and_errors() {
    let mut h = setup();
    assert_eq!(
        reassign(&mut h, None),
        ErrorCode::NO_REASSIGNMENT_IN_PROGRESS
    );
    assert_eq!(
        reassign(&mut h, Some(vec![])),
        ErrorCode::INVALID_REPLICA_ASSIGNMENT
    );
    assert_eq!(
        reassign(&mut h, Some(vec![1, 1])),
        ErrorCode::INVALID_REPLICA_ASSIGNMENT
    );
    assert_eq!(
        reassign(&mut h, Some(vec![1, 9])),
        ErrorCode::INVALID_REPLICA_ASSIGNMENT
    );
    let (_, results) = alter_partition_reassignments(
        &h.image,
        &h.config,
        &[ReassignmentRequest {
            topic: "nope".into(),
            partition: 0,
            target: None,
            allow_replication_factor_change: true,
        }],
    );
    assert_eq!(results[0].2, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(reassign(&mut h, Some(vec![1, 2, 4])), ErrorCode::NONE);
    // Replaced: computed from the original [1, 2, 3], not from the union in progress.
    assert_eq!(reassign(&mut h, Some(vec![2, 3, 4])), ErrorCode::NONE);
    let p = h.partition("t", 0);
    assert_eq!(p.replicas, vec![2, 3, 4, 1]);
    assert_eq!(
        (p.adding_replicas.clone(), p.removing_replicas.clone()),
        (vec![4], vec![1])
    );
    // Cancelled: back to the original set, in the order of the merged list (Kafka does not
    // keep the original order either).
    assert_eq!(reassign(&mut h, None), ErrorCode::NONE);
    let p = h.partition("t", 0);
    assert_eq!(
        (p.replicas.clone(), p.isr.clone()),
        (vec![2, 3, 1], vec![1, 2, 3])
    );
    assert!(!p.is_reassigning());
    // A target already in the ISR (a pure shrink or reorder) completes at once.
    assert_eq!(reassign(&mut h, Some(vec![3, 2])), ErrorCode::NONE);
    let p = h.partition("t", 0);
    assert_eq!(
        (p.replicas.clone(), p.isr.clone(), p.leader),
        (vec![3, 2], vec![2, 3], 3)
    );
    assert!(!p.is_reassigning());
    h.assert_replays();
}

#[test]
fn a_reassignment_may_be_forbidden_to_change_the_replication_factor() {
    let mut h = setup();
    let strict = |h: &Harness, target: Vec<i32>| {
        let (records, results) = alter_partition_reassignments(
            &h.image,
            &h.config,
            &[ReassignmentRequest {
                topic: "t".into(),
                partition: 0,
                target: Some(target),
                allow_replication_factor_change: false,
            }],
        );
        (records, results[0].clone())
    };
    let before = h.partition("t", 0).replicas.clone();
    assert_eq!(before.len(), 3);
    // Four replicas for three: refused, nothing written.
    let (records, (_, _, code, message)) = strict(&h, vec![1, 2, 3, 4]);
    assert_eq!(code, ErrorCode::INVALID_REPLICATION_FACTOR);
    assert_eq!(
        message.as_deref(),
        Some("The replication factor is changed from 3 to 4")
    );
    assert!(records.is_empty());
    // The same count on other brokers: a move, allowed.
    let (records, (_, _, code, _)) = strict(&h, vec![4, 2, 3]);
    assert_eq!(code, ErrorCode::NONE);
    h.commit(records);
    // While it runs, the count compared is the original three, not the four replicas the
    // partition lists during the move.
    let (_, (_, _, code, _)) = strict(&h, vec![2, 3, 4]);
    assert_eq!(code, ErrorCode::NONE);
    let (_, (_, _, code, _)) = strict(&h, vec![2, 3, 4, 1]);
    assert_eq!(code, ErrorCode::INVALID_REPLICATION_FACTOR);
    h.assert_replays();
}
