//! The matching rules of Kafka's StandardAuthorizer, one rule per test.
use super::*;
use crate::protocol::acl::resource_type;

fn acl(name: &str, pt: i8, principal: &str, host: &str, op: i8, perm: i8) -> AclBinding {
    AclBinding {
        resource_type: resource_type::TOPIC,
        resource_name: name.into(),
        pattern_type: pt,
        principal: principal.into(),
        host: host.into(),
        operation: op,
        permission_type: perm,
    }
}

fn index(acls: &[AclBinding]) -> AclIndex {
    let mut index = AclIndex::default();
    for (i, a) in acls.iter().enumerate() {
        index.add([i as u8 + 1; 16], a.clone());
    }
    index
}

const LIT: i8 = pattern_type::LITERAL;
const PRE: i8 = pattern_type::PREFIXED;
const ALLOW: i8 = permission_type::ALLOW;
const DENY: i8 = permission_type::DENY;

fn alice() -> KafkaPrincipal {
    KafkaPrincipal::user("alice")
}

fn can(
    a: &Authorizer,
    acls: &AclIndex,
    who: &KafkaPrincipal,
    host: &str,
    op: i8,
    topic: &str,
) -> bool {
    a.authorize(
        acls,
        who,
        host,
        Action {
            operation: op,
            resource_type: resource_type::TOPIC,
            name: topic,
        },
        true,
    )
}

#[test]
fn no_acl_found_follows_allow_everyone() {
    let acls = AclIndex::default();
    let strict = Authorizer::new([], false);
    let open = Authorizer::new([], true);
    assert!(!can(
        &strict,
        &acls,
        &alice(),
        "10.0.0.1",
        operation::READ,
        "t"
    ));
    assert!(can(
        &open,
        &acls,
        &alice(),
        "10.0.0.1",
        operation::READ,
        "t"
    ));
    // With an ACL on the resource for someone else, allow.everyone no longer applies.
    let acls = index(&[acl("t", LIT, "User:bob", "*", operation::READ, ALLOW)]);
    assert!(!can(
        &open,
        &acls,
        &alice(),
        "10.0.0.1",
        operation::READ,
        "t"
    ));
    // ... but a resource without ACLs stays open.
    assert!(can(
        &open,
        &acls,
        &alice(),
        "10.0.0.1",
        operation::READ,
        "other"
    ));
}

#[test]
fn super_users_are_allowed_everything_even_against_deny() {
    let acls = index(&[acl("*", LIT, "User:*", "*", operation::ALL, DENY)]);
    let a = Authorizer::new(["User:admin".to_string()], false);
    assert!(can(
        &a,
        &acls,
        &KafkaPrincipal::user("admin"),
        "h",
        operation::DELETE,
        "t"
    ));
    assert!(!can(&a, &acls, &alice(), "h", operation::DESCRIBE, "t"));
    assert!(a.is_super_user(&KafkaPrincipal::user("admin")));
    assert!(!a.is_super_user(&KafkaPrincipal::parse("Group:admin").unwrap()));
}

#[test]
fn deny_wins_over_allow() {
    let a = Authorizer::new([], false);
    let acls = index(&[
        acl("t", LIT, "User:alice", "*", operation::READ, ALLOW),
        acl("t", PRE, "User:*", "*", operation::READ, DENY),
    ]);
    assert!(!can(&a, &acls, &alice(), "h", operation::READ, "t"));
    let acls = index(&[
        acl("*", LIT, "User:alice", "*", operation::ALL, ALLOW),
        acl("t", LIT, "User:alice", "10.0.0.9", operation::WRITE, DENY),
    ]);
    assert!(can(&a, &acls, &alice(), "10.0.0.1", operation::WRITE, "t"));
    assert!(!can(&a, &acls, &alice(), "10.0.0.9", operation::WRITE, "t"));
}

#[test]
fn patterns_literal_prefixed_and_wildcard() {
    let a = Authorizer::new([], false);
    let acls = index(&[
        acl("orders", LIT, "User:alice", "*", operation::READ, ALLOW),
        acl("logs-", PRE, "User:alice", "*", operation::READ, ALLOW),
        acl("*", LIT, "User:alice", "*", operation::WRITE, ALLOW),
    ]);
    assert!(can(&a, &acls, &alice(), "h", operation::READ, "orders"));
    assert!(!can(&a, &acls, &alice(), "h", operation::READ, "orders2"));
    assert!(can(&a, &acls, &alice(), "h", operation::READ, "logs-app"));
    assert!(can(&a, &acls, &alice(), "h", operation::READ, "logs-"));
    assert!(!can(&a, &acls, &alice(), "h", operation::READ, "logs"));
    assert!(can(&a, &acls, &alice(), "h", operation::WRITE, "anything"));
    // A literal ACL named `*` is the wildcard; a PREFIXED `*` is only the prefix "*".
    let acls = index(&[acl("*", PRE, "User:alice", "*", operation::READ, ALLOW)]);
    assert!(!can(&a, &acls, &alice(), "h", operation::READ, "t"));
}

#[test]
fn principal_wildcard_and_host_matching() {
    let a = Authorizer::new([], false);
    let acls = index(&[
        acl("t", LIT, "User:*", "10.0.0.1", operation::READ, ALLOW),
        acl("u", LIT, "User:bob", "*", operation::READ, ALLOW),
    ]);
    assert!(can(&a, &acls, &alice(), "10.0.0.1", operation::READ, "t"));
    assert!(!can(&a, &acls, &alice(), "10.0.0.2", operation::READ, "t"));
    assert!(!can(&a, &acls, &alice(), "10.0.0.1", operation::READ, "u"));
    // Kafka adds `User:*` to every caller's matching principals, whatever its type.
    let group = KafkaPrincipal::parse("Group:x").unwrap();
    assert!(can(&a, &acls, &group, "10.0.0.1", operation::READ, "t"));
}

#[test]
fn implied_operations_apply_to_allow_only() {
    let a = Authorizer::new([], false);
    for implying in [
        operation::READ,
        operation::WRITE,
        operation::DELETE,
        operation::ALTER,
    ] {
        let acls = index(&[acl("t", LIT, "User:alice", "*", implying, ALLOW)]);
        assert!(
            can(&a, &acls, &alice(), "h", operation::DESCRIBE, "t"),
            "{implying}"
        );
        assert!(!can(&a, &acls, &alice(), "h", operation::CREATE, "t"));
    }
    let acls = index(&[acl("t", LIT, "User:alice", "*", operation::CREATE, ALLOW)]);
    assert!(!can(&a, &acls, &alice(), "h", operation::DESCRIBE, "t"));
    let acls = index(&[acl(
        "t",
        LIT,
        "User:alice",
        "*",
        operation::ALTER_CONFIGS,
        ALLOW,
    )]);
    assert!(can(
        &a,
        &acls,
        &alice(),
        "h",
        operation::DESCRIBE_CONFIGS,
        "t"
    ));
    assert!(!can(&a, &acls, &alice(), "h", operation::ALTER, "t"));
    let acls = index(&[acl("t", LIT, "User:alice", "*", operation::ALL, ALLOW)]);
    for op in operations_of(resource_type::TOPIC) {
        assert!(can(&a, &acls, &alice(), "h", *op, "t"));
    }
    // DENY READ does not deny DESCRIBE implied by ALLOW WRITE; DENY ALL denies it.
    let acls = index(&[
        acl("t", LIT, "User:alice", "*", operation::WRITE, ALLOW),
        acl("t", LIT, "User:alice", "*", operation::READ, DENY),
    ]);
    assert!(can(&a, &acls, &alice(), "h", operation::DESCRIBE, "t"));
    let acls = index(&[
        acl("t", LIT, "User:alice", "*", operation::WRITE, ALLOW),
        acl("t", LIT, "User:alice", "*", operation::ALL, DENY),
    ]);
    assert!(!can(&a, &acls, &alice(), "h", operation::DESCRIBE, "t"));
}

#[test]
fn by_resource_type_needs_an_allow_not_covered_by_a_deny() {
    let a = Authorizer::new([], false);
    let by_type = |acls: &AclIndex| {
        a.authorize_by_resource_type(acls, &alice(), "h", operation::WRITE, resource_type::TOPIC)
    };
    assert!(!by_type(&AclIndex::default()));
    assert!(Authorizer::new([], true).authorize_by_resource_type(
        &AclIndex::default(),
        &alice(),
        "h",
        operation::WRITE,
        resource_type::TOPIC
    ));
    assert!(by_type(&index(&[acl(
        "t",
        LIT,
        "User:alice",
        "*",
        operation::WRITE,
        ALLOW
    )])));
    assert!(!by_type(&index(&[
        acl("logs-a", LIT, "User:alice", "*", operation::WRITE, ALLOW),
        acl("logs-", PRE, "User:alice", "*", operation::WRITE, DENY),
    ])));
    assert!(!by_type(&index(&[
        acl("t", PRE, "User:alice", "*", operation::WRITE, ALLOW),
        acl("*", LIT, "User:*", "*", operation::WRITE, DENY),
    ])));
    assert!(by_type(&index(&[
        acl("t", PRE, "User:alice", "*", operation::WRITE, ALLOW),
        acl("u", LIT, "User:alice", "*", operation::WRITE, DENY),
    ])));
}
