//! Authorization end to end on an in-process broker with Kafka's StandardAuthorizer on: every
//! API a client sends, first as a principal without the ACL it needs (the API's
//! *_AUTHORIZATION_FAILED code, and nothing done), then with it (served). The ACL admin APIs,
//! the authorizer's settings and ACLs across restarts and nodes are in `acl_store.rs`.
//! Requests go through `handlers::start` with a connection whose principal the test sets, as
//! TLS or SASL would.
mod common;

use std::sync::Arc;

use common::authz::*;
use strata::broker::Broker;
use strata::handlers::ListenerScope;
use strata::protocol::acl::{operation as op, pattern_type, permission_type, resource_type as rt};
use strata::protocol::messages::*;

async fn metadata(
    broker: &Arc<Broker>,
    principal: &str,
    topics: Option<Vec<&str>>,
) -> metadata_response::MetadataResponse {
    call(
        broker,
        principal,
        3,
        12,
        &metadata_request::MetadataRequest {
            topics: topics.map(|t| {
                t.into_iter()
                    .map(|n| metadata_request::MetadataRequestTopic {
                        name: Some(n.into()),
                        ..Default::default()
                    })
                    .collect()
            }),
            allow_auto_topic_creation: false,
            include_topic_authorized_operations: true,
            ..Default::default()
        },
    )
    .await
}

async fn describe_topic_partitions(
    broker: &Arc<Broker>,
    principal: &str,
    topics: &[&str],
) -> describe_topic_partitions_response::DescribeTopicPartitionsResponse {
    use describe_topic_partitions_request::*;
    call(
        broker,
        principal,
        75,
        0,
        &DescribeTopicPartitionsRequest {
            topics: topics
                .iter()
                .map(|n| TopicRequest {
                    name: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            response_partition_limit: 2000,
            ..Default::default()
        },
    )
    .await
}

async fn fetch_code(broker: &Arc<Broker>, principal: &str, topic: &str) -> i16 {
    let r: fetch_response::FetchResponse = call(
        broker,
        principal,
        1,
        12,
        &fetch_request::FetchRequest {
            replica_id: -1,
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: 1 << 20,
            topics: vec![fetch_request::FetchTopic {
                topic: topic.into(),
                partitions: vec![fetch_request::FetchPartition {
                    partition: 0,
                    fetch_offset: 0,
                    partition_max_bytes: 1 << 20,
                    current_leader_epoch: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .await;
    r.responses[0].partitions[0].error_code
}

async fn list_offsets_code(broker: &Arc<Broker>, principal: &str, topic: &str) -> i16 {
    let r: list_offsets_response::ListOffsetsResponse = call(
        broker,
        principal,
        2,
        7,
        &list_offsets_request::ListOffsetsRequest {
            replica_id: -1,
            topics: vec![list_offsets_request::ListOffsetsTopic {
                name: topic.into(),
                partitions: vec![list_offsets_request::ListOffsetsPartition {
                    partition_index: 0,
                    current_leader_epoch: -1,
                    timestamp: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .await;
    r.topics[0].partitions[0].error_code
}

async fn describe_configs_code(
    broker: &Arc<Broker>,
    principal: &str,
    resource_type: i8,
    name: &str,
) -> i16 {
    let r: describe_configs_response::DescribeConfigsResponse = call(
        broker,
        principal,
        32,
        4,
        &describe_configs_request::DescribeConfigsRequest {
            resources: vec![describe_configs_request::DescribeConfigsResource {
                resource_type,
                resource_name: name.into(),
                configuration_keys: None,
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .await;
    r.results[0].error_code
}

async fn alter_config_code(broker: &Arc<Broker>, principal: &str, topic: &str) -> i16 {
    use incremental_alter_configs_request::*;
    let r: incremental_alter_configs_response::IncrementalAlterConfigsResponse = call(
        broker,
        principal,
        44,
        1,
        &IncrementalAlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: 2,
                resource_name: topic.into(),
                configs: vec![AlterableConfig {
                    name: "retention.ms".into(),
                    config_operation: 0,
                    value: Some("1234567".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .await;
    r.responses[0].error_code
}

async fn find_coordinator_code(
    broker: &Arc<Broker>,
    principal: &str,
    key_type: i8,
    key: &str,
) -> i16 {
    let r: find_coordinator_response::FindCoordinatorResponse = call(
        broker,
        principal,
        10,
        4,
        &find_coordinator_request::FindCoordinatorRequest {
            key_type,
            coordinator_keys: vec![key.into()],
            ..Default::default()
        },
    )
    .await;
    r.coordinators[0].error_code
}

async fn offset_commit_code(
    broker: &Arc<Broker>,
    principal: &str,
    group: &str,
    topic: &str,
) -> i16 {
    let r: offset_commit_response::OffsetCommitResponse = call(
        broker,
        principal,
        8,
        8,
        &offset_commit_request::OffsetCommitRequest {
            group_id: group.into(),
            generation_id_or_member_epoch: -1,
            member_id: String::new(),
            topics: vec![offset_commit_request::OffsetCommitRequestTopic {
                name: topic.into(),
                partitions: vec![offset_commit_request::OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 1,
                    committed_leader_epoch: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .await;
    r.topics[0].partitions[0].error_code
}

async fn offset_fetch(
    broker: &Arc<Broker>,
    principal: &str,
    group: &str,
    topic: &str,
) -> offset_fetch_response::OffsetFetchResponse {
    call(
        broker,
        principal,
        9,
        7,
        &offset_fetch_request::OffsetFetchRequest {
            group_id: group.into(),
            topics: Some(vec![offset_fetch_request::OffsetFetchRequestTopic {
                name: topic.into(),
                partition_indexes: vec![0],
                ..Default::default()
            }]),
            ..Default::default()
        },
    )
    .await
}

async fn init_producer_id_code(broker: &Arc<Broker>, principal: &str, tid: Option<&str>) -> i16 {
    let r: init_producer_id_response::InitProducerIdResponse = call(
        broker,
        principal,
        22,
        4,
        &init_producer_id_request::InitProducerIdRequest {
            transactional_id: tid.map(String::from),
            transaction_timeout_ms: 60000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
    )
    .await;
    r.error_code
}

async fn describe_groups_code(broker: &Arc<Broker>, principal: &str, group: &str) -> i16 {
    let r: describe_groups_response::DescribeGroupsResponse = call(
        broker,
        principal,
        15,
        5,
        &describe_groups_request::DescribeGroupsRequest {
            groups: vec![group.into()],
            ..Default::default()
        },
    )
    .await;
    r.groups[0].error_code
}

async fn heartbeat_code(broker: &Arc<Broker>, principal: &str, group: &str) -> i16 {
    let r: heartbeat_response::HeartbeatResponse = call(
        broker,
        principal,
        12,
        4,
        &heartbeat_request::HeartbeatRequest {
            group_id: group.into(),
            generation_id: 1,
            member_id: "m".into(),
            ..Default::default()
        },
    )
    .await;
    r.error_code
}

async fn describe_cluster_code(broker: &Arc<Broker>, principal: &str) -> i16 {
    let r: describe_cluster_response::DescribeClusterResponse = call(
        broker,
        principal,
        60,
        1,
        &describe_cluster_request::DescribeClusterRequest {
            endpoint_type: 1,
            ..Default::default()
        },
    )
    .await;
    r.error_code
}

async fn delete_topic_code(broker: &Arc<Broker>, principal: &str, topic: &str) -> i16 {
    let r: delete_topics_response::DeleteTopicsResponse = call(
        broker,
        principal,
        20,
        5,
        &delete_topics_request::DeleteTopicsRequest {
            topic_names: vec![topic.into()],
            timeout_ms: 5000,
            ..Default::default()
        },
    )
    .await;
    r.responses[0].error_code
}

/// DeleteTopics v6 by topic id: the one result.
async fn delete_topic_by_id(
    broker: &Arc<Broker>,
    principal: &str,
    id: strata::protocol::codec::Uuid,
) -> delete_topics_response::DeletableTopicResult {
    let r: delete_topics_response::DeleteTopicsResponse = call(
        broker,
        principal,
        20,
        6,
        &delete_topics_request::DeleteTopicsRequest {
            topics: vec![delete_topics_request::DeleteTopicState {
                name: None,
                topic_id: id,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.responses.len(), 1);
    r.responses.into_iter().next().unwrap()
}

/// A KIP-848 join of `group` subscribing to `topics`.
async fn consumer_group_heartbeat(
    broker: &Arc<Broker>,
    principal: &str,
    group: &str,
    topics: &[&str],
) -> consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse {
    join_group(broker, principal, group, "m-1", topics).await
}

fn topic_id(broker: &Arc<Broker>, name: &str) -> strata::protocol::codec::Uuid {
    strata::protocol::codec::Uuid(broker.cluster.image().topic(name).unwrap().topic_id)
}

#[tokio::test]
async fn every_api_refuses_without_its_acl_and_serves_with_it() {
    let tb = secured_broker().await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    assert_eq!(create_topic(&b, ADMIN, "orders").await, 0);
    assert_eq!(create_topic(&b, ADMIN, "hidden").await, 0);

    // Topics: alice may do nothing yet.
    assert_eq!(produce_code(&b, ALICE, "orders").await, TOPIC_DENIED);
    assert_eq!(fetch_code(&b, ALICE, "orders").await, TOPIC_DENIED);
    assert_eq!(list_offsets_code(&b, ALICE, "orders").await, TOPIC_DENIED);
    assert_eq!(
        describe_configs_code(&b, ALICE, 2, "orders").await,
        TOPIC_DENIED
    );
    assert_eq!(alter_config_code(&b, ALICE, "orders").await, TOPIC_DENIED);
    assert_eq!(
        describe_configs_code(&b, ALICE, 4, "1").await,
        CLUSTER_DENIED
    );
    assert_eq!(create_topic(&b, ALICE, "new").await, TOPIC_DENIED);
    assert_eq!(delete_topic_code(&b, ALICE, "orders").await, TOPIC_DENIED);
    // By id: a topic alice may not describe keeps its name hidden; an unknown id is unknown.
    let hidden = delete_topic_by_id(&b, ALICE, topic_id(&b, "hidden")).await;
    assert_eq!(
        (hidden.error_code, hidden.name, hidden.topic_id),
        (TOPIC_DENIED, None, topic_id(&b, "hidden"))
    );
    let unknown_id = strata::protocol::codec::Uuid([7; 16]);
    let unknown = delete_topic_by_id(&b, ALICE, unknown_id).await;
    assert_eq!((unknown.error_code, unknown.name), (100, None));
    assert!(b.cluster.image().topic("hidden").is_some());
    // ConsumerGroupHeartbeat: the group first.
    let r = consumer_group_heartbeat(&b, ALICE, "g-848", &["orders"]).await;
    assert_eq!((r.error_code, r.member_epoch), (GROUP_DENIED, 0));
    let all = metadata(&b, ALICE, None).await;
    assert!(
        all.topics.is_empty(),
        "alice sees no topic: {:?}",
        all.topics
    );
    let named = metadata(&b, ALICE, Some(vec!["orders"])).await;
    assert_eq!(named.topics[0].error_code, TOPIC_DENIED);
    assert_eq!(named.topics[0].name.as_deref(), Some("orders"));
    assert_eq!(
        named.topics[0].topic_id,
        strata::protocol::codec::Uuid::ZERO
    );
    // DescribeTopicPartitions as Metadata: all topics hides them, a named one is refused
    // without its id.
    assert!(describe_topic_partitions(&b, ALICE, &[])
        .await
        .topics
        .is_empty());
    let named = describe_topic_partitions(&b, ALICE, &["orders"]).await;
    assert_eq!(
        (
            named.topics[0].error_code,
            named.topics[0].name.as_deref(),
            named.topics[0].topic_id,
            named.topics[0].partitions.len()
        ),
        (
            TOPIC_DENIED,
            Some("orders"),
            strata::protocol::codec::Uuid::ZERO,
            0
        )
    );
    assert_eq!(describe_cluster_code(&b, ALICE).await, CLUSTER_DENIED);
    // Groups and transactions.
    assert_eq!(
        find_coordinator_code(&b, ALICE, 0, "g1").await,
        GROUP_DENIED
    );
    assert_eq!(find_coordinator_code(&b, ALICE, 1, "tx1").await, TXN_DENIED);
    assert_eq!(
        offset_commit_code(&b, ALICE, "g1", "orders").await,
        GROUP_DENIED
    );
    assert_eq!(
        offset_fetch(&b, ALICE, "g1", "orders").await.error_code,
        GROUP_DENIED
    );
    assert_eq!(heartbeat_code(&b, ALICE, "g1").await, GROUP_DENIED);
    assert_eq!(describe_groups_code(&b, ALICE, "g1").await, GROUP_DENIED);
    assert_eq!(
        init_producer_id_code(&b, ALICE, Some("tx1")).await,
        TXN_DENIED
    );
    assert_eq!(init_producer_id_code(&b, ALICE, None).await, CLUSTER_DENIED);
    let r: produce_response::ProduceResponse =
        call(&b, ALICE, 0, 9, &produce_request("orders", Some("tx1"))).await;
    assert_eq!(r.responses[0].partition_responses[0].error_code, TXN_DENIED);
    // ACL admin APIs need the cluster.
    let r: describe_acls_response::DescribeAclsResponse = call(
        &b,
        ALICE,
        29,
        3,
        &describe_acls_request::DescribeAclsRequest {
            resource_type_filter: rt::ANY,
            pattern_type_filter: pattern_type::ANY,
            resource_name_filter: None,
            principal_filter: None,
            host_filter: None,
            operation: op::ANY,
            permission_type: permission_type::ANY,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.error_code, CLUSTER_DENIED);
    let r: create_acls_response::CreateAclsResponse = call(
        &b,
        ALICE,
        30,
        3,
        &create_acls_request::CreateAclsRequest {
            creations: vec![acl(
                rt::TOPIC,
                "orders",
                pattern_type::LITERAL,
                ALICE,
                op::ALL,
            )],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.results[0].error_code, CLUSTER_DENIED);
    // The broker's own APIs need CLUSTER_ACTION, on the controller listener too.
    let r: broker_heartbeat_response::BrokerHeartbeatResponse = call_as(
        &b,
        ALICE,
        ListenerScope::Controller,
        63,
        1,
        &broker_heartbeat_request::BrokerHeartbeatRequest {
            broker_id: 1,
            broker_epoch: 1,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.error_code, CLUSTER_DENIED);
    let r: elect_leaders_response::ElectLeadersResponse = call(
        &b,
        ALICE,
        43,
        2,
        &elect_leaders_request::ElectLeadersRequest {
            election_type: 0,
            topic_partitions: None,
            timeout_ms: 1000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.error_code, CLUSTER_DENIED);

    // Nothing refused was done: the topic has no records and no override.
    assert_eq!(
        b.cluster.image().topic_config("orders", "retention.ms"),
        None
    );

    // Now the ACLs: a literal topic, a prefixed group, a transactional id, the cluster.
    grant(
        &b,
        vec![
            acl(rt::TOPIC, "orders", pattern_type::LITERAL, ALICE, op::WRITE),
            acl(rt::TOPIC, "orders", pattern_type::LITERAL, ALICE, op::READ),
            acl(
                rt::TOPIC,
                "orders",
                pattern_type::LITERAL,
                ALICE,
                op::ALTER_CONFIGS,
            ),
            acl(rt::TOPIC, "new", pattern_type::PREFIXED, ALICE, op::CREATE),
            acl(rt::GROUP, "g", pattern_type::PREFIXED, ALICE, op::READ),
            acl(
                rt::TRANSACTIONAL_ID,
                "tx1",
                pattern_type::LITERAL,
                ALICE,
                op::WRITE,
            ),
            acl(
                rt::CLUSTER,
                "kafka-cluster",
                pattern_type::LITERAL,
                ALICE,
                op::DESCRIBE,
            ),
        ],
    )
    .await;
    assert_eq!(produce_code(&b, ALICE, "orders").await, 0);
    assert_eq!(fetch_code(&b, ALICE, "orders").await, 0);
    // DESCRIBE is implied by READ and WRITE; DESCRIBE_CONFIGS by ALTER_CONFIGS.
    assert_eq!(list_offsets_code(&b, ALICE, "orders").await, 0);
    assert_eq!(describe_configs_code(&b, ALICE, 2, "orders").await, 0);
    assert_eq!(alter_config_code(&b, ALICE, "orders").await, 0);
    assert_eq!(
        b.cluster.image().topic_config("orders", "retention.ms"),
        Some("1234567")
    );
    // Created, but without DESCRIBE_CONFIGS alice reads no configs, partition count or
    // replication factor (Kafka's controller), while an admin reads them all.
    let created = create_topic_result(&b, ALICE, "new-topic", 2).await;
    assert_eq!(created.error_code, 0);
    assert_ne!(created.topic_id, strata::protocol::codec::Uuid::ZERO);
    assert_eq!(created.topic_config_error_code, TOPIC_DENIED);
    assert_eq!(created.configs, Some(vec![]));
    assert_eq!(
        (created.num_partitions, created.replication_factor),
        (-1, -1)
    );
    assert_eq!(
        b.cluster
            .image()
            .topic("new-topic")
            .unwrap()
            .partitions
            .len(),
        2
    );
    let by_admin = create_topic_result(&b, ADMIN, "admin-topic", 2).await;
    assert_eq!(by_admin.topic_config_error_code, 0);
    assert_eq!(
        (by_admin.num_partitions, by_admin.replication_factor),
        (2, 1)
    );
    assert!(by_admin
        .configs
        .as_ref()
        .unwrap()
        .iter()
        .any(|c| c.name == "retention.ms"));
    // Still no DELETE.
    assert_eq!(delete_topic_code(&b, ALICE, "orders").await, TOPIC_DENIED);
    // By id, a topic alice may describe (READ implies DESCRIBE) is named in the refusal.
    let orders = delete_topic_by_id(&b, ALICE, topic_id(&b, "orders")).await;
    assert_eq!(
        (orders.error_code, orders.name.as_deref()),
        (TOPIC_DENIED, Some("orders"))
    );
    // ConsumerGroupHeartbeat: READ on the group is not enough to subscribe to a topic alice
    // may not describe (Kafka 4.x); with one she may, she joins.
    let r = consumer_group_heartbeat(&b, ALICE, "g-848", &["orders", "hidden"]).await;
    assert_eq!((r.error_code, r.member_epoch), (TOPIC_DENIED, 0));
    assert_eq!(r.member_id, None);
    let r = consumer_group_heartbeat(&b, ALICE, "g-848", &["orders"]).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert!(r.member_epoch >= 1);
    let all = metadata(&b, ALICE, None).await;
    let names: Vec<_> = all.topics.iter().filter_map(|t| t.name.clone()).collect();
    assert_eq!(
        names,
        vec!["orders".to_string()],
        "only what alice may describe"
    );
    let all = describe_topic_partitions(&b, ALICE, &[]).await;
    assert_eq!(all.topics.len(), 1, "only what alice may describe");
    assert_eq!(
        (all.topics[0].name.as_deref(), all.topics[0].topic_id),
        (Some("orders"), topic_id(&b, "orders"))
    );
    let named = describe_topic_partitions(&b, ALICE, &["orders", "hidden"]).await;
    let codes: Vec<_> = named
        .topics
        .iter()
        .map(|t| (t.name.clone().unwrap(), t.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![("orders".into(), 0), ("hidden".into(), TOPIC_DENIED)]
    );
    // KIP-430: READ, WRITE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS on "orders".
    let expected = [
        op::READ,
        op::WRITE,
        op::DESCRIBE,
        op::DESCRIBE_CONFIGS,
        op::ALTER_CONFIGS,
    ]
    .iter()
    .fold(0, |bits, o| bits | (1 << o));
    assert_eq!(all.topics[0].topic_authorized_operations, expected);
    assert_eq!(describe_cluster_code(&b, ALICE).await, 0);
    assert_eq!(find_coordinator_code(&b, ALICE, 0, "g1").await, 0);
    assert_eq!(find_coordinator_code(&b, ALICE, 1, "tx1").await, 0);
    assert_eq!(offset_commit_code(&b, ALICE, "g1", "orders").await, 0);
    let fetched = offset_fetch(&b, ALICE, "g1", "orders").await;
    assert_eq!(fetched.error_code, 0);
    assert_eq!(fetched.topics[0].partitions[0].committed_offset, 1);
    // A group outside the prefix stays refused.
    assert_eq!(
        offset_commit_code(&b, ALICE, "other", "orders").await,
        GROUP_DENIED
    );
    assert_ne!(heartbeat_code(&b, ALICE, "g1").await, GROUP_DENIED);
    assert_eq!(describe_groups_code(&b, ALICE, "g1").await, 0);
    assert_eq!(init_producer_id_code(&b, ALICE, Some("tx1")).await, 0);
    // WRITE on a topic stands in for IDEMPOTENT_WRITE (Kafka's authorizeByResourceType).
    assert_eq!(init_producer_id_code(&b, ALICE, None).await, 0);
    // Describe lists what was created.
    let r: describe_acls_response::DescribeAclsResponse = call(
        &b,
        ALICE,
        29,
        3,
        &describe_acls_request::DescribeAclsRequest {
            resource_type_filter: rt::GROUP,
            pattern_type_filter: pattern_type::MATCH,
            resource_name_filter: Some("g1".into()),
            principal_filter: None,
            host_filter: None,
            operation: op::ANY,
            permission_type: permission_type::ANY,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.resources.len(), 1);
    assert_eq!(r.resources[0].resource_name, "g");
    assert_eq!(r.resources[0].pattern_type, pattern_type::PREFIXED);
    assert_eq!(r.resources[0].acls[0].principal, ALICE);
}
