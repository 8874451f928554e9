//! The authorizer, with the semantics of Kafka's `StandardAuthorizer` (KRaft): ACLs come from
//! the metadata image ([`AclIndex`]), so every broker decides alike and a change reaches each
//! one with the metadata log.
//!
//! The rules, in order: a principal named in `super.users` is allowed everything; otherwise
//! the ACLs that apply to the resource (its literal name, the literal wildcard `*`, and every
//! PREFIXED pattern the name starts with) whose principal is the caller's or `User:*` and whose
//! host is `*` or the client's IP decide: a matching DENY wins over any ALLOW; an ALLOW for
//! READ, WRITE, DELETE or ALTER implies DESCRIBE, one for ALTER_CONFIGS implies
//! DESCRIBE_CONFIGS, and ALL matches every operation (implication applies to ALLOW only: a DENY
//! of READ does not deny DESCRIBE). A resource that has no ACL at all, for anybody, is allowed
//! when `allow.everyone.if.no.acl.found` is true and denied otherwise; a resource with ACLs
//! none of which allows the caller is denied.
//!
//! Denials are logged at debug under the target `kafka.authorizer.logger` (Kafka's audit
//! logger name), at most [`DENIAL_LOGS_PER_SECOND`] a second, so a client retrying a refused
//! request cannot flood the log.
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::BrokerConfig;
use crate::controller::acls::{AclBinding, AclIndex};
use crate::protocol::acl::{
    operation, pattern_type, permission_type, WILDCARD, WILDCARD_PRINCIPAL,
};
use crate::security::KafkaPrincipal;

/// Denials logged per second at most; the rest are counted in the next line logged.
pub const DENIAL_LOGS_PER_SECOND: u64 = 20;

/// The logger name Kafka's authorizer audits under.
const AUDIT_TARGET: &str = "kafka.authorizer.logger";

/// What one authorization asks: may `principal`, from `host`, do `operation` on the resource
/// `resource_type:name`?
#[derive(Debug, Clone, Copy)]
pub struct Action<'a> {
    pub operation: i8,
    pub resource_type: i8,
    pub name: &'a str,
}

/// Kafka's `StandardAuthorizer`, configured by `super.users` and
/// `allow.everyone.if.no.acl.found`.
#[derive(Debug)]
pub struct Authorizer {
    super_users: HashSet<String>,
    allow_everyone_if_no_acl_found: bool,
    /// (second of the last logged denial, denials in that second).
    log_window: AtomicU64,
}

/// Why an authorization ended as it did (Kafka's `MatchingRule`), for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule<'a> {
    SuperUser,
    Acl(&'a AclBinding),
    /// No ACL applies to the resource: `allow.everyone.if.no.acl.found` decides.
    NoAcls(bool),
    /// ACLs apply to the resource, none to this caller.
    DefaultDeny,
}

impl Rule<'_> {
    fn allowed(&self) -> bool {
        match self {
            Rule::SuperUser => true,
            Rule::Acl(acl) => acl.permission_type == permission_type::ALLOW,
            Rule::NoAcls(allowed) => *allowed,
            Rule::DefaultDeny => false,
        }
    }
}

impl Authorizer {
    /// The authorizer the config asks for (`authorizer.class.name` set), if any.
    pub fn from_config(config: &BrokerConfig) -> Option<Authorizer> {
        config.authorizer_enabled.then(|| {
            Authorizer::new(
                config.super_users.iter().cloned(),
                config.allow_everyone_if_no_acl_found,
            )
        })
    }

    pub fn new(
        super_users: impl IntoIterator<Item = String>,
        allow_everyone_if_no_acl_found: bool,
    ) -> Authorizer {
        Authorizer {
            super_users: super_users.into_iter().collect(),
            allow_everyone_if_no_acl_found,
            log_window: AtomicU64::new(0),
        }
    }

    pub fn is_super_user(&self, principal: &KafkaPrincipal) -> bool {
        !self.super_users.is_empty() && self.super_users.contains(&principal.to_string())
    }

    /// Whether `principal` connecting from `host` (an IP address as text) may do `action`.
    /// `log_denial` false for checks that only filter (Metadata's topic list, authorized
    /// operations), which Kafka does not audit as refused requests.
    pub fn authorize(
        &self,
        acls: &AclIndex,
        principal: &KafkaPrincipal,
        host: &str,
        action: Action<'_>,
        log_denial: bool,
    ) -> bool {
        let principal_text = principal.to_string();
        let rule = self.find_rule(acls, &principal_text, host, action);
        let allowed = rule.allowed();
        if !allowed && log_denial {
            self.log_denial(&principal_text, host, action, &rule);
        }
        allowed
    }

    fn find_rule<'a>(
        &self,
        acls: &'a AclIndex,
        principal: &str,
        host: &str,
        action: Action<'a>,
    ) -> Rule<'a> {
        if self.super_users.contains(principal) {
            return Rule::SuperUser;
        }
        let mut any_acl = false;
        let mut allow = None;
        for acl in acls.for_resource(action.resource_type, action.name) {
            any_acl = true;
            match applies(acl, principal, host, action.operation) {
                Some(true) => allow = Some(acl),
                Some(false) => return Rule::Acl(acl),
                None => {}
            }
        }
        match allow {
            Some(acl) => Rule::Acl(acl),
            None if !any_acl => Rule::NoAcls(self.allow_everyone_if_no_acl_found),
            None => Rule::DefaultDeny,
        }
    }

    /// Whether `principal` may do `op` on at least one resource of `resource_type` (Kafka's
    /// `Authorizer.authorizeByResourceType`, used where an operation on any topic stands in
    /// for a cluster permission, e.g. an idempotent producer without IDEMPOTENT_WRITE): some
    /// ALLOW pattern for the caller that no DENY for the caller covers (a DENY on the literal
    /// wildcard covers every pattern; a DENY of the same literal name, or of a prefix of the
    /// allowed pattern, covers it).
    pub fn authorize_by_resource_type(
        &self,
        acls: &AclIndex,
        principal: &KafkaPrincipal,
        host: &str,
        op: i8,
        resource_type: i8,
    ) -> bool {
        let principal = principal.to_string();
        if self.super_users.contains(&principal) {
            return true;
        }
        let mut any_acl = false;
        let mut allows = Vec::new();
        let mut denies = Vec::new();
        for acl in acls.for_resource_type(resource_type) {
            any_acl = true;
            match applies(acl, &principal, host, op) {
                Some(true) => allows.push(acl),
                Some(false) => denies.push(acl),
                None => {}
            }
        }
        if !any_acl {
            return self.allow_everyone_if_no_acl_found;
        }
        let covers = |deny: &AclBinding, allow: &AclBinding| {
            (deny.pattern_type == pattern_type::LITERAL && deny.resource_name == WILDCARD)
                || (deny.pattern_type == pattern_type::PREFIXED
                    && allow.resource_name.starts_with(&deny.resource_name))
                || (deny.pattern_type == pattern_type::LITERAL
                    && allow.pattern_type == pattern_type::LITERAL
                    && deny.resource_name == allow.resource_name)
        };
        allows.iter().any(|a| !denies.iter().any(|d| covers(d, a)))
    }

    fn log_denial(&self, principal: &str, host: &str, action: Action<'_>, rule: &Rule<'_>) {
        if !tracing::enabled!(target: AUDIT_TARGET, tracing::Level::DEBUG) {
            return;
        }
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        // The window packs the second (high 48 bits) and the count in it (low 16 bits).
        let window = self.log_window.load(Ordering::Relaxed);
        let (second, count) = (window >> 16, window & 0xffff);
        let count = if second == now_s { count + 1 } else { 1 };
        self.log_window
            .store((now_s << 16) | count.min(0xffff), Ordering::Relaxed);
        if count > DENIAL_LOGS_PER_SECOND {
            return;
        }
        tracing::debug!(
            target: AUDIT_TARGET,
            principal,
            host,
            operation = operation_name(action.operation),
            resource = %format!("{}:{}", resource_type_name(action.resource_type), action.name),
            rule = ?rule,
            "Principal = {principal} is Denied operation = {} from host = {host} on resource = {}:{}",
            operation_name(action.operation),
            resource_type_name(action.resource_type),
            action.name,
        );
    }
}

/// Whether `acl` applies to the caller and operation: Some(true) for an ALLOW, Some(false)
/// for a DENY, None when it does not match (Kafka's `StandardAuthorizerData.findResult`).
fn applies(acl: &AclBinding, principal: &str, host: &str, op: i8) -> Option<bool> {
    if acl.principal != principal && acl.principal != WILDCARD_PRINCIPAL {
        return None;
    }
    if acl.host != WILDCARD && acl.host != host {
        return None;
    }
    let allow = acl.permission_type == permission_type::ALLOW;
    if acl.operation != operation::ALL {
        let matches = if allow {
            match op {
                operation::DESCRIBE => matches!(
                    acl.operation,
                    operation::DESCRIBE
                        | operation::READ
                        | operation::WRITE
                        | operation::DELETE
                        | operation::ALTER
                ),
                operation::DESCRIBE_CONFIGS => matches!(
                    acl.operation,
                    operation::DESCRIBE_CONFIGS | operation::ALTER_CONFIGS
                ),
                _ => acl.operation == op,
            }
        } else {
            acl.operation == op
        };
        if !matches {
            return None;
        }
    }
    Some(allow)
}

/// Kafka's `AclOperation` names, as kafka-acls prints them.
pub fn operation_name(op: i8) -> &'static str {
    match op {
        operation::ANY => "ANY",
        operation::ALL => "ALL",
        operation::READ => "READ",
        operation::WRITE => "WRITE",
        operation::CREATE => "CREATE",
        operation::DELETE => "DELETE",
        operation::ALTER => "ALTER",
        operation::DESCRIBE => "DESCRIBE",
        operation::CLUSTER_ACTION => "CLUSTER_ACTION",
        operation::DESCRIBE_CONFIGS => "DESCRIBE_CONFIGS",
        operation::ALTER_CONFIGS => "ALTER_CONFIGS",
        operation::IDEMPOTENT_WRITE => "IDEMPOTENT_WRITE",
        operation::CREATE_TOKENS => "CREATE_TOKENS",
        operation::DESCRIBE_TOKENS => "DESCRIBE_TOKENS",
        _ => "UNKNOWN",
    }
}

/// Kafka's `ResourceType` names as its audit log writes them.
pub fn resource_type_name(rt: i8) -> &'static str {
    use crate::protocol::acl::resource_type as r;
    match rt {
        r::TOPIC => "Topic",
        r::GROUP => "Group",
        r::CLUSTER => "Cluster",
        r::TRANSACTIONAL_ID => "TransactionalId",
        r::DELEGATION_TOKEN => "DelegationToken",
        r::USER => "User",
        _ => "Unknown",
    }
}

/// The operations Kafka reports as a resource's authorized operations (KIP-430), by
/// resource type: what Metadata's and DescribeCluster's `*_authorized_operations` range over.
pub fn operations_of(resource_type: i8) -> &'static [i8] {
    use crate::protocol::acl::resource_type as r;
    match resource_type {
        r::TOPIC => &[
            operation::READ,
            operation::WRITE,
            operation::CREATE,
            operation::DELETE,
            operation::ALTER,
            operation::DESCRIBE,
            operation::DESCRIBE_CONFIGS,
            operation::ALTER_CONFIGS,
        ],
        r::CLUSTER => &[
            operation::CREATE,
            operation::ALTER,
            operation::DESCRIBE,
            operation::CLUSTER_ACTION,
            operation::DESCRIBE_CONFIGS,
            operation::ALTER_CONFIGS,
            operation::IDEMPOTENT_WRITE,
        ],
        r::GROUP => &[operation::READ, operation::DELETE, operation::DESCRIBE],
        r::TRANSACTIONAL_ID => &[operation::WRITE, operation::DESCRIBE],
        _ => &[],
    }
}

#[cfg(test)]
mod tests;
