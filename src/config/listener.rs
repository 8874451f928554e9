//! Where a process listens and how it finds its quorum: `listeners` entries
//! (`NAME://host:port`, Kafka's `EndPoint`), `controller.quorum.voters` entries (`id@host:port`)
//! and the roles of `process.roles`.

/// A role of this process (`process.roles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessRole {
    Broker,
    Controller,
}

/// One `NAME://host:port` listener. An empty host means all interfaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Upper-cased, as Kafka normalises listener names.
    pub name: String,
    pub host: String,
    pub port: u16,
}

/// Splits `host:port` or `[v6addr]:port` (the host may be empty), as listener URLs write
/// them; shared by the Kafka listeners and `strata.admin.listeners`.
pub(crate) fn split_host_port(rest: &str) -> Result<(&str, &str), &'static str> {
    match rest.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or("unclosed '[' in host")?;
            let port = after.strip_prefix(':').ok_or("expected :port after ']'")?;
            Ok((host, port))
        }
        None => rest.rsplit_once(':').ok_or("expected host:port"),
    }
}

impl Listener {
    /// Parses `NAME://host:port`, `NAME://:port` or `NAME://[v6addr]:port`.
    pub fn parse(s: &str) -> Result<Listener, String> {
        let s = s.trim();
        let (name, rest) = s.split_once("://").ok_or("expected NAME://host:port")?;
        if name.is_empty() {
            return Err("listener name is empty".into());
        }
        let (host, port) = split_host_port(rest)?;
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("invalid port {port:?}"))?;
        Ok(Listener {
            name: name.to_ascii_uppercase(),
            host: host.to_string(),
            port,
        })
    }

    /// The address to bind: the host, or `0.0.0.0` when the host is empty.
    pub fn bind_host(&self) -> &str {
        if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        }
    }
}

/// One `id@host:port` entry of `controller.quorum.voters`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumVoter {
    pub id: i32,
    pub host: String,
    pub port: u16,
}

impl QuorumVoter {
    pub fn parse(s: &str) -> Result<QuorumVoter, String> {
        let (id, addr) = s.trim().split_once('@').ok_or("expected id@host:port")?;
        let id = id
            .parse::<i32>()
            .map_err(|_| format!("invalid voter id {id:?}"))?;
        let (host, port) = addr.rsplit_once(':').ok_or("expected host:port")?;
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("invalid port {port:?}"))?;
        Ok(QuorumVoter {
            id,
            host: host.trim_matches(|c| c == '[' || c == ']').to_string(),
            port,
        })
    }
}
