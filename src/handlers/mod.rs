//! One module per Kafka API (this folder's listing is the API table; what several handlers
//! share is in [`common`]), and here the table itself, which drives both dispatch and
//! ApiVersions, so the versions we advertise cannot drift from the ones we serve.
//!
//! Each API module exposes `async fn start(broker, header, request, conn) -> ResponseFuture`:
//! it checks and starts the work, and the future it returns yields the framed response (None
//! only for `acks=0` produce, which Kafka never answers). Work that waits (an acks=all append,
//! a coordinator's reply) waits in that future, so later requests of the connection start.
//!
//! This file also holds [`start`], which reads a frame's header and closes the connection where
//! Kafka does (unknown key, unadvertised version, an API its listener does not serve, a request
//! that does not parse); the listener scopes ([`CONTROLLER_APIS`], [`CONTROLLER_ONLY_APIS`]);
//! the futures handlers answer with ([`ready`], [`later`], [`after_group_write`],
//! [`controller_only`], [`forwarded`]); and the README's API and config tables.
//!
//! A handler may use the broker and everything below it; only `server` and `admin` are above.
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::protocol::codec::{Decode, DecodeError, Encode};
use crate::protocol::header::{
    request_header_version, response_header_version, RequestHeader, ResponseHeader,
};

pub mod common;

// Private: every handler names the Broker as `super::Broker`; nothing outside uses this path.
use crate::broker::Broker;
pub use common::connection_context::{ConnectionContext, ListenerScope};
pub use common::response::Response;

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod add_raft_voter;
pub mod allocate_producer_ids;
pub mod alter_client_quotas;
pub mod alter_configs;
pub mod alter_partition;
pub mod alter_partition_reassignments;
pub mod alter_share_group_offsets;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod assign_replicas_to_dirs;
pub mod broker_heartbeat;
pub mod broker_registration;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_acls;
pub mod create_delegation_token;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_share_group_offsets;
pub mod delete_share_group_state;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_delegation_token;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_share_group_offsets;
pub mod describe_topic_partitions;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod end_txn;
pub mod envelope;
pub mod expire_delegation_token;
pub mod fetch;
pub mod find_coordinator;
pub mod get_telemetry_subscriptions;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod initialize_share_group_state;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod push_telemetry;
pub mod read_share_group_state;
pub mod read_share_group_state_summary;
pub mod remove_raft_voter;
pub mod renew_delegation_token;
pub mod sasl_authenticate;
pub mod sasl_handshake;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod sync_group;
pub mod txn_offset_commit;
pub mod update_features;
pub mod write_share_group_state;
pub mod write_txn_markers;

/// A response future, ready to be spawned; yields the framed response (None: send nothing).
pub type ResponseFuture = Pin<Box<dyn Future<Output = Option<Response>> + Send + 'static>>;

/// Whether a request of `api_key` whose future must wait after its first poll loses nothing but
/// its answer when that future is dropped. A Fetch's effects (a follower's fetch position, the
/// reads) happen at each check of its long poll, and the wait between checks only watches its
/// partitions; so the connection's writer can await it in its turn, rather than a task of its
/// own, and drop it when the client goes away. Everything else that waits (an acks=all produce
/// after its append, a coordinator's reply, a share fetch that acquires records) runs to its end
/// whatever happens to the connection.
pub fn droppable_while_waiting(api_key: i16) -> bool {
    api_key == fetch_request::FetchRequest::API_KEY
}

pub enum Outcome {
    Respond(ResponseFuture),
    /// Kafka closes the connection for requests it cannot parse (unknown key, bad header).
    Close(String),
}

/// Generates the supported-API table and the dispatch `match` from one list.
macro_rules! api_table {
    ($( $key:literal => $module:ident, $req:ty, $min:literal ..= $max:literal; )*) => {
        // The literal keys (match patterns) are the generated `API_KEY`s, checked at compile time.
        $( const _: () = assert!($key == <$req>::API_KEY); )*

        /// Every API Strata serves: (api key, name, min version, max version).
        pub const SUPPORTED_APIS: &[(i16, &str, i16, i16)] = &[
            $( ($key, stringify!($module), $min, $max), )*
        ];


        async fn dispatch(broker: Arc<Broker>, header: RequestHeader, mut body: Bytes, conn: Arc<ConnectionContext>) -> Result<ResponseFuture, DecodeError> {
            let version = header.api_version;
            match header.api_key {
                $( $key => {
                    let request = <$req>::decode(&mut body, version)?;
                    // The request now holds the only references to the frame, so Produce can
                    // assign offsets in the received bytes instead of copying them.
                    drop(body);
                    // The request quota (KIP-124) measures the handler's own work.
                    let quota = common::throttle::RequestQuota::start(&broker, &header, &conn);
                    let response = $module::start(broker, header, request, conn).await;
                    Ok(match quota {
                        Some(q) => q.wrap(response),
                        None => response,
                    })
                } )*
                other => Err(DecodeError::UnknownApiKey(other)),
            }
        }
    };
}

use crate::protocol::messages::*;

api_table! {
    0 => produce, produce_request::ProduceRequest, 0..=13;
    1 => fetch, fetch_request::FetchRequest, 4..=18;
    2 => list_offsets, list_offsets_request::ListOffsetsRequest, 1..=11;
    3 => metadata, metadata_request::MetadataRequest, 0..=13;
    8 => offset_commit, offset_commit_request::OffsetCommitRequest, 2..=10;
    9 => offset_fetch, offset_fetch_request::OffsetFetchRequest, 1..=10;
    10 => find_coordinator, find_coordinator_request::FindCoordinatorRequest, 0..=6;
    11 => join_group, join_group_request::JoinGroupRequest, 0..=9;
    12 => heartbeat, heartbeat_request::HeartbeatRequest, 0..=4;
    13 => leave_group, leave_group_request::LeaveGroupRequest, 0..=5;
    14 => sync_group, sync_group_request::SyncGroupRequest, 0..=5;
    15 => describe_groups, describe_groups_request::DescribeGroupsRequest, 0..=6;
    16 => list_groups, list_groups_request::ListGroupsRequest, 0..=5;
    17 => sasl_handshake, sasl_handshake_request::SaslHandshakeRequest, 0..=1;
    18 => api_versions, api_versions_request::ApiVersionsRequest, 0..=4;
    19 => create_topics, create_topics_request::CreateTopicsRequest, 2..=7;
    20 => delete_topics, delete_topics_request::DeleteTopicsRequest, 1..=6;
    21 => delete_records, delete_records_request::DeleteRecordsRequest, 0..=2;
    22 => init_producer_id, init_producer_id_request::InitProducerIdRequest, 0..=5;
    23 => offset_for_leader_epoch, offset_for_leader_epoch_request::OffsetForLeaderEpochRequest, 2..=4;
    24 => add_partitions_to_txn, add_partitions_to_txn_request::AddPartitionsToTxnRequest, 0..=5;
    25 => add_offsets_to_txn, add_offsets_to_txn_request::AddOffsetsToTxnRequest, 0..=4;
    26 => end_txn, end_txn_request::EndTxnRequest, 0..=5;
    27 => write_txn_markers, write_txn_markers_request::WriteTxnMarkersRequest, 0..=2;
    28 => txn_offset_commit, txn_offset_commit_request::TxnOffsetCommitRequest, 0..=5;
    29 => describe_acls, describe_acls_request::DescribeAclsRequest, 1..=3;
    30 => create_acls, create_acls_request::CreateAclsRequest, 1..=3;
    31 => delete_acls, delete_acls_request::DeleteAclsRequest, 1..=3;
    32 => describe_configs, describe_configs_request::DescribeConfigsRequest, 1..=4;
    33 => alter_configs, alter_configs_request::AlterConfigsRequest, 0..=2;
    35 => describe_log_dirs, describe_log_dirs_request::DescribeLogDirsRequest, 1..=5;
    36 => sasl_authenticate, sasl_authenticate_request::SaslAuthenticateRequest, 0..=2;
    37 => create_partitions, create_partitions_request::CreatePartitionsRequest, 0..=3;
    38 => create_delegation_token, create_delegation_token_request::CreateDelegationTokenRequest, 0..=3;
    39 => renew_delegation_token, renew_delegation_token_request::RenewDelegationTokenRequest, 0..=2;
    40 => expire_delegation_token, expire_delegation_token_request::ExpireDelegationTokenRequest, 0..=2;
    41 => describe_delegation_token, describe_delegation_token_request::DescribeDelegationTokenRequest, 0..=3;
    42 => delete_groups, delete_groups_request::DeleteGroupsRequest, 0..=2;
    43 => elect_leaders, elect_leaders_request::ElectLeadersRequest, 0..=2;
    44 => incremental_alter_configs, incremental_alter_configs_request::IncrementalAlterConfigsRequest, 0..=1;
    45 => alter_partition_reassignments, alter_partition_reassignments_request::AlterPartitionReassignmentsRequest, 0..=1;
    46 => list_partition_reassignments, list_partition_reassignments_request::ListPartitionReassignmentsRequest, 0..=0;
    47 => offset_delete, offset_delete_request::OffsetDeleteRequest, 0..=0;
    48 => describe_client_quotas, describe_client_quotas_request::DescribeClientQuotasRequest, 0..=1;
    49 => alter_client_quotas, alter_client_quotas_request::AlterClientQuotasRequest, 0..=1;
    50 => describe_user_scram_credentials, describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest, 0..=0;
    51 => alter_user_scram_credentials, alter_user_scram_credentials_request::AlterUserScramCredentialsRequest, 0..=0;
    55 => describe_quorum, describe_quorum_request::DescribeQuorumRequest, 0..=2;
    56 => alter_partition, alter_partition_request::AlterPartitionRequest, 0..=3;
    57 => update_features, update_features_request::UpdateFeaturesRequest, 0..=2;
    58 => envelope, envelope_request::EnvelopeRequest, 0..=0;
    60 => describe_cluster, describe_cluster_request::DescribeClusterRequest, 0..=2;
    61 => describe_producers, describe_producers_request::DescribeProducersRequest, 0..=0;
    62 => broker_registration, broker_registration_request::BrokerRegistrationRequest, 0..=4;
    63 => broker_heartbeat, broker_heartbeat_request::BrokerHeartbeatRequest, 0..=1;
    65 => describe_transactions, describe_transactions_request::DescribeTransactionsRequest, 0..=0;
    66 => list_transactions, list_transactions_request::ListTransactionsRequest, 0..=2;
    67 => allocate_producer_ids, allocate_producer_ids_request::AllocateProducerIdsRequest, 0..=0;
    68 => consumer_group_heartbeat, consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest, 0..=1;
    69 => consumer_group_describe, consumer_group_describe_request::ConsumerGroupDescribeRequest, 0..=1;
    71 => get_telemetry_subscriptions, get_telemetry_subscriptions_request::GetTelemetrySubscriptionsRequest, 0..=0;
    72 => push_telemetry, push_telemetry_request::PushTelemetryRequest, 0..=0;
    73 => assign_replicas_to_dirs, assign_replicas_to_dirs_request::AssignReplicasToDirsRequest, 0..=0;
    74 => list_config_resources, list_config_resources_request::ListConfigResourcesRequest, 0..=1;
    75 => describe_topic_partitions, describe_topic_partitions_request::DescribeTopicPartitionsRequest, 0..=0;
    76 => share_group_heartbeat, share_group_heartbeat_request::ShareGroupHeartbeatRequest, 1..=1;
    77 => share_group_describe, share_group_describe_request::ShareGroupDescribeRequest, 1..=1;
    78 => share_fetch, share_fetch_request::ShareFetchRequest, 1..=2;
    79 => share_acknowledge, share_acknowledge_request::ShareAcknowledgeRequest, 1..=2;
    83 => initialize_share_group_state, initialize_share_group_state_request::InitializeShareGroupStateRequest, 0..=0;
    84 => read_share_group_state, read_share_group_state_request::ReadShareGroupStateRequest, 0..=0;
    85 => write_share_group_state, write_share_group_state_request::WriteShareGroupStateRequest, 0..=1;
    86 => delete_share_group_state, delete_share_group_state_request::DeleteShareGroupStateRequest, 0..=0;
    87 => read_share_group_state_summary, read_share_group_state_summary_request::ReadShareGroupStateSummaryRequest, 0..=1;
    90 => describe_share_group_offsets, describe_share_group_offsets_request::DescribeShareGroupOffsetsRequest, 0..=1;
    91 => alter_share_group_offsets, alter_share_group_offsets_request::AlterShareGroupOffsetsRequest, 0..=0;
    92 => delete_share_group_offsets, delete_share_group_offsets_request::DeleteShareGroupOffsetsRequest, 0..=0;
    80 => add_raft_voter, add_raft_voter_request::AddRaftVoterRequest, 0..=0;
    81 => remove_raft_voter, remove_raft_voter_request::RemoveRaftVoterRequest, 0..=0;
}

/// The group coordinator's view of a request: version, client id and host.
pub fn group_context(
    header: &RequestHeader,
    conn: &ConnectionContext,
) -> crate::coordinator::service::RequestContext {
    crate::coordinator::service::RequestContext::new(
        header.api_version,
        header.client_id.as_deref().unwrap_or(""),
        &format!("/{}", conn.peer.ip()),
    )
}

/// The APIs a controller listener serves (Kafka's controller listener scope): the
/// quorum's, the brokers' RPCs, and the admin requests brokers forward (KIP-590) or admin
/// clients send to controllers directly (KIP-919). Any other closes the connection, as Kafka
/// closes one that uses an API its listener does not enable.
pub const CONTROLLER_APIS: &[i16] = &[
    api_versions_request::ApiVersionsRequest::API_KEY,
    sasl_handshake_request::SaslHandshakeRequest::API_KEY,
    sasl_authenticate_request::SaslAuthenticateRequest::API_KEY,
    alter_user_scram_credentials_request::AlterUserScramCredentialsRequest::API_KEY,
    create_topics_request::CreateTopicsRequest::API_KEY,
    delete_topics_request::DeleteTopicsRequest::API_KEY,
    describe_acls_request::DescribeAclsRequest::API_KEY,
    create_acls_request::CreateAclsRequest::API_KEY,
    delete_acls_request::DeleteAclsRequest::API_KEY,
    describe_configs_request::DescribeConfigsRequest::API_KEY,
    alter_configs_request::AlterConfigsRequest::API_KEY,
    create_partitions_request::CreatePartitionsRequest::API_KEY,
    create_delegation_token_request::CreateDelegationTokenRequest::API_KEY,
    renew_delegation_token_request::RenewDelegationTokenRequest::API_KEY,
    expire_delegation_token_request::ExpireDelegationTokenRequest::API_KEY,
    describe_delegation_token_request::DescribeDelegationTokenRequest::API_KEY,
    elect_leaders_request::ElectLeadersRequest::API_KEY,
    incremental_alter_configs_request::IncrementalAlterConfigsRequest::API_KEY,
    alter_partition_reassignments_request::AlterPartitionReassignmentsRequest::API_KEY,
    list_partition_reassignments_request::ListPartitionReassignmentsRequest::API_KEY,
    describe_client_quotas_request::DescribeClientQuotasRequest::API_KEY,
    alter_client_quotas_request::AlterClientQuotasRequest::API_KEY,
    describe_quorum_request::DescribeQuorumRequest::API_KEY,
    alter_partition_request::AlterPartitionRequest::API_KEY,
    update_features_request::UpdateFeaturesRequest::API_KEY,
    describe_cluster_request::DescribeClusterRequest::API_KEY,
    broker_registration_request::BrokerRegistrationRequest::API_KEY,
    broker_heartbeat_request::BrokerHeartbeatRequest::API_KEY,
    unregister_broker_request::UnregisterBrokerRequest::API_KEY,
    allocate_producer_ids_request::AllocateProducerIdsRequest::API_KEY,
    assign_replicas_to_dirs_request::AssignReplicasToDirsRequest::API_KEY,
    add_raft_voter_request::AddRaftVoterRequest::API_KEY,
    remove_raft_voter_request::RemoveRaftVoterRequest::API_KEY,
    envelope_request::EnvelopeRequest::API_KEY,
];

/// The APIs Kafka scopes to controller listeners alone (`"listeners": ["controller"]` in their
/// schemas): the brokers' own RPCs to the controller. A broker listener refuses them.
pub const CONTROLLER_ONLY_APIS: &[i16] = &[
    56, // AlterPartition
    58, // Envelope
    62, // BrokerRegistration
    63, // BrokerHeartbeat
    67, // AllocateProducerIds
    73, // AssignReplicasToDirs
];

/// APIs served but left out of ApiVersions: KIP-714 client telemetry, which Kafka advertises
/// only when a metrics receiver plugin is configured (`clientTelemetryEnabled`); without one
/// clients never send them, and Strata has none.
pub const UNADVERTISED_APIS: &[i16] = &[
    71, // GetTelemetrySubscriptions
    72, // PushTelemetry
];

/// Whether a listener of `scope` serves `api_key` (Kafka's per-listener `ApiVersionManager`).
pub fn listener_serves(scope: ListenerScope, api_key: i16) -> bool {
    match scope {
        ListenerScope::Controller => CONTROLLER_APIS.contains(&api_key),
        ListenerScope::Broker => !CONTROLLER_ONLY_APIS.contains(&api_key),
    }
}

/// The scope a connection's requests are served in: a controller-only process serves the
/// controller's APIs on every listener it has.
pub fn connection_scope(broker: &Broker, conn: &ConnectionContext) -> ListenerScope {
    if broker.cluster.is_broker {
        conn.scope
    } else {
        ListenerScope::Controller
    }
}

/// The advertised range of an API, if Strata serves it.
pub fn supported_range(api_key: i16) -> Option<(i16, i16)> {
    SUPPORTED_APIS
        .iter()
        .find(|a| a.0 == api_key)
        .map(|a| (a.2, a.3))
}

/// Frames a handler's response for the request it answers.
pub fn encode_response<R: Encode>(header: &RequestHeader, response: &R) -> Bytes {
    // KIP-511: ApiVersions responses always use header v0, so any client can read them.
    let header_version = response_header_version(header.api_key, header.api_version);
    crate::protocol::frame_response(|buf: &mut BytesMut| {
        ResponseHeader::new(header.correlation_id).encode(buf, header_version);
        response.encode(buf, header.api_version);
    })
}

/// Wraps a finished response as a ready future.
pub fn ready<R: Encode + Send + 'static>(
    header: RequestHeader,
    response: Option<R>,
) -> ResponseFuture {
    Box::pin(async move { response.map(|r| encode_response(&header, &r).into()) })
}

/// Wraps a handler's async work as a response future.
pub fn later<R, F>(header: RequestHeader, fut: F) -> ResponseFuture
where
    R: Encode + Send + 'static,
    F: Future<Output = Option<R>> + Send + 'static,
{
    Box::pin(async move { fut.await.map(|r| encode_response(&header, &r).into()) })
}

/// Answers `response` once the group's `__consumer_offsets` partition has replicated what
/// the coordinator appended for it (Kafka's coordinators append with acks=all); otherwise
/// `fail` marks the response with the append's error.
pub fn after_group_write<R>(
    broker: Arc<Broker>,
    header: RequestHeader,
    group_id: String,
    mut response: R,
    fail: impl FnOnce(&mut R, crate::error::ErrorCode) + Send + 'static,
) -> ResponseFuture
where
    R: Encode + Send + 'static,
{
    later(header, async move {
        let partition = broker.groups.partition_for(&group_id);
        if let Err(code) = broker
            .wait_replicated(crate::coordinator::offsets_topic::OFFSETS_TOPIC, partition)
            .await
        {
            fail(&mut response, code);
        }
        Some(response)
    })
}

/// Starts a request that only the active controller serves (the brokers' own RPCs:
/// registration, heartbeats, AlterPartition, producer-id blocks); NOT_CONTROLLER elsewhere,
/// and the sender looks for the active controller.
pub fn controller_only<Req, Resp, F, Fut>(
    broker: &Broker,
    header: RequestHeader,
    request: Req,
    on_controller: F,
    error: fn(crate::error::ErrorCode) -> Resp,
) -> ResponseFuture
where
    Req: Send + 'static,
    Resp: Encode + Send + 'static,
    F: FnOnce(Arc<crate::controller::service::ControllerService>, Req) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Resp, crate::controller::service::ControllerError>> + Send,
{
    let controller = broker.cluster.local_controller();
    later(header, async move {
        Some(match controller {
            // The operation bounds itself (OPERATION_TIMEOUT_MS); the answer is bounded here
            // too, whatever the handler awaits besides.
            Some(c) => tokio::time::timeout(
                std::time::Duration::from_millis(
                    crate::controller::service::OPERATION_TIMEOUT_MS + 1_000,
                ),
                on_controller(c, request),
            )
            .await
            .unwrap_or(Err(crate::controller::service::ControllerError::TimedOut))
            .unwrap_or_else(|e| error(e.code())),
            None => error(crate::error::ErrorCode::NOT_CONTROLLER),
        })
    })
}

/// Starts an admin request the active controller answers (KIP-590 forwarding): run here if
/// this node is the active controller, sent to it otherwise.
pub fn forwarded<Req, Resp, F, Fut>(
    broker: &Broker,
    header: RequestHeader,
    request: Req,
    api_key: i16,
    on_controller: F,
    error: fn(crate::error::ErrorCode) -> Resp,
) -> ResponseFuture
where
    Req: Encode + Clone + Send + Sync + 'static,
    Resp: Encode + Decode + Send + 'static,
    F: Fn(Arc<crate::controller::service::ControllerService>, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Resp, crate::controller::service::ControllerError>> + Send,
{
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    later(header, async move {
        Some(
            cluster
                .controller_op(api_key, version, request, on_controller, error)
                .await,
        )
    })
}

/// Reads a frame's header and starts its handler. Unknown keys, unadvertised versions and
/// malformed requests close the connection (as Kafka does), except ApiVersions at an unknown
/// version, which gets a v0 answer so the client can downgrade (KIP-511).
pub async fn start(
    broker: &Arc<Broker>,
    mut frame: Bytes,
    conn: &Arc<ConnectionContext>,
) -> Outcome {
    if frame.len() < 8 {
        return Outcome::Close("frame shorter than a request header".into());
    }
    let api_key = i16::from_be_bytes([frame[0], frame[1]]);
    let api_version = i16::from_be_bytes([frame[2], frame[3]]);
    let scope = connection_scope(broker, conn);
    // The quorum's own RPC, like Kafka's Vote/BeginQuorumEpoch/Fetch of the metadata log, is
    // served on controller listeners only: on a client listener an anonymous peer could join
    // the quorum as a learner and read the metadata log.
    if api_key == crate::controller::raft::network::RAFT_API_KEY {
        if scope != ListenerScope::Controller {
            return Outcome::Close(format!(
                "api key {api_key} is not enabled on listener {}",
                conn.listener_name
            ));
        }
        return raft_rpc(broker, frame);
    }
    // Kafka's SocketServer closes a connection whose request uses an API its listener does
    // not enable (an InvalidRequestException in the processor), as for an unknown key.
    let Some((min, max)) = supported_range(api_key) else {
        return Outcome::Close(format!("unknown api key {api_key}"));
    };
    if !listener_serves(scope, api_key) {
        return Outcome::Close(format!(
            "api key {api_key} is not enabled on listener {}",
            conn.listener_name
        ));
    }
    if api_key == 18 && !(min..=max).contains(&api_version) {
        let header = match RequestHeader::decode(&mut frame, 1) {
            Ok(h) => h,
            Err(e) => return Outcome::Close(format!("bad header: {e}")),
        };
        return Outcome::Respond(api_versions::unsupported_version(header, scope));
    }
    if !(min..=max).contains(&api_version) {
        return Outcome::Close(format!(
            "unsupported version {api_version} of api {api_key}"
        ));
    }
    let header_version = request_header_version(api_key, api_version);
    let header = match RequestHeader::decode(&mut frame, header_version) {
        Ok(h) => h,
        Err(e) => return Outcome::Close(format!("bad header: {e}")),
    };
    match dispatch(broker.clone(), header, frame, conn.clone()).await {
        Ok(fut) => Outcome::Respond(fut),
        Err(e) => Outcome::Close(format!(
            "malformed request (api {api_key} v{api_version}): {e}"
        )),
    }
}

/// A controller quorum peer's Raft message (Strata-private key, never advertised): handed to
/// the local quorum member, answered with the correlation id and its reply.
fn raft_rpc(broker: &Arc<Broker>, mut frame: Bytes) -> Outcome {
    let cluster = broker.cluster.clone();
    let header = match RequestHeader::decode(&mut frame, 1) {
        Ok(h) => h,
        Err(e) => return Outcome::Close(format!("bad header: {e}")),
    };
    Outcome::Respond(Box::pin(async move {
        let reply = cluster.quorum.handle_rpc(frame).await;
        Some(
            crate::protocol::frame_response(|buf: &mut BytesMut| {
                use bytes::BufMut;
                buf.put_i32(header.correlation_id);
                buf.put_slice(&reply);
            })
            .into(),
        )
    }))
}

/// The configuration keys Strata acts on, as Markdown, for the README.
pub fn config_table_markdown() -> String {
    let mut s = String::from("| Broker key | Default |\n|---|---|\n");
    for d in crate::config::registry::BROKER_CONFIGS {
        s.push_str(&format!(
            "| `{}` | {} |\n",
            d.name,
            d.default
                .map(|v| format!("`{v}`"))
                .unwrap_or_else(|| "(none)".into())
        ));
    }
    s.push_str("\n| Topic key | Default | Broker synonyms |\n|---|---|---|\n");
    for t in crate::config::topic::TOPIC_CONFIGS {
        let syn: Vec<String> = t.broker_synonyms.iter().map(|k| format!("`{k}`")).collect();
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            t.def.name,
            t.def
                .default
                .map(|v| format!("`{v}`"))
                .unwrap_or_else(|| "(none)".into()),
            syn.join(", ")
        ));
    }
    s
}

/// The supported-API table as Markdown, for the README.
pub fn api_table_markdown() -> String {
    let mut s = String::from("| Key | API | Versions |\n|---:|---|---|\n");
    for (key, name, min, max) in SUPPORTED_APIS {
        let title: String = name
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                    .unwrap_or_default()
            })
            .collect();
        let note = if UNADVERTISED_APIS.contains(key) {
            " (served, not advertised: Kafka without a telemetry receiver)"
        } else {
            ""
        };
        s.push_str(&format!("| {key} | {title}{note} | {min}–{max} |\n"));
    }
    s
}
