//! Requests as a chosen principal on an in-process broker with Kafka's StandardAuthorizer on,
//! for the authorization tests: a connection whose principal the test sets (as TLS or SASL
//! would), `handlers::start` with an encoded request, and the decoded response.
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use strata::broker::Broker;
use strata::config::SecurityProtocol;
use strata::handlers::{ConnectionContext, ListenerScope, Outcome};
use strata::protocol::acl::permission_type;
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::header::{request_header_version, response_header_version, RequestHeader};
use strata::protocol::messages::*;
use strata::security::KafkaPrincipal;

use super::TestBroker;

pub const AUTHORIZER: (&str, &str) = (
    "authorizer.class.name",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
);
pub const ADMIN: &str = "User:admin";
/// The broker's own principal on its PLAINTEXT controller connection: as in Kafka, the
/// node's registration and heartbeats need CLUSTER_ACTION, so it is a super user here.
pub const SUPER_USERS: &str = "User:admin;User:ANONYMOUS";
pub const ALICE: &str = "User:alice";

/// Sends one request as `principal` (from 127.0.0.1) and decodes the response.
pub async fn call_as<Req: Encode, Resp: Decode>(
    broker: &Arc<Broker>,
    principal: &str,
    scope: ListenerScope,
    api_key: i16,
    version: i16,
    request: &Req,
) -> Resp {
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let conn = Arc::new(ConnectionContext::new(
        "PLAINTEXT".into(),
        SecurityProtocol::Plaintext,
        scope,
        peer,
    ));
    conn.set_principal(KafkaPrincipal::parse(principal).unwrap());
    let header = RequestHeader {
        api_key,
        api_version: version,
        correlation_id: 7,
        client_id: Some("acl-test".into()),
        unknown_tagged_fields: vec![],
    };
    let mut frame = BytesMut::new();
    header.encode(&mut frame, request_header_version(api_key, version));
    request.encode(&mut frame, version);
    let fut = match strata::handlers::start(broker, frame.freeze(), &conn).await {
        Outcome::Respond(fut) => fut,
        Outcome::Close(why) => panic!("api {api_key} v{version} closed: {why}"),
    };
    let mut bytes: Bytes = fut
        .await
        .expect("a response")
        .into_bytes()
        .expect("region bytes");
    bytes.advance(4);
    assert_eq!(bytes.get_i32(), 7);
    if response_header_version(api_key, version) >= 1 {
        assert_eq!(bytes.get_u8(), 0, "no tagged fields");
    }
    Resp::decode(&mut bytes, version).expect("response decodes")
}

pub async fn call<Req: Encode, Resp: Decode>(
    broker: &Arc<Broker>,
    principal: &str,
    api_key: i16,
    version: i16,
    request: &Req,
) -> Resp {
    call_as(
        broker,
        principal,
        ListenerScope::Broker,
        api_key,
        version,
        request,
    )
    .await
}

pub fn acl(
    resource_type: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    operation: i8,
) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: pattern,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission_type: permission_type::ALLOW,
        ..Default::default()
    }
}

pub async fn grant(broker: &Arc<Broker>, creations: Vec<create_acls_request::AclCreation>) {
    let n = creations.len();
    let r: create_acls_response::CreateAclsResponse = call(
        broker,
        ADMIN,
        30,
        3,
        &create_acls_request::CreateAclsRequest {
            creations,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.results.len(), n);
    for res in &r.results {
        assert_eq!(res.error_code, 0, "{:?}", res.error_message);
    }
}

pub const TOPIC_DENIED: i16 = 29;
pub const GROUP_DENIED: i16 = 30;
pub const CLUSTER_DENIED: i16 = 31;
pub const TXN_DENIED: i16 = 53;

pub async fn secured_broker() -> TestBroker {
    TestBroker::start(&[AUTHORIZER, ("super.users", SUPER_USERS)]).await
}

/// CreateTopics v7 of one topic (`partitions`, replication factor 1) as `principal`: its result.
pub async fn create_topic_result(
    broker: &Arc<Broker>,
    principal: &str,
    name: &str,
    partitions: i32,
) -> create_topics_response::CreatableTopicResult {
    let r: create_topics_response::CreateTopicsResponse = call(
        broker,
        principal,
        19,
        7,
        &create_topics_request::CreateTopicsRequest {
            topics: vec![create_topics_request::CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.topics.len(), 1);
    r.topics.into_iter().next().unwrap()
}

/// One KIP-848 ConsumerGroupHeartbeat joining `member` to `group`, subscribed to `topics`.
pub async fn join_group(
    broker: &Arc<Broker>,
    principal: &str,
    group: &str,
    member: &str,
    topics: &[&str],
) -> consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse {
    call(
        broker,
        principal,
        68,
        0,
        &consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: member.into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
            topic_partitions: Some(vec![]),
            ..Default::default()
        },
    )
    .await
}

/// CreateTopics of one single-partition topic as `principal`: its error code.
pub async fn create_topic(broker: &Arc<Broker>, principal: &str, name: &str) -> i16 {
    create_topic_result(broker, principal, name, 1)
        .await
        .error_code
}

/// A one-record Produce v9 to partition 0 of `topic`.
pub fn produce_request(
    topic: &str,
    transactional_id: Option<&str>,
) -> produce_request::ProduceRequest {
    produce_request::ProduceRequest {
        transactional_id: transactional_id.map(String::from),
        acks: 1,
        timeout_ms: 5000,
        topic_data: vec![produce_request::TopicProduceData {
            name: topic.into(),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(super::batch(&[b"v"], None)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Produce v9 of one record as `principal`: partition 0's error code.
pub async fn produce_code(broker: &Arc<Broker>, principal: &str, topic: &str) -> i16 {
    let r: produce_response::ProduceResponse =
        call(broker, principal, 0, 9, &produce_request(topic, None)).await;
    r.responses[0].partition_responses[0].error_code
}
