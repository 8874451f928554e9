//! The `simple` share-group assignor (KIP-932's `SimpleAssignor`): every subscribed partition
//! goes to at least one member, every member gets at least one of its subscribed partitions
//! when there is one, and loads stay balanced. With fewer members than partitions the members
//! split the partitions between them; with more, several members share each partition, which
//! share groups allow because members acquire records, not partitions.
//!
//! Deterministic (ties go to the smaller member id or partition) and sticky where balance
//! allows: a member keeps a partition it already had when it is among the least loaded.
use std::collections::{BTreeMap, BTreeSet};

use crate::coordinator::consumer::Assignment;
use crate::protocol::codec::Uuid;

/// One member as the assignor sees it.
#[derive(Debug, Clone, Default)]
pub struct MemberSpec {
    /// Ids of the topics the member subscribes to that exist.
    pub topics: BTreeSet<Uuid>,
    /// The member's previous target assignment.
    pub current: Assignment,
}

/// Computes the target assignment of every member; `partitions` maps topic id to count.
pub fn assign(
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    let mut load: BTreeMap<&str, usize> = members.keys().map(|m| (m.as_str(), 0)).collect();
    let mut sharing: BTreeMap<(Uuid, i32), usize> = BTreeMap::new();
    let held =
        |m: &str, t: Uuid, p: i32| members[m].current.get(&t).is_some_and(|ps| ps.contains(&p));

    // Every partition to its least loaded subscriber; topics with fewer subscribers first,
    // so members with a narrower subscription fill up before the wider ones are placed.
    let mut topics: Vec<(Uuid, i32, Vec<&str>)> = partitions
        .iter()
        .map(|(&topic, &count)| {
            let candidates = members
                .iter()
                .filter(|(_, s)| s.topics.contains(&topic))
                .map(|(m, _)| m.as_str())
                .collect();
            (topic, count, candidates)
        })
        .collect();
    topics.sort_by_key(|(topic, _, c)| (c.len(), *topic));
    for (topic, count, candidates) in topics {
        for p in 0..count {
            let Some(best) = candidates
                .iter()
                .copied()
                .min_by_key(|m| (load[m], !held(m, topic, p), *m))
            else {
                continue;
            };
            out.get_mut(best)
                .unwrap()
                .entry(topic)
                .or_default()
                .insert(p);
            *load.get_mut(best).unwrap() += 1;
            *sharing.entry((topic, p)).or_default() += 1;
        }
    }

    // Members left without a partition share the least shared of theirs.
    for (member, spec) in members {
        if load[member.as_str()] > 0 {
            continue;
        }
        let best = spec
            .topics
            .iter()
            .filter_map(|t| partitions.get(t).map(|c| (*t, *c)))
            .flat_map(|(t, c)| (0..c).map(move |p| (t, p)))
            .min_by_key(|&(t, p)| {
                (
                    sharing.get(&(t, p)).copied().unwrap_or(0),
                    !held(member, t, p),
                    (t, p),
                )
            });
        if let Some((t, p)) = best {
            out.get_mut(member).unwrap().entry(t).or_default().insert(p);
            *load.get_mut(member.as_str()).unwrap() += 1;
            *sharing.entry((t, p)).or_default() += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(topics: &[Uuid]) -> MemberSpec {
        MemberSpec {
            topics: topics.iter().copied().collect(),
            current: Assignment::new(),
        }
    }

    fn count(a: &Assignment) -> usize {
        a.values().map(|ps| ps.len()).sum()
    }

    #[test]
    fn fewer_members_split_the_partitions_more_members_share_them() {
        let t = Uuid([1; 16]);
        let members: BTreeMap<String, MemberSpec> = ["a", "b"]
            .iter()
            .map(|m| (m.to_string(), spec(&[t])))
            .collect();
        let parts = BTreeMap::from([(t, 5)]);
        let out = assign(&members, &parts);
        let (a, b) = (count(&out["a"]), count(&out["b"]));
        assert_eq!(a + b, 5, "each partition once");
        assert!(a.abs_diff(b) <= 1);

        let members: BTreeMap<String, MemberSpec> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|m| (m.to_string(), spec(&[t])))
            .collect();
        let out = assign(&members, &BTreeMap::from([(t, 2)]));
        for (m, a) in &out {
            assert_eq!(count(a), 1, "{m} gets one partition");
        }
        let on_zero = out.values().filter(|a| a[&t].contains(&0)).count();
        assert!(on_zero == 2 || on_zero == 3, "sharing balanced: {on_zero}");
    }

    #[test]
    fn members_only_get_their_topics_and_keep_what_they_had() {
        let (t1, t2) = (Uuid([1; 16]), Uuid([2; 16]));
        let mut members: BTreeMap<String, MemberSpec> = BTreeMap::new();
        members.insert("a".into(), spec(&[t1]));
        members.insert("b".into(), spec(&[t1, t2]));
        let parts = BTreeMap::from([(t1, 2), (t2, 2)]);
        let out = assign(&members, &parts);
        assert!(!out["a"].contains_key(&t2));
        assert_eq!((count(&out["a"]), count(&out["b"])), (2, 2));
        // Stickiness: feed the result back in; nothing moves.
        for (m, a) in &out {
            members.get_mut(m).unwrap().current = a.clone();
        }
        assert_eq!(assign(&members, &parts), out);
        // A member subscribed to a missing topic gets nothing.
        members.insert("c".into(), spec(&[Uuid([9; 16])]));
        assert!(assign(&members, &parts)["c"].is_empty());
    }
}
