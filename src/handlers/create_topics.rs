//! CreateTopics (key 19), versions 2-7: defaults with -1 (v4+), per-topic configs, manual
//! replica assignments, validate-only, invalid names refused, duplicates in one request
//! refused with INVALID_REQUEST as Kafka does. The active controller decides placement and
//! commits the topic ([`crate::cluster::create_topics::on_controller`]); other brokers
//! forward the request.
use super::ConnectionContext;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{later, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_topics_request::CreateTopicsRequest;
use crate::protocol::messages::create_topics_response::*;

/// The effective configs of a created topic (v5+ answers carry them).
fn response_configs(
    broker: &Broker,
    configs: &BTreeMap<String, String>,
) -> Vec<CreatableTopicConfigs> {
    super::describe_configs::topic_entries(broker, configs)
        .into_iter()
        .map(|e| CreatableTopicConfigs {
            name: e.name,
            value: e.value,
            read_only: e.read_only,
            config_source: e.source.id(),
            is_sensitive: e.is_sensitive,
            ..Default::default()
        })
        .collect()
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreateTopicsRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    {
        let configs: HashMap<String, BTreeMap<String, String>> = request
            .topics
            .iter()
            .map(|t| {
                let c = t
                    .configs
                    .iter()
                    .filter_map(|c| c.value.clone().map(|v| (c.name.clone(), v)))
                    .collect();
                (t.name.clone(), c)
            })
            .collect();
        return later(header, async move {
            let mut response = cluster.create_topics(version, request).await;
            if version >= 5 {
                for t in response.topics.iter_mut().filter(|t| t.error_code == 0) {
                    let c = configs.get(&t.name).cloned().unwrap_or_default();
                    t.configs = Some(response_configs(&broker, &c));
                }
            }
            Some(response)
        });
    }
}
