//! Admin requests in cluster mode: run on the active controller when this node is it,
//! forwarded to it otherwise (KIP-590), and answered only once the local image shows the
//! change, so a client's next Metadata request on this broker sees what it just did.
//! Requests that mutate partitions travel in an Envelope naming the client
//! ([`super::envelope`]), so the controller charges the client's mutation quota.
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::MetadataImage;
use crate::error::ErrorCode;
use crate::protocol::codec::{Decode, Encode};
use crate::protocol::messages::create_topics_request::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use crate::protocol::messages::create_topics_response::CreateTopicsResponse;

use super::ClusterContext;

/// How many times a request meeting NOT_CONTROLLER or a lost connection is tried.
const ATTEMPTS: u32 = 5;
/// How long an admin change may take to reach the local image.
pub const PROPAGATION_TIMEOUT_MS: u64 = 10_000;
/// How long one operation on the local active controller may take (as long as a forwarded
/// one may: the controller channel's request timeout). A controller that cannot commit (no
/// quorum yet, or lost) answers REQUEST_TIMED_OUT instead of holding the request forever.
const LOCAL_OPERATION_TIMEOUT_MS: u64 = 5_000;
/// What a forwarded request with its own timeout waits beyond it: the controller's answer
/// and its way back.
const FORWARD_MARGIN_MS: u64 = 2_000;
/// The bound of every attempt of an admin request that carries no timeout of its own: below
/// the clients' default `request.timeout.ms` (30 s) with the margin.
const ADMIN_REQUEST_TIMEOUT_MS: u64 = 25_000;

impl ClusterContext {
    /// Runs a controller operation locally or forwards `request` to the active controller;
    /// `on_error` builds the response for a failure of every attempt.
    pub async fn controller_op<Req, Resp, F, Fut>(
        &self,
        api_key: i16,
        version: i16,
        request: Req,
        local: F,
        on_error: impl FnOnce(ErrorCode) -> Resp,
    ) -> Resp
    where
        Req: Encode + Clone + Send,
        Resp: Decode,
        F: Fn(Arc<ControllerService>, Req) -> Fut,
        Fut: Future<Output = Result<Resp, ControllerError>>,
    {
        self.controller_op_within(api_key, version, request, None, None, local, on_error)
            .await
    }

    /// [`Self::controller_op`] for a request that carries its own `timeout_ms` (CreateTopics,
    /// DeleteTopics, CreatePartitions): the controller may take that long, so the local
    /// operation and the forwarded call wait for it (plus a margin for the answer to travel),
    /// not for the channel's shorter default. A forwarded call that times out after it was
    /// sent is answered REQUEST_TIMED_OUT, as Kafka's forwarding manager does, and never sent
    /// again: the controller may have applied it, and a retry would answer
    /// TOPIC_ALREADY_EXISTS for the client's own topic.
    ///
    /// With `on_behalf_of`, a forwarded request goes in an Envelope naming that client.
    #[allow(clippy::too_many_arguments)]
    pub async fn controller_op_within<Req, Resp, F, Fut>(
        &self,
        api_key: i16,
        version: i16,
        request: Req,
        request_timeout_ms: Option<u64>,
        on_behalf_of: Option<&super::envelope::ForwardedFor>,
        local: F,
        on_error: impl FnOnce(ErrorCode) -> Resp,
    ) -> Resp
    where
        Req: Encode + Clone + Send,
        Resp: Decode,
        F: Fn(Arc<ControllerService>, Req) -> Fut,
        Fut: Future<Output = Result<Resp, ControllerError>>,
    {
        let local_timeout_ms = request_timeout_ms.map_or(LOCAL_OPERATION_TIMEOUT_MS, |t| {
            t.max(LOCAL_OPERATION_TIMEOUT_MS)
        });
        let forward_timeout_ms = request_timeout_ms.map(|t| {
            t.saturating_add(FORWARD_MARGIN_MS)
                .max(self.channel.timeout_ms())
        });
        // Every attempt together stays within the request's own timeout (or a client's
        // default request timeout), so the answer never comes after the client gave up.
        let overall_ms = request_timeout_ms
            .map_or(ADMIN_REQUEST_TIMEOUT_MS, |t| {
                t.max(LOCAL_OPERATION_TIMEOUT_MS)
            })
            .saturating_add(FORWARD_MARGIN_MS);
        let attempts = async {
            let mut last = ErrorCode::NOT_CONTROLLER;
            for attempt in 0..ATTEMPTS {
                if attempt > 0 {
                    tokio::time::sleep(Duration::from_millis(100 << attempt.min(4))).await;
                }
                if let Some(controller) = self.local_controller() {
                    let op = local(controller, request.clone());
                    match tokio::time::timeout(Duration::from_millis(local_timeout_ms), op).await {
                        Ok(Ok(r)) => return Ok(r),
                        // Its records may still commit: not tried again, as a forward.
                        Ok(Err(ControllerError::TimedOut)) => {
                            return Err(ErrorCode::REQUEST_TIMED_OUT)
                        }
                        Ok(Err(e)) => last = e.code(),
                        Err(_) => {
                            tracing::warn!(api_key, "the controller did not finish in time");
                            return Err(ErrorCode::REQUEST_TIMED_OUT);
                        }
                    }
                    continue;
                }
                let call = match on_behalf_of {
                    Some(client) => self
                        .forward_enveloped::<Req, Resp>(
                            api_key,
                            version,
                            &request,
                            client,
                            forward_timeout_ms,
                        )
                        .await
                        .map(|r| r.map_err(|code| (code, "the controller refused the envelope"))),
                    None => self
                        .forward::<Req, Resp>(api_key, version, &request, forward_timeout_ms)
                        .await
                        .map(Ok),
                };
                match call {
                    Ok(Ok(r)) => return Ok(r),
                    // An envelope the controller did not act on: NOT_CONTROLLER is tried
                    // again, as Kafka's forwarding manager does; other errors are final.
                    Ok(Err((code, why))) => {
                        tracing::warn!(api_key, error = ?code, "{why}");
                        if code != ErrorCode::NOT_CONTROLLER {
                            return Err(code);
                        }
                        last = code;
                    }
                    Err(super::channel::ChannelError::TimedOut) => {
                        tracing::warn!(api_key, "the forwarded request got no answer in time");
                        return Err(ErrorCode::REQUEST_TIMED_OUT);
                    }
                    Err(e) => {
                        tracing::debug!(api_key, error = %e, "forwarding to the controller failed");
                        last = ErrorCode::NOT_CONTROLLER;
                    }
                }
            }
            Err(last)
        };
        match tokio::time::timeout(Duration::from_millis(overall_ms), attempts).await {
            Ok(Ok(r)) => r,
            Ok(Err(code)) => on_error(code),
            Err(_) => on_error(ErrorCode::REQUEST_TIMED_OUT),
        }
    }

    /// Sends `request` bare to the active controller.
    async fn forward<Req: Encode, Resp: Decode>(
        &self,
        api_key: i16,
        version: i16,
        request: &Req,
        timeout_ms: Option<u64>,
    ) -> Result<Resp, super::channel::ChannelError> {
        match timeout_ms {
            Some(t) => {
                self.channel
                    .call_with_timeout(api_key, version, request, t)
                    .await
            }
            None => self.channel.call(api_key, version, request).await,
        }
    }

    /// Sends `request` to the active controller in an Envelope for `client`; the inner answer,
    /// or the error the Envelope itself carries.
    async fn forward_enveloped<Req: Encode, Resp: Decode>(
        &self,
        api_key: i16,
        version: i16,
        request: &Req,
        client: &super::envelope::ForwardedFor,
        timeout_ms: Option<u64>,
    ) -> Result<Result<Resp, ErrorCode>, super::channel::ChannelError> {
        use super::envelope::{unwrap, wrap, ENVELOPE_API_KEY, ENVELOPE_VERSION};
        let envelope = wrap(api_key, version, request, client);
        let answer = self
            .forward(ENVELOPE_API_KEY, ENVELOPE_VERSION, &envelope, timeout_ms)
            .await?;
        Ok(unwrap(api_key, version, answer))
    }

    /// Waits until the image published to this broker satisfies `done` (an admin change
    /// reached its replicas and handlers), at most [`PROPAGATION_TIMEOUT_MS`]; false on
    /// timeout.
    pub async fn wait_until(&self, done: impl Fn(&MetadataImage) -> bool) -> bool {
        let wait = async {
            if !self.is_broker {
                // A controller-only process publishes nothing: its applied image is all.
                let mut rx = self.quorum_state();
                let found = rx.wait_for(|(_, image)| done(image)).await.is_ok();
                return found;
            }
            let mut rx = self.published.subscribe();
            let found = rx.wait_for(|image| done(image)).await.is_ok();
            found
        };
        tokio::time::timeout(Duration::from_millis(PROPAGATION_TIMEOUT_MS), wait)
            .await
            .unwrap_or(false)
    }

    /// Waits until every named topic is in the local image (created) or absent (deleted).
    pub async fn wait_for_topics(&self, names: &[String], present: bool) -> bool {
        self.wait_until(|image| {
            names
                .iter()
                .all(|n| image.topics.contains_key(n) == present)
        })
        .await
    }

    /// Creates topics at the controller; `on_behalf_of` names the client a forwarded request
    /// acts for (None: the broker's own, as auto-creation).
    pub async fn create_topics(
        &self,
        version: i16,
        request: CreateTopicsRequest,
        on_behalf_of: Option<&super::envelope::ForwardedFor>,
    ) -> CreateTopicsResponse {
        let names: Vec<String> = request.topics.iter().map(|t| t.name.clone()).collect();
        let validate_only = request.validate_only;
        let timeout_ms = request.timeout_ms;
        let failed = |code: ErrorCode| {
            let mut r = CreateTopicsResponse::default();
            for n in &names {
                r.topics.push(
                    crate::protocol::messages::create_topics_response::CreatableTopicResult {
                        name: n.clone(),
                        error_code: code.code(),
                        error_message: Some(code.message()),
                        num_partitions: -1,
                        replication_factor: -1,
                        ..Default::default()
                    },
                );
            }
            r
        };
        let op = self.controller_op_within(
            crate::protocol::messages::create_topics_request::CreateTopicsRequest::API_KEY,
            version,
            request,
            (timeout_ms > 0).then_some(timeout_ms as u64),
            on_behalf_of,
            |c, r| super::create_topics::on_controller(c, r),
            failed,
        );
        // The request's own timeout bounds the controller's part, as Kafka's controller
        // answers REQUEST_TIMED_OUT past it (a cluster still electing its controller must
        // not leave the client waiting on its own timeout).
        let response = if timeout_ms > 0 {
            match tokio::time::timeout(Duration::from_millis(timeout_ms as u64), op).await {
                Ok(r) => r,
                Err(_) => return failed(ErrorCode::REQUEST_TIMED_OUT),
            }
        } else {
            op.await
        };
        if !validate_only {
            let created: Vec<String> = response
                .topics
                .iter()
                .filter(|t| t.error_code == 0)
                .map(|t| t.name.clone())
                .collect();
            if !self.wait_for_topics(&created, true).await {
                tracing::warn!(topics = ?created, "created topics did not reach the local image in time");
            }
        }
        response
    }

    /// Asks the controller to create a topic with the broker defaults, in the background
    /// (Metadata auto-creation answers LEADER_NOT_AVAILABLE meanwhile).
    pub fn auto_create_topic(self: &Arc<Self>, name: &str) {
        self.create_topic_in_background(name, -1, -1, Vec::new());
    }

    /// Asks the controller to create a topic unless a request for it is under way.
    pub fn create_topic_in_background(
        self: &Arc<Self>,
        name: &str,
        num_partitions: i32,
        replication_factor: i16,
        configs: Vec<(String, String)>,
    ) {
        {
            let mut pending = self.auto_creating.lock();
            if !pending.insert(name.to_string()) {
                return;
            }
        }
        let cluster = self.clone();
        let name = name.to_string();
        tokio::spawn(async move {
            let request = CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: name.clone(),
                    num_partitions,
                    replication_factor,
                    configs: configs
                        .into_iter()
                        .map(|(name, value)| CreatableTopicConfig {
                            name,
                            value: Some(value),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                timeout_ms: PROPAGATION_TIMEOUT_MS as i32,
                ..Default::default()
            };
            let r = cluster.create_topics(7, request, None).await;
            if let Some(t) = r.topics.first() {
                if t.error_code != 0 && t.error_code != ErrorCode::TOPIC_ALREADY_EXISTS.code() {
                    tracing::warn!(topic = %name, error = t.error_code, "auto-creation failed");
                }
            }
            cluster.auto_creating.lock().remove(&name);
        });
    }
}
