//! Authorization of the quota and SCRAM admin APIs, as Kafka's brokers and controller check
//! them: DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster, AlterClientQuotas
//! ALTER_CONFIGS, DescribeUserScramCredentials DESCRIBE and AlterUserScramCredentials ALTER.
//! Without the ACL a principal gets CLUSTER_AUTHORIZATION_FAILED and nothing changes; with it
//! the same request is served and its values read back.
mod common;

use common::authz::*;
use strata::protocol::acl::{operation as op, pattern_type, resource_type as rt};
use strata::protocol::messages::*;

fn alter_quota(user: &str, rate: f64) -> alter_client_quotas_request::AlterClientQuotasRequest {
    use alter_client_quotas_request::*;
    AlterClientQuotasRequest {
        entries: vec![EntryData {
            entity: vec![EntityData {
                entity_type: "user".into(),
                entity_name: Some(user.into()),
                ..Default::default()
            }],
            ops: vec![OpData {
                key: "producer_byte_rate".into(),
                value: rate,
                remove: false,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn describe_quotas() -> describe_client_quotas_request::DescribeClientQuotasRequest {
    describe_client_quotas_request::DescribeClientQuotasRequest {
        components: vec![describe_client_quotas_request::ComponentData {
            entity_type: "user".into(),
            match_type: 2, // any
            r#match: None,
            ..Default::default()
        }],
        strict: false,
        ..Default::default()
    }
}

fn upsert_scram(
    user: &str,
) -> alter_user_scram_credentials_request::AlterUserScramCredentialsRequest {
    use alter_user_scram_credentials_request::*;
    AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: user.into(),
            mechanism: 2, // SCRAM-SHA-512
            iterations: 8192,
            salt: vec![7u8; 16].into(),
            salted_password: vec![9u8; 64].into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn describe_scram() -> describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest
{
    describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest {
        users: None,
        ..Default::default()
    }
}

#[tokio::test]
async fn quota_and_scram_admin_apis_need_their_cluster_acls() {
    use alter_client_quotas_response::AlterClientQuotasResponse;
    use alter_user_scram_credentials_response::AlterUserScramCredentialsResponse;
    use describe_client_quotas_response::DescribeClientQuotasResponse;
    use describe_user_scram_credentials_response::DescribeUserScramCredentialsResponse;
    let tb = secured_broker().await;
    let b = tb.running.as_ref().unwrap().broker.clone();

    // Without ACLs: every request refused, per entry or as a whole, and nothing written.
    let r: AlterClientQuotasResponse = call(&b, ALICE, 49, 1, &alter_quota("alice", 1e6)).await;
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.entries[0].error_code, CLUSTER_DENIED);
    assert_eq!(r.entries[0].entity[0].entity_name.as_deref(), Some("alice"));
    let r: DescribeClientQuotasResponse = call(&b, ALICE, 48, 1, &describe_quotas()).await;
    assert_eq!(r.error_code, CLUSTER_DENIED);
    assert!(r.entries.is_none());
    let r: AlterUserScramCredentialsResponse =
        call(&b, ALICE, 51, 0, &upsert_scram("mallory")).await;
    assert_eq!(r.results.len(), 1);
    assert_eq!(r.results[0].user, "mallory");
    assert_eq!(r.results[0].error_code, CLUSTER_DENIED);
    let r: DescribeUserScramCredentialsResponse = call(&b, ALICE, 50, 0, &describe_scram()).await;
    assert_eq!(r.error_code, CLUSTER_DENIED);
    assert!(r.results.is_empty());
    let image = b.cluster.image();
    assert!(
        image.scram.users.is_empty(),
        "a refused upsert wrote a credential"
    );
    let r: DescribeClientQuotasResponse = call(&b, ADMIN, 48, 1, &describe_quotas()).await;
    assert_eq!(
        r.entries.as_deref().map(<[_]>::len),
        Some(0),
        "a refused alter wrote a quota"
    );

    // DESCRIBE alone (implied by nothing else) does not let her alter.
    grant(
        &b,
        vec![
            acl(
                rt::CLUSTER,
                "kafka-cluster",
                pattern_type::LITERAL,
                ALICE,
                op::DESCRIBE,
            ),
            acl(
                rt::CLUSTER,
                "kafka-cluster",
                pattern_type::LITERAL,
                ALICE,
                op::DESCRIBE_CONFIGS,
            ),
        ],
    )
    .await;
    let r: AlterClientQuotasResponse = call(&b, ALICE, 49, 1, &alter_quota("alice", 1e6)).await;
    assert_eq!(r.entries[0].error_code, CLUSTER_DENIED);
    let r: AlterUserScramCredentialsResponse =
        call(&b, ALICE, 51, 0, &upsert_scram("mallory")).await;
    assert_eq!(r.results[0].error_code, CLUSTER_DENIED);

    // With ALTER_CONFIGS and ALTER: served, and read back through the describe APIs.
    grant(
        &b,
        vec![
            acl(
                rt::CLUSTER,
                "kafka-cluster",
                pattern_type::LITERAL,
                ALICE,
                op::ALTER_CONFIGS,
            ),
            acl(
                rt::CLUSTER,
                "kafka-cluster",
                pattern_type::LITERAL,
                ALICE,
                op::ALTER,
            ),
        ],
    )
    .await;
    let r: AlterClientQuotasResponse = call(&b, ALICE, 49, 1, &alter_quota("alice", 1e6)).await;
    assert_eq!(
        r.entries[0].error_code, 0,
        "{:?}",
        r.entries[0].error_message
    );
    let r: DescribeClientQuotasResponse = call(&b, ALICE, 48, 1, &describe_quotas()).await;
    assert_eq!(r.error_code, 0);
    let entries = r.entries.expect("entries");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].entity[0].entity_type, "user");
    assert_eq!(entries[0].entity[0].entity_name.as_deref(), Some("alice"));
    assert_eq!(entries[0].values.len(), 1);
    assert_eq!(entries[0].values[0].key, "producer_byte_rate");
    assert_eq!(entries[0].values[0].value, 1e6);
    let r: AlterUserScramCredentialsResponse =
        call(&b, ALICE, 51, 0, &upsert_scram("mallory")).await;
    assert_eq!(
        r.results[0].error_code, 0,
        "{:?}",
        r.results[0].error_message
    );
    let r: DescribeUserScramCredentialsResponse = call(&b, ALICE, 50, 0, &describe_scram()).await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.results.len(), 1);
    assert_eq!(r.results[0].user, "mallory");
    assert_eq!(r.results[0].credential_infos.len(), 1);
    assert_eq!(r.results[0].credential_infos[0].mechanism, 2);
    assert_eq!(r.results[0].credential_infos[0].iterations, 8192);
}

/// A KIP-848 join of `member` to `group`, subscribed to `topics`, retried while the group
/// coordinator is still loading on the fresh broker (COORDINATOR_LOAD_IN_PROGRESS,
/// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR), as a client retries.
async fn join(
    b: &std::sync::Arc<strata::broker::Broker>,
    principal: &str,
    group: &str,
    member: &str,
    topics: &[&str],
) -> consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse {
    for _ in 0..100 {
        // As a client does: FindCoordinator first (it creates __consumer_offsets).
        let _: find_coordinator_response::FindCoordinatorResponse = call(
            b,
            ADMIN,
            10,
            4,
            &find_coordinator_request::FindCoordinatorRequest {
                key_type: 0,
                coordinator_keys: vec![group.into()],
                ..Default::default()
            },
        )
        .await;
        let r = join_group(b, principal, group, member, topics).await;
        if ![14, 15, 16].contains(&r.error_code) {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the group coordinator did not load within 10 s");
}

async fn describe_group(
    b: &std::sync::Arc<strata::broker::Broker>,
    principal: &str,
    group: &str,
) -> consumer_group_describe_response::DescribedGroup {
    let r: consumer_group_describe_response::ConsumerGroupDescribeResponse = call(
        b,
        principal,
        69,
        1,
        &consumer_group_describe_request::ConsumerGroupDescribeRequest {
            group_ids: vec![group.into()],
            include_authorized_operations: false,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.groups.len(), 1);
    r.groups.into_iter().next().unwrap()
}

/// KAFKA-18813: describing a KIP-848 group needs DESCRIBE on each topic its members use; a
/// caller without it on one of them reads TOPIC_AUTHORIZATION_FAILED for the whole group, never
/// the hidden topic's name.
#[tokio::test]
async fn consumer_group_describe_hides_a_group_that_uses_a_topic_the_caller_cannot_see() {
    let tb = secured_broker().await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    for name in ["orders", "hidden"] {
        assert_eq!(create_topic_result(&b, ADMIN, name, 2).await.error_code, 0);
    }
    grant(
        &b,
        vec![
            acl(rt::GROUP, "g", pattern_type::LITERAL, ALICE, op::READ),
            acl(rt::TOPIC, "orders", pattern_type::LITERAL, ALICE, op::READ),
        ],
    )
    .await;
    let r = join(&b, ALICE, "g", "m-alice", &["orders"]).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    // Only alice's topic so far: she sees the group and herself in it.
    let g = describe_group(&b, ALICE, "g").await;
    assert_eq!(g.error_code, 0, "{:?}", g.error_message);
    assert_eq!(g.members.len(), 1);
    assert_eq!(g.members[0].member_id, "m-alice");
    assert_eq!(
        g.members[0].subscribed_topic_names,
        vec!["orders".to_string()]
    );
    // The admin joins subscribed to a topic alice may not describe.
    let r = join(&b, ADMIN, "g", "m-admin", &["hidden"]).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let g = describe_group(&b, ALICE, "g").await;
    assert_eq!(g.error_code, TOPIC_DENIED);
    assert_eq!(g.group_id, "g");
    assert!(g.members.is_empty(), "no member leaks through the refusal");
    assert!(!g.error_message.unwrap_or_default().contains("hidden"));
    // The admin sees both members.
    let g = describe_group(&b, ADMIN, "g").await;
    assert_eq!(g.error_code, 0);
    let mut ids: Vec<_> = g.members.iter().map(|m| m.member_id.clone()).collect();
    ids.sort();
    assert_eq!(ids, vec!["m-admin".to_string(), "m-alice".to_string()]);
}
