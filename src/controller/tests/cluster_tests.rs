use super::Harness;
use crate::controller::cluster::{fence_expired_brokers, unregister_broker};
use crate::controller::{MetadataRecord, NO_LEADER};
use crate::error::ErrorCode;

#[test]
fn registration_is_fenced_with_increasing_epochs_and_idempotent_per_incarnation() {
    let mut h = Harness::new();
    let e1 = h.register(1, "a").expect("register");
    assert!(h.image.broker(1).expect("registered").fenced);
    let e2 = h.register(2, "a").expect("register");
    assert!(e2 > e1);
    // The same incarnation retrying gets its epoch back and no new record.
    let before = h.log.len();
    assert_eq!(h.register(1, "a"), Ok(e1));
    assert_eq!(h.log.len(), before);
    assert_eq!(h.register(-3, "a"), Err(ErrorCode::INVALID_REGISTRATION));
    h.assert_replays();
}

#[test]
fn a_second_live_incarnation_is_refused_until_the_session_expires() {
    let mut h = Harness::with_brokers(1);
    assert_eq!(
        h.register(1, "b"),
        Err(ErrorCode::DUPLICATE_BROKER_REGISTRATION)
    );
    h.now_ms += h.config.broker_session_timeout_ms;
    let old = h.epoch(1);
    let new = h.register(1, "b").expect("the old session expired");
    assert!(new > old);
    assert!(h.image.broker(1).expect("registered").fenced);
}

#[test]
fn reregistration_moves_leadership_off_the_old_incarnation() {
    let mut h = Harness::with_brokers(2);
    h.create("t", 2, 2);
    let led_by_1: Vec<i32> = (0..2)
        .filter(|p| h.partition("t", *p).leader == 1)
        .collect();
    assert!(!led_by_1.is_empty());
    h.now_ms += h.config.broker_session_timeout_ms;
    h.register(1, "b").expect("register");
    for p in 0..2 {
        let part = h.partition("t", p);
        assert_eq!(part.leader, 2, "{part:?}");
        assert_eq!(part.isr, vec![2]);
    }
    h.assert_replays();
}

#[test]
fn heartbeat_unfences_once_caught_up_and_checks_the_epoch() {
    let mut h = Harness::new();
    let epoch = h.register(1, "a").expect("register");
    h.register(2, "a").expect("register");
    let offset = h.offset();
    let (records, reply) = crate::controller::broker_heartbeat(
        &h.image,
        &h.config,
        &crate::controller::BrokerHeartbeatRequest {
            broker_id: 1,
            broker_epoch: epoch,
            current_metadata_offset: 0,
            want_fence: false,
            want_shutdown: false,
            offline_log_dirs: vec![],
        },
        &mut h.heartbeats,
        h.now_ms,
        offset,
    );
    assert!(records.is_empty());
    assert!(!reply.is_caught_up && reply.is_fenced);
    assert!(h.heartbeat(1, false, false).is_caught_up);
    assert!(h.image.is_live(1));
    let stale = crate::controller::BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: epoch - 1,
        current_metadata_offset: 0,
        want_fence: false,
        want_shutdown: false,
        offline_log_dirs: vec![],
    };
    let (records, reply) =
        crate::controller::broker_heartbeat(&h.image, &h.config, &stale, &mut h.heartbeats, 0, 0);
    assert!(records.is_empty());
    assert_eq!(reply.error, ErrorCode::STALE_BROKER_EPOCH);
    let unknown = crate::controller::BrokerHeartbeatRequest {
        broker_id: 9,
        ..stale.clone()
    };
    let (_, reply) =
        crate::controller::broker_heartbeat(&h.image, &h.config, &unknown, &mut h.heartbeats, 0, 0);
    assert_eq!(reply.error, ErrorCode::BROKER_ID_NOT_REGISTERED);
}

#[test]
fn expired_sessions_are_fenced_and_leadership_moves_within_the_isr() {
    let mut h = Harness::with_brokers(3);
    h.create("t", 3, 3);
    h.create("solo", 1, 1);
    let solo_leader = h.partition("solo", 0).leader;
    let before: Vec<_> = (0..3).map(|p| h.partition("t", p)).collect();
    h.now_ms += 5000;
    for b in 1..=3 {
        if b != solo_leader {
            h.heartbeat(b, false, false);
        }
    }
    h.now_ms += 5000;
    let records = fence_expired_brokers(&h.image, &h.config, &mut h.heartbeats, h.now_ms);
    h.commit(records);
    assert!(!h.image.is_live(solo_leader));
    for (p, old) in before.iter().enumerate() {
        let part = h.partition("t", p as i32);
        assert!(!part.isr.contains(&solo_leader));
        assert_ne!(part.leader, solo_leader);
        if old.leader == solo_leader {
            assert_eq!(part.leader_epoch, old.leader_epoch + 1);
        }
    }
    // The last ISR member stays in the ISR; the partition goes leaderless.
    let solo = h.partition("solo", 0);
    assert_eq!(
        (solo.leader, solo.isr.clone()),
        (NO_LEADER, vec![solo_leader])
    );
    // Back again: unfenced and elected for the partition it is the ISR of.
    h.heartbeat(solo_leader, false, false);
    assert!(h.image.is_live(solo_leader));
    assert_eq!(h.partition("solo", 0).leader, solo_leader);
    h.assert_replays();
}

#[test]
fn unclean_election_on_fence_only_where_enabled() {
    let mut h = Harness::with_brokers(2);
    h.create_spec(crate::controller::CreateTopicSpec {
        name: "u".into(),
        assignments: vec![(0, vec![1, 2])],
        num_partitions: -1,
        replication_factor: -1,
        configs: vec![("unclean.leader.election.enable".into(), Some("true".into()))],
    });
    h.create_spec(crate::controller::CreateTopicSpec {
        name: "c".into(),
        assignments: vec![(0, vec![1, 2])],
        num_partitions: -1,
        replication_factor: -1,
        configs: vec![],
    });
    // Broker 2 drops out of both ISRs first (its leader shrinks them).
    for t in ["u", "c"] {
        let p = h.partition(t, 0);
        let req = crate::replica::AlterPartition {
            topic: t.into(),
            partition: 0,
            leader: crate::replica::BrokerId(1),
            leader_epoch: crate::replica::LeaderEpoch(p.leader_epoch),
            partition_epoch: crate::replica::PartitionEpoch(p.partition_epoch),
            new_isr: vec![crate::replica::IsrMember {
                broker: crate::replica::BrokerId(1),
                broker_epoch: crate::replica::BrokerEpoch(h.epoch(1)),
            }],
        };
        let (records, results) = crate::controller::alter_partition(&h.image, &[req]);
        assert!(results[0].is_ok());
        h.commit(records);
    }
    let reply = h.heartbeat(1, true, false);
    assert!(reply.is_fenced);
    let u = h.partition("u", 0);
    assert_eq!((u.leader, u.isr.clone()), (2, vec![2]));
    let c = h.partition("c", 0);
    assert_eq!((c.leader, c.isr.clone()), (NO_LEADER, vec![1]));
    h.assert_replays();
}

#[test]
fn controlled_shutdown_moves_leadership_then_lets_the_broker_go() {
    let mut h = Harness::with_brokers(3);
    h.create("t", 6, 3);
    h.create("solo", 1, 1);
    let leader = h.partition("solo", 0).leader;
    let reply = h.heartbeat(leader, false, true);
    assert!(!reply.should_shutdown, "it still led partitions");
    assert!(h.image.broker(leader).expect("b").in_controlled_shutdown);
    for p in 0..6 {
        let part = h.partition("t", p);
        assert_ne!(part.leader, leader);
        assert!(!part.isr.contains(&leader));
    }
    assert_eq!(h.partition("solo", 0).leader, NO_LEADER);
    let reply = h.heartbeat(leader, false, true);
    assert!(reply.should_shutdown && reply.is_fenced);
    assert!(!h.image.is_live(leader));
    h.assert_replays();
}

/// Kafka lets a broker go only once it has applied the records that moved its leaderships
/// away: until then it still believes it leads, and its waiting produces and fetches would be
/// cut off by the closing listeners instead of being answered NOT_LEADER_OR_FOLLOWER.
#[test]
fn controlled_shutdown_waits_for_the_broker_to_apply_its_leadership_moves() {
    let mut h = Harness::with_brokers(3);
    h.create("t", 3, 3);
    let leader = h.partition("t", 0).leader;
    let before_moves = h.offset();
    let reply = h.heartbeat(leader, false, true);
    assert!(!reply.should_shutdown, "it still led partitions");
    // Leaderships moved in the committed image, but the broker has not applied them yet.
    let reply = h.heartbeat_at(leader, before_moves, false, true);
    assert!(!reply.should_shutdown && !reply.is_fenced, "{reply:?}");
    assert!(h.image.is_live(leader), "not fenced before it may go");
    // Once it reports an offset past the moves it is told to go, and fenced.
    let reply = h.heartbeat(leader, false, true);
    assert!(reply.should_shutdown && reply.is_fenced, "{reply:?}");
    h.assert_replays();
}

#[test]
fn a_fenced_broker_may_shut_down_at_once_and_unregister() {
    let mut h = Harness::new();
    h.register(1, "a").expect("register");
    assert_eq!(
        unregister_broker(&h.image, 7).1,
        ErrorCode::BROKER_ID_NOT_REGISTERED
    );
    let reply = h.heartbeat(1, false, true);
    assert!(reply.should_shutdown);
    let (records, code) = unregister_broker(&h.image, 1);
    assert_eq!(code, ErrorCode::NONE);
    h.commit(records);
    assert!(h.image.broker(1).is_none());
    // A later registration still gets a higher epoch than the one that went.
    let e = h.register(1, "b").expect("register");
    assert!(e > 1);
    let live = Harness::with_brokers(1);
    assert_eq!(
        unregister_broker(&live.image, 1).1,
        ErrorCode::INVALID_REQUEST
    );
    live.assert_replays();
    assert!(matches!(live.log[0], MetadataRecord::RegisterBroker { .. }));
}

#[test]
fn a_broker_unknown_to_a_new_controller_gets_a_full_session() {
    let mut h = Harness::with_brokers(1);
    h.heartbeats = crate::controller::BrokerHeartbeats::new();
    h.now_ms = 1_000_000;
    assert!(fence_expired_brokers(&h.image, &h.config, &mut h.heartbeats, h.now_ms).is_empty());
    let later = h.now_ms + h.config.broker_session_timeout_ms;
    assert_eq!(
        fence_expired_brokers(&h.image, &h.config, &mut h.heartbeats, later).len(),
        1
    );
}
