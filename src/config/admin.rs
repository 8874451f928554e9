//! The admin HTTP listener's settings (`strata.admin.listeners`) and the metrics registry's
//! bound on label cardinality (`strata.metrics.max.partition.series`). Kafka has no admin HTTP
//! listener (it exposes JMX); these keys are Strata's own, named so tooling can rely on them.
use super::registry::split_list;
use super::ConfigError;

/// The key that lists the admin listeners.
pub const ADMIN_LISTENERS: &str = "strata.admin.listeners";

/// One `http://host:port` admin listener. Port 0 binds an ephemeral port (tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminListener {
    pub host: String,
    pub port: u16,
}

impl AdminListener {
    /// The address to bind (`host:port`, IPv6 hosts in brackets).
    pub fn bind_address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Parses `strata.admin.listeners`: comma-separated `http://host:port` entries; an empty value
/// turns the admin listener off. Only plain HTTP is served (no TLS on this listener yet), so
/// `https://` is refused rather than silently served in clear text.
pub fn parse_admin_listeners(raw: &str) -> Result<Vec<AdminListener>, ConfigError> {
    let mut out = Vec::new();
    for entry in split_list(raw) {
        let parsed = entry
            .strip_prefix("http://")
            .ok_or("expected http://host:port (only plain HTTP is served)")
            .and_then(|rest| {
                let rest = rest.strip_suffix('/').unwrap_or(rest);
                let (host, port) = super::broker::split_host_port(rest)?;
                if host.is_empty() {
                    return Err("the host is empty (use 0.0.0.0 for every interface)");
                }
                let port = port.parse::<u16>().map_err(|_| "the port is not 0-65535")?;
                Ok(AdminListener {
                    host: host.to_string(),
                    port,
                })
            });
        match parsed {
            Ok(l) => out.push(l),
            Err(why) => {
                return Err(ConfigError::invalid(
                    ADMIN_LISTENERS,
                    raw,
                    format!("entry {entry:?}: {why}"),
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_listeners_parse_hosts_ports_and_off() {
        let l = parse_admin_listeners("http://127.0.0.1:9644, http://[::1]:0/").unwrap();
        assert_eq!(l[0].bind_address(), "127.0.0.1:9644");
        assert_eq!(l[1].bind_address(), "[::1]:0");
        assert!(parse_admin_listeners("").unwrap().is_empty());
        assert!(parse_admin_listeners(" ").unwrap().is_empty());
        for bad in [
            "127.0.0.1:9644",
            "https://127.0.0.1:9644",
            "http://:9644",
            "http://h:99999",
            "http://h",
        ] {
            let e = parse_admin_listeners(bad).unwrap_err().to_string();
            assert!(e.contains(ADMIN_LISTENERS), "{bad}: {e}");
        }
    }
}
