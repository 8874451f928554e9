//! The ACL store and the authorizer's settings end to end on in-process brokers: CreateAcls,
//! DescribeAcls and DeleteAcls with their filters and error codes, ACLs surviving a restart,
//! the ACL APIs without an authorizer (SECURITY_DISABLED), `allow.everyone.if.no.acl.found`,
//! and ACLs reaching every node of a three-node cluster.
mod common;

use std::sync::Arc;

use common::authz::*;
use common::TestBroker;
use strata::broker::Broker;
use strata::handlers::ConnectionContext;
use strata::protocol::acl::{operation as op, pattern_type, permission_type, resource_type as rt};
use strata::protocol::messages::*;
use strata::security::KafkaPrincipal;

#[tokio::test]
async fn acl_admin_apis_filters_errors_and_restart() {
    let tb = secured_broker().await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    let any_filter = delete_acls_request::DeleteAclsFilter {
        resource_type_filter: rt::ANY,
        resource_name_filter: None,
        pattern_type_filter: pattern_type::ANY,
        principal_filter: None,
        host_filter: None,
        operation: op::ANY,
        permission_type: permission_type::ANY,
        ..Default::default()
    };
    // Bad creations and filters: INVALID_REQUEST.
    let r: create_acls_response::CreateAclsResponse = call(
        &b,
        ADMIN,
        30,
        2,
        &create_acls_request::CreateAclsRequest {
            creations: vec![
                acl(
                    rt::CLUSTER,
                    "other",
                    pattern_type::LITERAL,
                    ALICE,
                    op::ALTER,
                ),
                acl(rt::TOPIC, "t", pattern_type::MATCH, ALICE, op::READ),
                acl(rt::TOPIC, "t", pattern_type::LITERAL, "alice", op::READ),
                acl(rt::TOPIC, "t", pattern_type::LITERAL, ALICE, op::READ),
            ],
            ..Default::default()
        },
    )
    .await;
    let codes: Vec<i16> = r.results.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, vec![42, 42, 42, 0]);
    let r: delete_acls_response::DeleteAclsResponse = call(
        &b,
        ADMIN,
        31,
        3,
        &delete_acls_request::DeleteAclsRequest {
            filters: vec![delete_acls_request::DeleteAclsFilter {
                operation: op::UNKNOWN,
                ..any_filter.clone()
            }],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.filter_results[0].error_code, 42);

    // The ACL survives a restart (the metadata log), and still denies what it should.
    let tb = tb
        .restart(&[AUTHORIZER, ("super.users", SUPER_USERS)])
        .await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    assert_eq!(b.cluster.image().acls.len(), 1);
    let r: delete_acls_response::DeleteAclsResponse = call(
        &b,
        ADMIN,
        31,
        1,
        &delete_acls_request::DeleteAclsRequest {
            filters: vec![any_filter],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.filter_results[0].error_code, 0);
    assert_eq!(r.filter_results[0].matching_acls.len(), 1);
    assert_eq!(r.filter_results[0].matching_acls[0].resource_name, "t");
    assert!(b.cluster.image().acls.is_empty());
}

#[tokio::test]
async fn without_an_authorizer_acl_apis_answer_security_disabled_and_all_is_allowed() {
    let tb = TestBroker::start(&[]).await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    let r: describe_acls_response::DescribeAclsResponse = call(
        &b,
        ALICE,
        29,
        1,
        &describe_acls_request::DescribeAclsRequest {
            resource_type_filter: rt::ANY,
            pattern_type_filter: pattern_type::ANY,
            operation: op::ANY,
            permission_type: permission_type::ANY,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.error_code, 54);
    assert_eq!(
        r.error_message.as_deref(),
        Some("No Authorizer is configured.")
    );
    assert_eq!(create_topic(&b, ALICE, "free").await, 0);
    assert_eq!(produce_code(&b, ALICE, "free").await, 0);
}

#[tokio::test]
async fn allow_everyone_if_no_acl_found_opens_resources_without_acls() {
    let tb = TestBroker::start(&[
        AUTHORIZER,
        ("allow.everyone.if.no.acl.found", "true"),
        ("super.users", "User:ANONYMOUS"),
    ])
    .await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    assert_eq!(create_topic(&b, ALICE, "open").await, 0);
    assert_eq!(produce_code(&b, ALICE, "open").await, 0);
    // Neither alice nor bob is a super user: once the cluster has an ACL, ALTER needs one.
    grant_as_everyone_denied(&b).await;
}

/// With `allow.everyone.if.no.acl.found`, the first ACL on the cluster resource closes it
/// to everybody else: bob's DENY-free ALLOW for alice makes cluster ALTER refused to bob.
async fn grant_as_everyone_denied(b: &Arc<Broker>) {
    let r: create_acls_response::CreateAclsResponse = call(
        b,
        "User:bob",
        30,
        3,
        &create_acls_request::CreateAclsRequest {
            creations: vec![acl(
                rt::CLUSTER,
                "kafka-cluster",
                pattern_type::LITERAL,
                ALICE,
                op::ALTER,
            )],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.results[0].error_code, 0);
    let r: create_acls_response::CreateAclsResponse = call(
        b,
        "User:bob",
        30,
        3,
        &create_acls_request::CreateAclsRequest {
            creations: vec![acl(rt::TOPIC, "x", pattern_type::LITERAL, ALICE, op::READ)],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(r.results[0].error_code, CLUSTER_DENIED);
}

#[tokio::test]
async fn acls_reach_every_node_of_a_three_node_cluster() {
    use common::cluster::{Cluster, Node};
    // Ports from this suite's own range (20340-20359), not the shared harness's.
    let mut c = Cluster {
        nodes: (1..=3)
            .map(|id| Node {
                id,
                roles: "broker,controller",
                broker_port: 20340 + id as u16,
                running: None,
            })
            .collect(),
        controller_ports: (1..=3).map(|i| 20350 + i).collect(),
        dir: tempfile::tempdir().unwrap(),
        log_dirs: 1,
        extra_overrides: vec![
            format!("{}={}", AUTHORIZER.0, AUTHORIZER.1),
            format!("super.users={SUPER_USERS}"),
        ],
        internal_ports: Vec::new(),
    };
    for i in 0..3 {
        c.start_node(i).await;
    }
    let node = |c: &Cluster, i: usize| c.nodes[i].running.as_ref().unwrap().broker.clone();
    // Created through every node in turn (two of them forward to the active controller).
    for i in 0..3 {
        let topic = format!("t{i}");
        grant(
            &node(&c, i),
            vec![acl(
                rt::TOPIC,
                &topic,
                pattern_type::LITERAL,
                ALICE,
                op::READ,
            )],
        )
        .await;
    }
    for i in 0..3 {
        let b = node(&c, i);
        let mut seen = 0;
        for _ in 0..100 {
            seen = b.cluster.image().acls.len();
            if seen == 3 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(seen, 3, "node {} has every ACL", i + 1);
        let authz = strata::handlers::common::authz::Authz::new(&b, &{
            let conn = ConnectionContext::plaintext_broker("127.0.0.1:1".parse().unwrap());
            conn.set_principal(KafkaPrincipal::parse(ALICE).unwrap());
            conn
        });
        assert!(authz.topic(op::READ, "t2") && !authz.topic(op::WRITE, "t2"));
    }
    // A restarted node reads them back from the metadata log.
    c.stop_node(2).await;
    c.start_node(2).await;
    let restarted = node(&c, 2);
    let mut seen = 0;
    for _ in 0..100 {
        seen = restarted.cluster.image().acls.len();
        if seen == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(seen, 3, "the restarted node replayed the ACLs");
}
