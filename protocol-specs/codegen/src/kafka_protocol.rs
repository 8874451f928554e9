//! How our messages line up with the `kafka-protocol` crate (0.15, Kafka 4.0's schemas), which
//! Strata's differential tests decode and encode against: the messages it names differently,
//! and those it does not define at all.

/// Messages `kafka-protocol` knows under another name: (ours, its module, its type). Key 74
/// was ListClientMetricsResources (v0) before KIP-1142 renamed it.
const RENAMED: &[(&str, &str, &str)] = &[
    (
        "list_config_resources_request",
        "list_client_metrics_resources_request",
        "ListClientMetricsResourcesRequest",
    ),
    (
        "list_config_resources_response",
        "list_client_metrics_resources_response",
        "ListClientMetricsResourcesResponse",
    ),
];

/// Messages the `kafka-protocol` 0.15 crate (Kafka 4.0 schemas) does not define: the share-group
/// RPCs of KIP-932 (keys 76-79, 83-87 and 90-92) were still unstable in 4.0 and left out of its
/// generated set, so the differential test has nothing to compare them with. `stale_entries`
/// checks that every entry names a spec, so a renamed or removed spec cannot leave a stale one.
pub const NOT_IN_KAFKA_PROTOCOL: &[&str] = &[
    "alter_share_group_offsets_request",
    "alter_share_group_offsets_response",
    "delete_share_group_offsets_request",
    "delete_share_group_offsets_response",
    "delete_share_group_state_request",
    "delete_share_group_state_response",
    "describe_share_group_offsets_request",
    "describe_share_group_offsets_response",
    "initialize_share_group_state_request",
    "initialize_share_group_state_response",
    "read_share_group_state_request",
    "read_share_group_state_response",
    "read_share_group_state_summary_request",
    "read_share_group_state_summary_response",
    "share_acknowledge_request",
    "share_acknowledge_response",
    "share_fetch_request",
    "share_fetch_response",
    "share_group_describe_request",
    "share_group_describe_response",
    "share_group_heartbeat_request",
    "share_group_heartbeat_response",
    "write_share_group_state_request",
    "write_share_group_state_response",
];

pub fn defines(module: &str) -> bool {
    !NOT_IN_KAFKA_PROTOCOL.contains(&module)
}

/// `kafka-protocol`'s module and type for our message `name` in `module`.
pub fn name(module: &str, name: &str) -> (String, String) {
    RENAMED
        .iter()
        .find(|(ours, _, _)| *ours == module)
        .map(|(_, m, n)| (m.to_string(), n.to_string()))
        .unwrap_or_else(|| (module.to_string(), name.to_string()))
}

/// The entries of `NOT_IN_KAFKA_PROTOCOL` that name none of `modules` (the specs of
/// `messages/`).
pub fn stale_entries<'a>(modules: impl Iterator<Item = &'a str> + Clone) -> Vec<&'static str> {
    NOT_IN_KAFKA_PROTOCOL
        .iter()
        .copied()
        .filter(|m| !modules.clone().any(|ours| ours == *m))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_messages_use_kafka_protocols_names() {
        let (m, n) = name(
            "list_config_resources_request",
            "ListConfigResourcesRequest",
        );
        assert_eq!(m, "list_client_metrics_resources_request");
        assert_eq!(n, "ListClientMetricsResourcesRequest");
        let (m, n) = name("fetch_request", "FetchRequest");
        assert_eq!((m.as_str(), n.as_str()), ("fetch_request", "FetchRequest"));
    }

    #[test]
    fn stale_entries_are_the_ones_without_a_spec() {
        let all = NOT_IN_KAFKA_PROTOCOL.iter().copied();
        assert!(stale_entries(all.clone()).is_empty());
        let but_one = all.filter(|m| *m != "share_fetch_request");
        assert_eq!(stale_entries(but_one), ["share_fetch_request"]);
        assert!(!defines("share_fetch_request") && defines("fetch_request"));
    }
}
