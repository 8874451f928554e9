//! Share sessions (KIP-932's share-session cache, Kafka's `ShareSessionCache`): for each
//! (group, member), the partitions its ShareFetch requests read and the epoch its next
//! ShareFetch or ShareAcknowledge must carry.
//!
//! Epoch 0 opens a session (replacing one the member had) from the partitions of that
//! request; -1 closes it; any other epoch must be the session's next one, after which the
//! session adds the request's partitions, drops its forgotten ones, and expects the next epoch.
//! A wrong epoch is INVALID_SHARE_SESSION_EPOCH, a missing session SHARE_SESSION_NOT_FOUND, and
//! a full cache (`group.share.max.share.sessions`) SHARE_SESSION_LIMIT_REACHED.
use std::collections::{BTreeSet, HashMap};

use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;

/// `ShareRequestMetadata.INITIAL_EPOCH` and `FINAL_EPOCH`.
pub const INITIAL_EPOCH: i32 = 0;
pub const FINAL_EPOCH: i32 = -1;

/// A (topic id, partition) a session reads.
pub type SessionPartition = (Uuid, i32);

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareSession {
    /// The epoch the member's next request must carry.
    pub next_epoch: i32,
    pub partitions: BTreeSet<SessionPartition>,
    /// The connection the member last used: the session ends when it closes.
    pub connection_id: u64,
}

#[derive(Debug)]
pub struct ShareSessionCache {
    sessions: HashMap<(String, String), ShareSession>,
    max_sessions: usize,
}

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

impl ShareSessionCache {
    pub fn new(max_sessions: usize) -> Self {
        ShareSessionCache {
            sessions: HashMap::new(),
            max_sessions,
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// A ShareFetch at `epoch` (not -1): opens or advances the session and answers the
    /// partitions it now reads.
    pub fn fetch(
        &mut self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
        added: &[SessionPartition],
        forgotten: &[SessionPartition],
        connection_id: u64,
    ) -> Result<Vec<SessionPartition>, ErrorCode> {
        let key = (group_id.to_string(), member_id.to_string());
        if epoch == INITIAL_EPOCH {
            if !self.sessions.contains_key(&key) && self.sessions.len() >= self.max_sessions {
                return Err(ErrorCode::SHARE_SESSION_LIMIT_REACHED);
            }
            let session = ShareSession {
                next_epoch: 1,
                partitions: added.iter().copied().collect(),
                connection_id,
            };
            let partitions = session.partitions.iter().copied().collect();
            self.sessions.insert(key, session);
            return Ok(partitions);
        }
        let session = self.check(&key, epoch)?;
        session.partitions.extend(added.iter().copied());
        for p in forgotten {
            session.partitions.remove(p);
        }
        session.next_epoch = next(epoch);
        session.connection_id = connection_id;
        Ok(session.partitions.iter().copied().collect())
    }

    /// A ShareAcknowledge at `epoch` (not 0): checks and advances the session; at -1 removes
    /// it and answers the partitions it read.
    pub fn acknowledge(
        &mut self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
    ) -> Result<Option<ShareSession>, ErrorCode> {
        let key = (group_id.to_string(), member_id.to_string());
        if epoch == FINAL_EPOCH {
            return Ok(self.sessions.remove(&key));
        }
        if epoch == INITIAL_EPOCH {
            return Err(ErrorCode::INVALID_SHARE_SESSION_EPOCH);
        }
        let session = self.check(&key, epoch)?;
        session.next_epoch = next(epoch);
        Ok(None)
    }

    /// Removes the sessions last used on a connection that closed; their (group, member).
    pub fn remove_connection(&mut self, connection_id: u64) -> Vec<(String, String)> {
        let gone: Vec<(String, String)> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.connection_id == connection_id)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.sessions.remove(k);
        }
        gone
    }

    /// Removes the member's session (the member left its group or closed it).
    pub fn remove(&mut self, group_id: &str, member_id: &str) -> Option<ShareSession> {
        self.sessions
            .remove(&(group_id.to_string(), member_id.to_string()))
    }

    fn check(
        &mut self,
        key: &(String, String),
        epoch: i32,
    ) -> Result<&mut ShareSession, ErrorCode> {
        let session = self
            .sessions
            .get_mut(key)
            .ok_or(ErrorCode::SHARE_SESSION_NOT_FOUND)?;
        if session.next_epoch != epoch {
            return Err(ErrorCode::INVALID_SHARE_SESSION_EPOCH);
        }
        Ok(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Uuid = Uuid([3; 16]);

    #[test]
    fn epochs_open_advance_and_close_a_session() {
        let mut c = ShareSessionCache::new(2);
        assert_eq!(
            c.fetch("g", "m", 1, &[], &[], 7),
            Err(ErrorCode::SHARE_SESSION_NOT_FOUND)
        );
        assert_eq!(c.fetch("g", "m", 0, &[(T, 0)], &[], 7), Ok(vec![(T, 0)]));
        // The next fetch carries epoch 1, adds a partition and keeps the first.
        assert_eq!(
            c.fetch("g", "m", 1, &[(T, 1)], &[], 7),
            Ok(vec![(T, 0), (T, 1)])
        );
        // A repeated epoch is refused and changes nothing.
        assert_eq!(
            c.fetch("g", "m", 1, &[], &[(T, 0)], 7),
            Err(ErrorCode::INVALID_SHARE_SESSION_EPOCH)
        );
        assert_eq!(c.acknowledge("g", "m", 2), Ok(None));
        assert_eq!(c.fetch("g", "m", 3, &[], &[(T, 0)], 7), Ok(vec![(T, 1)]));
        assert_eq!(
            c.acknowledge("g", "m", 0),
            Err(ErrorCode::INVALID_SHARE_SESSION_EPOCH)
        );
        let closed = c.acknowledge("g", "m", -1).unwrap().unwrap();
        assert_eq!(
            closed.partitions.into_iter().collect::<Vec<_>>(),
            vec![(T, 1)]
        );
        assert!(c.is_empty());
    }

    #[test]
    fn the_cache_is_bounded_and_reopening_replaces() {
        let mut c = ShareSessionCache::new(1);
        c.fetch("g", "a", 0, &[(T, 0)], &[], 7).unwrap();
        assert_eq!(
            c.fetch("g", "b", 0, &[], &[], 7),
            Err(ErrorCode::SHARE_SESSION_LIMIT_REACHED)
        );
        // The same member reopening is not a new session.
        assert_eq!(c.fetch("g", "a", 0, &[(T, 2)], &[], 7), Ok(vec![(T, 2)]));
        assert_eq!(c.len(), 1);
        assert!(c.remove("g", "a").is_some());
        c.fetch("g", "c", 0, &[], &[], 9).unwrap();
        assert_eq!(
            c.remove_connection(9),
            vec![("g".to_string(), "c".to_string())]
        );
        assert!(c.fetch("g", "b", 0, &[], &[], 7).is_ok());
    }
}
