//! Per-IP connection limits (Kafka's `ConnectionQuotas`: `max.connections.per.ip` and
//! `max.connections.per.ip.overrides`) and the log line for each refused connection.
//!
//! A connection over its address's limit is accepted and closed at once, as Kafka does, and
//! logged at info. The log is rate-limited per source address (`logging::admit_line`) so
//! that a flood of refused connections cannot fill the disk: the rest are counted and the
//! count is reported with the next line logged for that address.
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use crate::logging::LineKind;

pub struct ConnectionQuotas {
    /// Replaced when the dynamic broker configs change them (Kafka's
    /// `ConnectionQuotas.updateMaxConnectionsPerIp`); open connections stay.
    limits: Mutex<PerIpLimits>,
    counts: Mutex<HashMap<IpAddr, usize>>,
}

struct PerIpLimits {
    default_max_per_ip: usize,
    overrides: HashMap<IpAddr, usize>,
}

impl PerIpLimits {
    /// Override hosts are resolved now (Kafka resolves them when the config is applied), and
    /// a host that does not resolve is an error naming it.
    fn resolve(
        max_connections_per_ip: i32,
        overrides: &std::collections::BTreeMap<String, i32>,
    ) -> Result<PerIpLimits, String> {
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
        Ok(PerIpLimits {
            default_max_per_ip: max_connections_per_ip.max(0) as usize,
            overrides: resolved,
        })
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooManyConnections {
    pub ip: IpAddr,
    pub limit: usize,
}

impl ConnectionQuotas {
    /// Limits from config (see [`PerIpLimits::resolve`]).
    pub fn new(
        max_connections_per_ip: i32,
        overrides: &std::collections::BTreeMap<String, i32>,
    ) -> Result<Arc<ConnectionQuotas>, String> {
        Ok(Arc::new(ConnectionQuotas {
            limits: Mutex::new(PerIpLimits::resolve(max_connections_per_ip, overrides)?),
            counts: Mutex::new(HashMap::new()),
        }))
    }

    /// New limits for the connections accepted from now on.
    pub fn reconfigure(
        &self,
        max_connections_per_ip: i32,
        overrides: &std::collections::BTreeMap<String, i32>,
    ) -> Result<(), String> {
        let limits = PerIpLimits::resolve(max_connections_per_ip, overrides)?;
        *self.limits.lock().unwrap_or_else(|p| p.into_inner()) = limits;
        Ok(())
    }

    fn limit_for(&self, ip: IpAddr) -> usize {
        let limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        limits
            .overrides
            .get(&ip)
            .copied()
            .unwrap_or(limits.default_max_per_ip)
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

    /// Logs a refused connection, rate-limited per source address.
    pub fn log_rejected(&self, peer: SocketAddr, listener: &str, why: &TooManyConnections) {
        let Some(suppressed) = crate::logging::admit_line(LineKind::RejectedConnection, why.ip)
        else {
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
        // A dynamic change applies to the next connection; open ones stay.
        q.reconfigure(5, &BTreeMap::new()).unwrap();
        assert!(q.try_acquire(c).is_ok());
        q.reconfigure(1, &BTreeMap::new()).unwrap();
        assert_eq!(
            q.try_acquire(a).err(),
            Some(TooManyConnections { ip: a, limit: 1 })
        );
        assert_eq!(q.count(a), 2);
    }
}
