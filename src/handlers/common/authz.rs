//! The handlers' one call into the authorizer (Kafka's `AuthHelper`): an [`Authz`] is built
//! once per request from the connection's principal and address and the ACLs of the current
//! metadata image, and answers each check in one call. Without an authorizer configured every
//! check passes, as in Kafka.
//!
//! CreateTopics, DeleteTopics and CreatePartitions reach the active controller in an Envelope
//! (`handlers/envelope.rs`) and are authorized there with the client's principal, as in Kafka.
//! Other admin requests forwarded by a broker carry no envelope in Strata: the broker
//! authorized them with the client's principal. A controller listener therefore treats a peer
//! that may CLUSTER_ACTION on the cluster (a broker) as Kafka treats an Envelope from one: its
//! requests pass every check. Any other principal on a controller listener is authorized like
//! a client.
use std::sync::Arc;

use crate::broker::Broker;
use crate::controller::MetadataImage;
use crate::error::ErrorCode;
use crate::handlers::{connection_scope, ConnectionContext, ListenerScope};
use crate::protocol::acl::{operation, resource_type, CLUSTER_NAME};
use crate::security::authorizer::{operations_of, Action};
use crate::security::{Authorizer, KafkaPrincipal};

/// One request's authorization context.
pub struct Authz {
    authorizer: Option<(Arc<Authorizer>, Arc<MetadataImage>)>,
    /// A broker forwarding on a controller listener: every check passes.
    trusted: bool,
    principal: Arc<KafkaPrincipal>,
    host: String,
}

impl Authz {
    pub fn new(broker: &Broker, conn: &ConnectionContext) -> Authz {
        let principal = conn.principal();
        let Some(authorizer) = broker.authorizer.clone() else {
            // No authorizer: every check passes; nothing to format on the hot path.
            return Authz {
                authorizer: None,
                trusted: false,
                principal,
                host: String::new(),
            };
        };
        let host = conn.peer.ip().to_string();
        let image = broker.cluster.image();
        let mut authz = Authz {
            authorizer: Some((authorizer, image)),
            trusted: false,
            principal,
            host,
        };
        if connection_scope(broker, conn) == ListenerScope::Controller {
            authz.trusted = authz.check(
                operation::CLUSTER_ACTION,
                resource_type::CLUSTER,
                CLUSTER_NAME,
                false,
            );
        }
        authz
    }

    /// Whether an authorizer is configured (the ACL APIs answer SECURITY_DISABLED otherwise).
    pub fn enabled(&self) -> bool {
        self.authorizer.is_some()
    }

    pub fn principal(&self) -> &KafkaPrincipal {
        &self.principal
    }

    /// May the caller do `op` on `resource_type:name`? A refusal is audited.
    pub fn allowed(&self, op: i8, resource_type: i8, name: &str) -> bool {
        self.check(op, resource_type, name, true)
    }

    /// As [`Self::allowed`], for checks that only filter what a response shows (not audited).
    pub fn visible(&self, op: i8, resource_type: i8, name: &str) -> bool {
        self.check(op, resource_type, name, false)
    }

    fn check(&self, op: i8, resource_type: i8, name: &str, log_denial: bool) -> bool {
        let Some((authorizer, image)) = &self.authorizer else {
            return true;
        };
        if self.trusted {
            return true;
        }
        authorizer.authorize(
            &image.acls,
            &self.principal,
            &self.host,
            Action {
                operation: op,
                resource_type,
                name,
            },
            log_denial,
        )
    }

    pub fn topic(&self, op: i8, name: &str) -> bool {
        self.allowed(op, resource_type::TOPIC, name)
    }

    pub fn group(&self, op: i8, name: &str) -> bool {
        self.allowed(op, resource_type::GROUP, name)
    }

    pub fn transactional_id(&self, op: i8, id: &str) -> bool {
        self.allowed(op, resource_type::TRANSACTIONAL_ID, id)
    }

    /// Why CreateAcls or DeleteAcls is refused, as Kafka answers them: ALTER on the cluster
    /// first (CLUSTER_AUTHORIZATION_FAILED), then an authorizer to hold the ACLs
    /// (SECURITY_DISABLED).
    pub fn acl_change_refusal(&self) -> Option<(ErrorCode, String)> {
        if !self.cluster(operation::ALTER) {
            let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
            return Some((code, code.message()));
        }
        if !self.enabled() {
            let message = crate::handlers::describe_acls::NO_AUTHORIZER.to_string();
            return Some((ErrorCode::SECURITY_DISABLED, message));
        }
        None
    }

    pub fn cluster(&self, op: i8) -> bool {
        self.allowed(op, resource_type::CLUSTER, CLUSTER_NAME)
    }

    /// The cluster check as an error: CLUSTER_AUTHORIZATION_FAILED when refused.
    pub fn require_cluster(&self, op: i8) -> Result<(), ErrorCode> {
        if self.cluster(op) {
            Ok(())
        } else {
            Err(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
        }
    }

    /// May the caller do `op` on some resource of the type (Kafka's `authorizeByResourceType`)?
    pub fn any_of_type(&self, op: i8, resource_type: i8) -> bool {
        let Some((authorizer, image)) = &self.authorizer else {
            return true;
        };
        self.trusted
            || authorizer.authorize_by_resource_type(
                &image.acls,
                &self.principal,
                &self.host,
                op,
                resource_type,
            )
    }

    /// KIP-430's authorized operations of a resource: bit `op` set for each operation of the
    /// resource type the caller may do.
    pub fn authorized_operations(&self, resource_type: i8, name: &str) -> i32 {
        operations_of(resource_type)
            .iter()
            .filter(|op| self.visible(**op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << *op))
    }
}

/// For an API that needs one operation on the cluster: when the caller may not do it, the
/// response to send instead (the API's own response with CLUSTER_AUTHORIZATION_FAILED set by
/// `refuse`).
pub fn refuse_cluster<R>(
    broker: &Broker,
    conn: &ConnectionContext,
    header: &crate::protocol::header::RequestHeader,
    op: i8,
    refuse: impl FnOnce(&mut R, ErrorCode),
) -> Option<crate::handlers::ResponseFuture>
where
    R: crate::protocol::codec::Encode + Default + Send + 'static,
{
    if Authz::new(broker, conn).cluster(op) {
        return None;
    }
    let mut response = R::default();
    refuse(&mut response, ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    Some(crate::handlers::ready(header.clone(), Some(response)))
}

impl Authz {
    /// The refusal of DESCRIBE_CONFIGS / ALTER_CONFIGS (`op`) on a config resource (Kafka's
    /// `ConfigResource.Type` ids): a topic needs it on the topic (TOPIC_AUTHORIZATION_FAILED),
    /// a group on the group (GROUP_AUTHORIZATION_FAILED), a broker, broker logger or client
    /// metrics resource on the cluster (CLUSTER_AUTHORIZATION_FAILED).
    pub fn config_refusal(
        &self,
        op: i8,
        config_resource_type: i8,
        name: &str,
    ) -> Option<ErrorCode> {
        let (allowed, code) = match config_resource_type {
            2 => (self.topic(op, name), ErrorCode::TOPIC_AUTHORIZATION_FAILED),
            32 => (self.group(op, name), ErrorCode::GROUP_AUTHORIZATION_FAILED),
            _ => (self.cluster(op), ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
        };
        (!allowed).then_some(code)
    }
}
