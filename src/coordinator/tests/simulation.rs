//! A deterministic simulation: consumers that join, sync, heartbeat, commit, leave, crash and
//! restart at random under a manual clock. After every step: no response is lost or doubled,
//! generations only grow, a Stable or Empty group equals its rebuild from the log, and every
//! member receives exactly the bytes the leader assigned it. At the end, with the chaos
//! stopped, the live consumers converge to one Stable generation.
use super::*;
use crate::coordinator::group::ClassicGroupState;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone)]
enum Phase {
    Idle,
    Joining(ResponseId, i64),
    Syncing(ResponseId, i64, i32),
    Stable(i32),
    Crashed(i64),
}

struct Consumer {
    member_id: String,
    instance: Option<String>,
    phase: Phase,
    last_heartbeat: i64,
}

const BOUND_MS: i64 = REBALANCE as i64 + SESSION as i64 + 1_000;

fn step(h: &mut Harness, c: &mut Consumer, rng: &mut Rng, chaos: bool) {
    let now = h.now();
    match c.phase.clone() {
        Phase::Idle => {
            let id = h.join(5, &c.member_id, c.instance.as_deref());
            c.phase = Phase::Joining(id, now);
        }
        Phase::Crashed(until) => {
            if now >= until {
                // Restarts as a brand-new member.
                c.member_id.clear();
                c.phase = Phase::Idle;
            }
        }
        Phase::Joining(id, since) => match h.join_resp(id) {
            None => assert!(
                now - since <= BOUND_MS,
                "join unanswered for {} ms",
                now - since
            ),
            Some(r) if r.error_code == code(ErrorCode::MEMBER_ID_REQUIRED) => {
                c.member_id = r.member_id;
                c.phase = Phase::Idle;
            }
            Some(r) if r.error_code == 0 => {
                c.member_id = r.member_id.clone();
                let assignments: Vec<(String, Vec<u8>)> = r
                    .members
                    .iter()
                    .map(|m| {
                        // Static members are assigned their instance id, dynamic ones their
                        // member id, so assignments survive static restarts.
                        let tag = m
                            .group_instance_id
                            .clone()
                            .unwrap_or_else(|| m.member_id.clone());
                        (m.member_id.clone(), tag.into_bytes())
                    })
                    .collect();
                let refs: Vec<(&str, &[u8])> = assignments
                    .iter()
                    .map(|(m, a)| (m.as_str(), a.as_slice()))
                    .collect();
                let id = h.sync(&c.member_id, r.generation_id, &refs);
                c.last_heartbeat = now;
                c.phase = Phase::Syncing(id, now, r.generation_id);
            }
            Some(r) => {
                if r.error_code == code(ErrorCode::UNKNOWN_MEMBER_ID) {
                    c.member_id.clear();
                }
                c.phase = Phase::Idle;
            }
        },
        Phase::Syncing(id, since, generation) => match h.sync_resp(id) {
            None => assert!(
                now - since <= BOUND_MS,
                "sync unanswered for {} ms",
                now - since
            ),
            Some(r) if r.error_code == 0 => {
                let tag = c.instance.clone().unwrap_or_else(|| c.member_id.clone());
                assert_eq!(
                    r.assignment.as_ref(),
                    tag.as_bytes(),
                    "assignment bytes as sent"
                );
                c.phase = Phase::Stable(generation);
            }
            Some(r) => {
                if r.error_code == code(ErrorCode::UNKNOWN_MEMBER_ID) {
                    c.member_id.clear();
                }
                c.phase = Phase::Idle;
            }
        },
        Phase::Stable(generation) => {
            let roll = rng.below(100);
            if chaos && roll < 3 {
                // Crash: silent for a while, then restart.
                c.phase = Phase::Crashed(now + rng.below(3 * SESSION as u64) as i64);
            } else if chaos && roll < 5 {
                h.leave(5, &[(&c.member_id, None)]);
                c.member_id.clear();
                c.phase = Phase::Idle;
            } else if roll < 15 {
                let codes = h.commit(
                    9,
                    GROUP,
                    &c.member_id,
                    generation,
                    &[("t", 0, now, Some("m"))],
                );
                assert!(
                    codes.iter().all(|c| *c == 0
                        || *c == code(ErrorCode::ILLEGAL_GENERATION)
                        || *c == code(ErrorCode::UNKNOWN_MEMBER_ID)
                        || *c == code(ErrorCode::REBALANCE_IN_PROGRESS)),
                    "{codes:?}"
                );
            } else if now - c.last_heartbeat >= 3_000 {
                c.last_heartbeat = now;
                match h.heartbeat(&c.member_id, generation) {
                    0 => {}
                    e if e == code(ErrorCode::REBALANCE_IN_PROGRESS) => c.phase = Phase::Idle,
                    e => {
                        assert!(
                            e == code(ErrorCode::UNKNOWN_MEMBER_ID)
                                || e == code(ErrorCode::ILLEGAL_GENERATION),
                            "{e}"
                        );
                        if e == code(ErrorCode::UNKNOWN_MEMBER_ID) {
                            c.member_id.clear();
                        }
                        c.phase = Phase::Idle;
                    }
                }
            }
        }
    }
}

fn run(seed: u64, statics: usize) {
    let mut h = Harness::with_config(GroupConfig {
        group_initial_rebalance_delay_ms: 500,
        ..Default::default()
    });
    let mut rng = Rng(seed | 1);
    let mut consumers: Vec<Consumer> = (0..4)
        .map(|i| Consumer {
            member_id: String::new(),
            instance: (i < statics).then(|| format!("instance-{i}")),
            phase: Phase::Idle,
            last_heartbeat: 0,
        })
        .collect();
    let mut last_generation = 0;
    for round in 0..3_000 {
        let chaos = round < 2_000;
        let i = rng.below(consumers.len() as u64) as usize;
        step(&mut h, &mut consumers[i], &mut rng, chaos);
        h.advance(rng.below(400) as i64);
        if let Some(g) = h.shard.group(GROUP) {
            assert!(g.generation_id >= last_generation, "generation went back");
            last_generation = g.generation_id;
            if let Some(leader) = &g.leader_id {
                assert!(g.members.contains_key(leader), "leader is a member");
            }
            if matches!(
                g.state,
                ClassicGroupState::Stable | ClassicGroupState::Empty
            ) {
                h.assert_replay_matches();
            }
        }
    }
    assert!(
        last_generation >= 10,
        "seed {seed}: too little churn ({last_generation} generations)"
    );
    // Chaos is over: everyone alive ends up in one Stable generation.
    for _ in 0..2_000 {
        for c in consumers.iter_mut() {
            step(&mut h, c, &mut rng, false);
        }
        h.advance(100);
    }
    let g = h.shard.group(GROUP).expect("group");
    assert_eq!(g.state, ClassicGroupState::Stable, "seed {seed}");
    let live = consumers
        .iter()
        .filter(|c| !matches!(c.phase, Phase::Crashed(_)))
        .count();
    assert_eq!(g.members.len(), live, "seed {seed}");
    for c in &consumers {
        assert!(
            matches!(c.phase, Phase::Stable(gen) if gen == g.generation_id),
            "seed {seed}: {:?}",
            c.phase
        );
    }
    h.assert_replay_matches();
}

#[test]
fn random_membership_churn_converges() {
    for seed in [1, 2, 3, 42, 1234, 0xdead_beef] {
        run(seed, 0);
    }
}

#[test]
fn random_churn_with_static_members_converges() {
    for seed in [5, 6, 7, 99, 4321] {
        run(seed, 2);
    }
}
