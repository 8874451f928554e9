//! Per-IP connection limits (Kafka's `ConnectionQuotas`: `max.connections.per.ip` and
//! `max.connections.per.ip.overrides`) and the log line for each refused connection.
//!
//! A connection over its address's limit is accepted and closed at once, as Kafka does, and
//! logged at info. The log is rate-limited so that a flood of refused connections cannot fill
//! the disk: past [`REJECT_LOG_LINES_PER_SEC`] lines in a second the rest are counted and the
//! count is reported with the next line logged.
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

/// Refused-connection lines logged per second at most.
pub const REJECT_LOG_LINES_PER_SEC: u32 = 10;

pub struct ConnectionQuotas {
    default_max_per_ip: usize,
    overrides: HashMap<IpAddr, usize>,
    counts: Mutex<HashMap<IpAddr, usize>>,
    reject_log: Mutex<RejectLog>,
}

struct RejectLog {
    window_start: Option<Instant>,
    logged_in_window: u32,
    suppressed: u64,
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooManyConnections {
    pub ip: IpAddr,
    pub limit: usize,
}

impl ConnectionQuotas {
    /// Limits from config; override hosts are resolved now (Kafka resolves them when the
    /// config is applied), and a host that does not resolve is an error naming it.
    pub fn new(
        max_connections_per_ip: i32,
        overrides: &std::collections::BTreeMap<String, i32>,
    ) -> Result<Arc<ConnectionQuotas>, String> {
        let mut resolved = HashMap::new();
        for (host, count) in overrides {
            let ips: Vec<IpAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => (host.as_str(), 0)
                    .to_socket_addrs()
                    .map_err(|e| {
                        format!("max.connections.per.ip.overrides: cannot resolve {host}: {e}")
                    })?
                    .map(|a| a.ip())
                    .collect(),
            };
            for ip in ips {
                resolved.insert(ip, (*count).max(0) as usize);
            }
        }
        Ok(Arc::new(ConnectionQuotas {
            default_max_per_ip: max_connections_per_ip.max(0) as usize,
            overrides: resolved,
            counts: Mutex::new(HashMap::new()),
            reject_log: Mutex::new(RejectLog {
                window_start: None,
                logged_in_window: 0,
                suppressed: 0,
            }),
        }))
    }

    fn limit_for(&self, ip: IpAddr) -> usize {
        self.overrides
            .get(&ip)
            .copied()
            .unwrap_or(self.default_max_per_ip)
    }

    /// Takes a slot for a connection from `ip`, given back when the slot drops.
    pub fn try_acquire(self: &Arc<Self>, ip: IpAddr) -> Result<IpSlot, TooManyConnections> {
        let limit = self.limit_for(ip);
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let count = counts.entry(ip).or_insert(0);
        if *count >= limit {
            if *count == 0 {
                counts.remove(&ip);
            }
            return Err(TooManyConnections { ip, limit });
        }
        *count += 1;
        Ok(IpSlot {
            quotas: self.clone(),
            ip,
        })
    }

    /// Connections open from `ip`.
    pub fn count(&self, ip: IpAddr) -> usize {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.get(&ip).copied().unwrap_or(0)
    }

    /// Logs a refused connection, rate-limited.
    pub fn log_rejected(&self, peer: SocketAddr, listener: &str, why: &TooManyConnections) {
        let Some(suppressed) = self.admit_log_line(Instant::now()) else {
            return;
        };
        tracing::info!(
            %peer,
            listener,
            max_connections_per_ip = why.limit,
            suppressed_since_last_line = suppressed,
            "Rejected connection from {}: the address already has the configured maximum of {} connections",
            why.ip,
            why.limit
        );
    }

    /// Whether a line may be logged at `now`, with the count of lines suppressed since the last.
    fn admit_log_line(&self, now: Instant) -> Option<u64> {
        let mut log = self.reject_log.lock().unwrap_or_else(|p| p.into_inner());
        let new_window = match log.window_start {
            None => true,
            Some(s) => now.duration_since(s) >= std::time::Duration::from_secs(1),
        };
        if new_window {
            log.window_start = Some(now);
            log.logged_in_window = 0;
        }
        if log.logged_in_window >= REJECT_LOG_LINES_PER_SEC {
            log.suppressed += 1;
            return None;
        }
        log.logged_in_window += 1;
        Some(std::mem::take(&mut log.suppressed))
    }
}

/// One connection's place in its address's count.
pub struct IpSlot {
    quotas: Arc<ConnectionQuotas>,
    ip: IpAddr,
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut counts = self.quotas.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = counts.get_mut(&self.ip) {
            *c -= 1;
            if *c == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_limit_is_per_address_and_overrides_win() {
        let overrides = BTreeMap::from([("10.0.0.2".to_string(), 0), ("10.0.0.3".to_string(), 3)]);
        let q = ConnectionQuotas::new(2, &overrides).unwrap();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let s1 = q.try_acquire(a).unwrap();
        let _s2 = q.try_acquire(a).unwrap();
        assert_eq!(
            q.try_acquire(a).err(),
            Some(TooManyConnections { ip: a, limit: 2 })
        );
        drop(s1);
        let _s3 = q
            .try_acquire(a)
            .expect("a closed connection frees its slot");
        assert!(q.try_acquire("10.0.0.2".parse().unwrap()).is_err());
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        let _held: Vec<IpSlot> = (0..3).map(|_| q.try_acquire(c).unwrap()).collect();
        assert!(q.try_acquire(c).is_err());
        assert_eq!(q.count(c), 3);
    }

    #[test]
    fn refused_connection_lines_are_rate_limited() {
        let q = ConnectionQuotas::new(1, &BTreeMap::new()).unwrap();
        let t0 = Instant::now();
        let admitted = (0..100).filter(|_| q.admit_log_line(t0).is_some()).count();
        assert_eq!(admitted, REJECT_LOG_LINES_PER_SEC as usize);
        // The next window logs again and reports what the flood suppressed.
        let later = t0 + std::time::Duration::from_secs(1);
        assert_eq!(
            q.admit_log_line(later),
            Some(100 - REJECT_LOG_LINES_PER_SEC as u64)
        );
        assert_eq!(q.admit_log_line(later), Some(0));
    }
}
