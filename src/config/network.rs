//! The network front's settings that need more than a registry type: Kafka's
//! `max.connections.per.ip.overrides` (`host:count` entries) and the cross-key checks of
//! `SocketServerConfigs` (per-IP limits, `queued.max.request.bytes`).
use std::collections::BTreeMap;

use super::registry::split_list;
use super::ConfigError;

/// Parses `max.connections.per.ip.overrides`: `host:count` entries, where host is a host name
/// or an IP address (resolved when the listeners start) and count is at least 0.
pub fn parse_per_ip_overrides(raw: &str) -> Result<BTreeMap<String, i32>, ConfigError> {
    const KEY: &str = "max.connections.per.ip.overrides";
    let mut out = BTreeMap::new();
    for entry in split_list(raw) {
        // rsplit: an IPv6 address carries colons of its own.
        let parsed = entry.rsplit_once(':').and_then(|(host, count)| {
            let host = host.trim().trim_matches(|c| c == '[' || c == ']');
            let count = count.trim().parse::<i32>().ok().filter(|c| *c >= 0)?;
            (!host.is_empty()).then(|| (host.to_string(), count))
        });
        match parsed {
            Some((host, count)) => {
                out.insert(host, count);
            }
            None => {
                return Err(ConfigError::invalid(
                    KEY,
                    raw,
                    format!("entry {entry:?} is not host:count with a count of at least 0"),
                ))
            }
        }
    }
    Ok(out)
}

/// Kafka's cross-key checks: a per-IP limit of 0 only makes sense with overrides (it would
/// refuse every connection), and a request-memory bound below the largest request could never
/// admit that request.
pub fn check_network_settings(
    max_connections_per_ip: i32,
    overrides: &BTreeMap<String, i32>,
    queued_max_request_bytes: i64,
    socket_request_max_bytes: i32,
) -> Result<(), ConfigError> {
    if max_connections_per_ip == 0 && overrides.is_empty() {
        return Err(ConfigError::invalid(
            "max.connections.per.ip",
            "0",
            "max.connections.per.ip can be set to zero only if \
             max.connections.per.ip.overrides is set",
        ));
    }
    if queued_max_request_bytes == 0 || queued_max_request_bytes < -1 {
        return Err(ConfigError::invalid(
            "queued.max.request.bytes",
            &queued_max_request_bytes.to_string(),
            "must be -1 (unbounded) or positive",
        ));
    }
    if queued_max_request_bytes > 0 && queued_max_request_bytes < socket_request_max_bytes as i64 {
        return Err(ConfigError::invalid(
            "queued.max.request.bytes",
            &queued_max_request_bytes.to_string(),
            "must be at least socket.request.max.bytes",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_hosts_addresses_and_counts() {
        let m = parse_per_ip_overrides("127.0.0.1:2, example.com:10,[::1]:0").unwrap();
        assert_eq!(m["127.0.0.1"], 2);
        assert_eq!(m["example.com"], 10);
        assert_eq!(m["::1"], 0);
        assert!(parse_per_ip_overrides("").unwrap().is_empty());
        for bad in ["127.0.0.1", "h:-1", ":3", "h:x"] {
            assert!(parse_per_ip_overrides(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cross_key_checks_follow_kafka() {
        let none = BTreeMap::new();
        assert!(check_network_settings(0, &none, -1, 100).is_err());
        let some = BTreeMap::from([("10.0.0.1".to_string(), 5)]);
        assert!(check_network_settings(0, &some, -1, 100).is_ok());
        assert!(check_network_settings(5, &none, 50, 100).is_err());
        assert!(check_network_settings(5, &none, 0, 100).is_err());
        assert!(check_network_settings(5, &none, 100, 100).is_ok());
    }
}
