//! Server-side assignors of KIP-848 (`group.consumer.assignors`): `uniform` (Kafka's
//! `UniformAssignor`, the default) and `range` (Kafka's server `RangeAssignor`).
//!
//! - `uniform` spreads the subscribed partitions so that member counts differ by at most one
//!   among members that could take them, and is sticky: a member keeps the partitions of its
//!   previous target that are still valid, then free partitions go to the least-loaded eligible
//!   member, then partitions move from the most to the least loaded until balanced.
//! - `range` gives each member a contiguous range of every topic it subscribes to, members in
//!   member-id order, the first `partitions % members` members one more. Topics with the same
//!   partition count and subscribers are therefore co-partitioned: partition `i` of each goes
//!   to the same member.
//!
//! Both are deterministic (ordered maps, ties broken by member id), so one input always gives
//! the same target assignment.
use std::collections::{BTreeMap, BTreeSet};

use super::Assignment;
use crate::protocol::codec::Uuid;

pub const UNIFORM_ASSIGNOR_NAME: &str = "uniform";
pub const RANGE_ASSIGNOR_NAME: &str = "range";

/// What an assignor sees of one member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSubscription {
    /// Subscribed topics that exist.
    pub topics: BTreeSet<Uuid>,
    /// The member's current target assignment (for stickiness).
    pub current: Assignment,
}

/// The input of an assignment: members, and the partition count of every subscribed topic.
#[derive(Debug, Clone, Default)]
pub struct GroupSpec {
    pub members: BTreeMap<String, MemberSubscription>,
    pub partitions: BTreeMap<Uuid, i32>,
}

/// Runs the named assignor; `None` if no such assignor exists.
pub fn assign(name: &str, spec: &GroupSpec) -> Option<BTreeMap<String, Assignment>> {
    match name {
        UNIFORM_ASSIGNOR_NAME => Some(uniform(spec)),
        RANGE_ASSIGNOR_NAME => Some(range(spec)),
        _ => None,
    }
}

fn partition_count(spec: &GroupSpec, t: &Uuid) -> i32 {
    spec.partitions.get(t).copied().unwrap_or(0).max(0)
}

/// Kafka's `RangeAssignor` for KIP-848.
pub fn range(spec: &GroupSpec) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = spec
        .members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    let topics: BTreeSet<Uuid> = spec
        .members
        .values()
        .flat_map(|m| m.topics.iter().copied())
        .collect();
    for t in topics {
        let n = partition_count(spec, &t);
        let subscribers: Vec<&String> = spec
            .members
            .iter()
            .filter(|(_, m)| m.topics.contains(&t))
            .map(|(id, _)| id)
            .collect();
        if subscribers.is_empty() || n == 0 {
            continue;
        }
        let per = n / subscribers.len() as i32;
        let extra = n % subscribers.len() as i32;
        let mut start = 0;
        for (i, id) in subscribers.into_iter().enumerate() {
            let len = per + i32::from((i as i32) < extra);
            if len > 0 {
                out.get_mut(id)
                    .expect("subscriber is a member")
                    .insert(t, (start..start + len).collect());
            }
            start += len;
        }
    }
    out
}

/// Kafka's `UniformAssignor` (balanced and sticky).
pub fn uniform(spec: &GroupSpec) -> BTreeMap<String, Assignment> {
    let mut owner: BTreeMap<(Uuid, i32), String> = BTreeMap::new();
    let mut out: BTreeMap<String, BTreeSet<(Uuid, i32)>> = spec
        .members
        .keys()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    let eligible = |m: &str, t: &Uuid| {
        spec.members
            .get(m)
            .map(|s| s.topics.contains(t))
            .unwrap_or(false)
    };
    // Homogeneous groups have one quota for everyone: a member keeps at most the quota of its
    // previous partitions (one more for the first `extra` members that have more).
    let total: i64 = spec
        .partitions
        .iter()
        .filter(|(t, _)| spec.members.values().any(|m| m.topics.contains(t)))
        .map(|(_, n)| (*n).max(0) as i64)
        .sum();
    let homogeneous = {
        let mut subs = spec.members.values().map(|m| &m.topics);
        let first = subs.next();
        subs.all(|s| Some(s) == first)
    };
    let n_members = spec.members.len().max(1) as i64;
    let (min_quota, mut extra_slots) = (total / n_members, total % n_members);

    // 1. Stickiness: keep still-valid partitions of the previous target.
    for (id, m) in &spec.members {
        let mut kept = 0i64;
        for (t, ps) in &m.current {
            if !eligible(id, t) {
                continue;
            }
            for p in ps {
                if *p < 0 || *p >= partition_count(spec, t) || owner.contains_key(&(*t, *p)) {
                    continue;
                }
                if homogeneous && kept >= min_quota {
                    if kept == min_quota && extra_slots > 0 {
                        extra_slots -= 1;
                    } else {
                        continue;
                    }
                }
                kept += 1;
                owner.insert((*t, *p), id.clone());
                out.get_mut(id).expect("member").insert((*t, *p));
            }
        }
    }
    // 2. Free partitions to the least-loaded eligible member.
    for (t, n) in &spec.partitions {
        for p in 0..(*n).max(0) {
            if owner.contains_key(&(*t, p)) {
                continue;
            }
            let best = out
                .iter()
                .filter(|(id, _)| eligible(id, t))
                .min_by_key(|(id, ps)| (ps.len(), (*id).clone()))
                .map(|(id, _)| id.clone());
            if let Some(id) = best {
                owner.insert((*t, p), id.clone());
                out.get_mut(&id).expect("member").insert((*t, p));
            }
        }
    }
    // 3. Balance: move partitions from loaded members to eligible members with two fewer.
    let mut budget = total.saturating_mul(2).max(16);
    'outer: while budget > 0 {
        budget -= 1;
        let mut by_load: Vec<(usize, String)> =
            out.iter().map(|(id, ps)| (ps.len(), id.clone())).collect();
        by_load.sort();
        for (hi_len, hi) in by_load.iter().rev() {
            for (lo_len, lo) in by_load.iter() {
                if hi_len < &(lo_len + 2) {
                    break;
                }
                let movable = out[hi].iter().rev().find(|(t, _)| eligible(lo, t)).copied();
                if let Some(tp) = movable {
                    out.get_mut(hi).expect("member").remove(&tp);
                    out.get_mut(lo).expect("member").insert(tp);
                    continue 'outer;
                }
            }
        }
        break;
    }
    out.into_iter()
        .map(|(id, ps)| {
            let mut a = Assignment::new();
            for (t, p) in ps {
                a.entry(t).or_default().insert(p);
            }
            (id, a)
        })
        .collect()
}
