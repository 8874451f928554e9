//! Replica placement for new partitions without racks (Kafka's `StripedReplicaPlacer` in its
//! single-rack case, which is the classic `assignReplicasToBrokersRackUnaware`): leaders go
//! round-robin over the usable brokers from a starting offset, and each partition's followers
//! follow its leader at a shift that changes every full round, so that both leaderships and
//! replicas spread evenly. Kafka picks the starting offset at random; here it is derived from
//! the image (the number of partitions that exist), so successive topics start on different
//! brokers and a replay places the same way.

/// Why no placement exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementError {
    /// Fewer usable brokers than the replication factor (or a factor below 1).
    InvalidReplicationFactor,
}

/// Assigns `replication_factor` distinct brokers out of `brokers` (sorted, usable) to each of
/// `count` partitions; `start` chooses the first leader.
pub fn place_replicas(
    brokers: &[i32],
    count: i32,
    replication_factor: i16,
    start: usize,
) -> Result<Vec<Vec<i32>>, PlacementError> {
    let n = brokers.len();
    let rf = usize::try_from(replication_factor).unwrap_or(0);
    if rf == 0 || rf > n {
        return Err(PlacementError::InvalidReplicationFactor);
    }
    let first_leader = start % n;
    let mut shift = start % n;
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    for p in 0..usize::try_from(count).unwrap_or(0) {
        if p > 0 && p % n == 0 {
            shift += 1;
        }
        let leader = (first_leader + p) % n;
        let mut replicas = Vec::with_capacity(rf);
        replicas.push(brokers[leader]);
        for j in 0..rf - 1 {
            // 1 + (shift + j) % (n - 1) takes rf - 1 distinct values in 1..n: never the leader.
            let offset = 1 + (shift + j) % (n - 1);
            replicas.push(brokers[(leader + offset) % n]);
        }
        out.push(replicas);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_are_distinct_and_leaders_spread() {
        let brokers = [1, 2, 3, 4];
        for start in 0..8 {
            let placed = place_replicas(&brokers, 12, 3, start).expect("placement");
            let mut leaders = [0; 5];
            for r in &placed {
                let mut s = r.clone();
                s.sort();
                s.dedup();
                assert_eq!(s.len(), 3, "{r:?}");
                leaders[r[0] as usize] += 1;
            }
            assert_eq!(&leaders[1..], &[3, 3, 3, 3]);
        }
        assert_ne!(
            place_replicas(&brokers, 1, 1, 0).expect("p")[0][0],
            place_replicas(&brokers, 1, 1, 1).expect("p")[0][0]
        );
    }

    #[test]
    fn refuses_a_factor_above_the_brokers() {
        assert_eq!(
            place_replicas(&[1, 2], 1, 3, 0),
            Err(PlacementError::InvalidReplicationFactor)
        );
        assert_eq!(
            place_replicas(&[1, 2], 1, 0, 0),
            Err(PlacementError::InvalidReplicationFactor)
        );
        assert_eq!(
            place_replicas(&[5], 2, 1, 7).expect("p"),
            vec![vec![5], vec![5]]
        );
    }
}
