//! Quota throttling shared by the handlers that enforce client quotas: who the client is for
//! the quota managers (the connection's principal name and the request's client id), the
//! request-time quota (`request_percentage`, Kafka's `ClientRequestQuotaManager`: handling
//! time as a percentage of one thread) on every API Kafka applies it to, the controller
//! mutation quota of the topic admin requests (KIP-599), and muting the connection for the
//! throttle a response carries (KIP-219).
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use crate::broker::Broker;
use crate::config::SecurityProtocol;
use crate::controller::client_quotas::{ClientQuotas, REQUEST_PERCENTAGE};
use crate::controller::MetadataImage;
use crate::handlers::{ConnectionContext, ResponseFuture};
use crate::protocol::codec::{Decode, Encode};
use crate::protocol::header::{response_header_version, RequestHeader, ResponseHeader};
use crate::protocol::messages::api_versions_response::ApiVersionsResponse;
use crate::protocol::messages::response_throttle_time_offset;
use crate::security::quotas::MutationQuota;

/// A client as the quota managers see it, with the quotas in force.
pub struct QuotaClient {
    pub image: Arc<MetadataImage>,
    pub user: String,
    pub client_id: String,
}

impl QuotaClient {
    pub fn of(broker: &Broker, header: &RequestHeader, conn: &ConnectionContext) -> QuotaClient {
        QuotaClient {
            image: quota_image(broker),
            user: conn.principal().name.clone(),
            client_id: header.client_id.clone().unwrap_or_default(),
        }
    }

    /// Whether any client quota exists at all (the common case is none: nothing to measure).
    pub fn any_quota(&self) -> bool {
        !self.image.client_quotas.is_empty()
    }
}

/// The image whose client quotas are in force on this node.
fn quota_image(broker: &Broker) -> Arc<MetadataImage> {
    if broker.cluster.is_broker {
        broker.cluster.published.borrow().clone()
    } else {
        broker.cluster.image()
    }
}

/// Records `handling` against the client's `request_percentage` quota; the throttle it earns.
pub fn request_time_throttle_ms(broker: &Broker, client: &QuotaClient, handling: Duration) -> i64 {
    // Kafka's unit: percent of one thread over a second, so a rate of 100 is one busy thread.
    let percent_seconds = handling.as_nanos() as f64 * 100.0 / 1e9;
    broker.quotas.request.record_and_get_throttle_time_ms(
        &client.image.client_quotas,
        &client.user,
        &client.client_id,
        percent_seconds,
        broker.now_ms(),
    )
}

/// Mutes the connection for the larger of the throttles and returns it for the response's
/// `throttle_time_ms`.
pub fn apply(conn: &ConnectionContext, throttles: &[i64]) -> i32 {
    let max = throttles
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .clamp(0, i32::MAX as i64);
    conn.throttle(max);
    max as i32
}

/// The APIs Kafka exempts from the request quota: SASL (served by the authenticator, not
/// the request handlers) and the brokers' own RPCs whose handlers answer with
/// `sendResponseExemptThrottle` (WriteTxnMarkers, AlterPartition; registration, heartbeats
/// and producer-id blocks are served on controller listeners, which never count). Kafka
/// exempts by handler, not by the `clusterAction` flag: DescribeQuorum and UpdateFeatures,
/// cluster actions a broker forwards, are throttled like any client request, and so here.
/// Produce and Fetch record their request time themselves, with their byte rates (acks=0
/// produce and follower fetches exempt, as in Kafka).
pub const REQUEST_QUOTA_EXEMPT_APIS: &[i16] = &[
    0,  // Produce: its handler records (with the byte rate)
    1,  // Fetch: its handler records (with the byte rate; follower fetches are exempt)
    17, // SaslHandshake
    27, // WriteTxnMarkers
    36, // SaslAuthenticate
    56, // AlterPartition
    62, // BrokerRegistration
    63, // BrokerHeartbeat
    67, // AllocateProducerIds
    73, // AssignReplicasToDirs
];

/// An ApiVersions request on a SASL listener before the client has authenticated: Kafka's
/// authenticator answers it, outside the request handlers and their quota.
fn before_sasl(header: &RequestHeader, conn: &ConnectionContext) -> bool {
    header.api_key == ApiVersionsResponse::API_KEY
        && matches!(
            conn.security_protocol,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
        && conn.principal().is_anonymous()
}

/// Whether a connection's requests count against client quotas. Only client (broker)
/// listeners: requests on controller listeners are other nodes' forwarded and own RPCs (Kafka
/// counts a forwarded request's principal from its envelope and does not throttle it; Strata
/// forwards most admin requests without an envelope, so the receiving broker is where the
/// client is known). The controller mutation quota is the exception: see
/// [`charges_mutation_quota`].
pub fn counts_against_quotas(broker: &Broker, conn: &ConnectionContext) -> bool {
    crate::handlers::connection_scope(broker, conn) == crate::handlers::ListenerScope::Broker
}

/// A request measured against its client's `request_percentage` quota (Kafka's
/// `ClientRequestQuotaManager`): the time its handler spends working, not waiting, is
/// recorded when the response is ready; the throttle it earns goes into the response's
/// `throttle_time_ms` (if the version has the field) and mutes the connection.
pub struct RequestQuota {
    broker: Arc<Broker>,
    conn: Arc<ConnectionContext>,
    client: QuotaClient,
    api_key: i16,
    api_version: i16,
    started: Instant,
}

impl RequestQuota {
    /// Starts measuring a request, or None when the request quota cannot apply: an exempt
    /// API, a controller listener, or no entity setting `request_percentage` at all (the
    /// common case costs one look at the image).
    pub fn start(
        broker: &Arc<Broker>,
        header: &RequestHeader,
        conn: &Arc<ConnectionContext>,
    ) -> Option<RequestQuota> {
        if REQUEST_QUOTA_EXEMPT_APIS.contains(&header.api_key) || before_sasl(header, conn) {
            return None;
        }
        if !quota_image(broker).client_quotas.sets(REQUEST_PERCENTAGE)
            || !counts_against_quotas(broker, conn)
        {
            return None;
        }
        Some(RequestQuota {
            broker: broker.clone(),
            conn: conn.clone(),
            client: QuotaClient::of(broker, header, conn),
            api_key: header.api_key,
            api_version: header.api_version,
            started: Instant::now(),
        })
    }

    /// Wraps the handler's response: the time spent so far (decoding aside, the handler's
    /// start) plus the time spent polling the response is recorded when it is ready.
    pub fn wrap(self, response: ResponseFuture) -> ResponseFuture {
        let busy = self.started.elapsed();
        Box::pin(async move {
            let (framed, busy) = Busy {
                inner: response,
                busy,
            }
            .await;
            let throttle = request_time_throttle_ms(&self.broker, &self.client, busy);
            let framed = framed?;
            if throttle <= 0 {
                return Some(framed);
            }
            self.conn.throttle(throttle);
            Some(framed.map_head(|head| {
                set_throttle_time(
                    head,
                    self.api_key,
                    self.api_version,
                    throttle.min(i32::MAX as i64) as i32,
                )
            }))
        })
    }
}

/// A response future that sums the time spent in its polls: the work of the request, not
/// its waits (a purgatory, the controller, a replica).
struct Busy {
    inner: ResponseFuture,
    busy: Duration,
}

impl Future for Busy {
    type Output = (Option<super::response::Response>, Duration);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let t = Instant::now();
        let polled = self.inner.as_mut().poll(cx);
        self.busy += t.elapsed();
        polled.map(|r| (r, self.busy))
    }
}

/// Sets `throttle_time_ms` in a framed response to at least `throttle_ms` (a throttle the
/// handler already set, such as the controller mutation quota's, stays if longer). A version
/// without the field is left as it is: its client is throttled by the mute alone, as Kafka's.
pub fn set_throttle_time(framed: Bytes, api_key: i16, api_version: i16, throttle_ms: i32) -> Bytes {
    if api_key == ApiVersionsResponse::API_KEY {
        return set_api_versions_throttle_time(framed, api_version, throttle_ms);
    }
    let Some(offset) = response_throttle_time_offset(api_key, api_version) else {
        return framed;
    };
    let header_len = match response_header_version(api_key, api_version) {
        0 => 4,
        // The correlation id and an empty tagged-field section (responses carry no tags).
        _ => 5,
    };
    let at = 4 + header_len + offset;
    let Some(field) = framed.get(at..at + 4) else {
        return framed;
    };
    let current = i32::from_be_bytes([field[0], field[1], field[2], field[3]]);
    if current >= throttle_ms {
        return framed;
    }
    let mut patched = BytesMut::from(&framed[..]);
    patched[at..at + 4].copy_from_slice(&throttle_ms.to_be_bytes());
    patched.freeze()
}

/// ApiVersions has its `throttle_time_ms` (v1+) after the variable-length API list: the
/// response is decoded, set and framed again (its header is always v0, KIP-511).
fn set_api_versions_throttle_time(framed: Bytes, api_version: i16, throttle_ms: i32) -> Bytes {
    let mut body = framed.slice(8..);
    let Ok(mut response) = ApiVersionsResponse::decode(&mut body, api_version) else {
        return framed;
    };
    if api_version < 1 || response.throttle_time_ms >= throttle_ms {
        return framed;
    }
    response.throttle_time_ms = throttle_ms;
    let correlation_id = i32::from_be_bytes([framed[4], framed[5], framed[6], framed[7]]);
    crate::protocol::frame_response(|buf: &mut BytesMut| {
        ResponseHeader::new(correlation_id).encode(buf, 0);
        response.encode(buf, api_version);
    })
}

/// Whether this node charges a request's controller mutation quota. Kafka's KRaft
/// controller charges it (`ControllerApis` with the Envelope's principal), so one bucket per
/// client holds for the whole cluster whichever broker the client talks to. Strata likewise:
/// the active controller charges requests that reach it on a client listener and those a
/// broker forwarded in an Envelope; a broker that is not the controller charges nothing and
/// forwards. Bare requests on a controller listener (brokers' own, or an admin client that
/// bootstraps from the controllers) are not charged, as before.
fn charges_mutation_quota(broker: &Broker, conn: &ConnectionContext) -> bool {
    conn.forwarded
        || (counts_against_quotas(broker, conn) && broker.cluster.local_controller().is_some())
}

/// The controller mutation quota of a CreateTopics, CreatePartitions or DeleteTopics request,
/// strict from `strict_since_version`; unbounded where this node does not charge it (see
/// [`charges_mutation_quota`]).
pub fn mutation_quota(
    broker: &Broker,
    header: &RequestHeader,
    conn: &ConnectionContext,
    strict_since_version: i16,
) -> MutationQuota {
    let client = QuotaClient::of(broker, header, conn);
    let none = ClientQuotas::default();
    let quotas = if charges_mutation_quota(broker, conn) {
        &client.image.client_quotas
    } else {
        &none
    };
    broker.quotas.controller_mutation.quota_for(
        quotas,
        &client.user,
        &client.client_id,
        header.api_version,
        strict_since_version,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::{
        create_topics_response::CreateTopicsResponse, metadata_response::MetadataResponse,
        offset_delete_response::OffsetDeleteResponse,
    };

    fn framed<R: Encode>(api_key: i16, version: i16, r: &R) -> Bytes {
        crate::protocol::frame_response(|buf: &mut BytesMut| {
            ResponseHeader::new(7).encode(buf, response_header_version(api_key, version));
            r.encode(buf, version);
        })
    }

    fn body<R: Decode>(api_key: i16, version: i16, framed: &Bytes) -> R {
        let mut b = framed.slice(4..);
        ResponseHeader::decode(&mut b, response_header_version(api_key, version)).unwrap();
        let r = R::decode(&mut b, version).unwrap();
        assert!(b.is_empty());
        r
    }

    #[test]
    fn the_throttle_is_set_where_each_response_version_holds_it() {
        // Flexible and not, first field and after an error code, and the list-first
        // ApiVersions.
        for version in [3, 8, 9, 12] {
            let r = MetadataResponse {
                throttle_time_ms: 5,
                cluster_id: Some("c".into()),
                ..Default::default()
            };
            let out = set_throttle_time(framed(3, version, &r), 3, version, 250);
            let back: MetadataResponse = body(3, version, &out);
            assert_eq!(back.throttle_time_ms, 250, "v{version}");
            assert_eq!(back.cluster_id.as_deref(), Some("c"));
        }
        let r = OffsetDeleteResponse {
            error_code: 16,
            ..Default::default()
        };
        let back: OffsetDeleteResponse =
            body(47, 0, &set_throttle_time(framed(47, 0, &r), 47, 0, 9));
        assert_eq!((back.error_code, back.throttle_time_ms), (16, 9));
        for version in [2, 5, 7] {
            let r = CreateTopicsResponse::default();
            let back: CreateTopicsResponse = body(
                19,
                version,
                &set_throttle_time(framed(19, version, &r), 19, version, 42),
            );
            assert_eq!(back.throttle_time_ms, 42);
        }
        let r = ApiVersionsResponse {
            api_keys: vec![Default::default(); 3],
            ..Default::default()
        };
        let out = set_throttle_time(framed(18, 3, &r), 18, 3, 77);
        let mut b = out.slice(8..);
        let back = ApiVersionsResponse::decode(&mut b, 3).unwrap();
        assert_eq!((back.throttle_time_ms, back.api_keys.len()), (77, 3));
    }

    #[test]
    fn a_longer_throttle_already_set_stays_and_old_versions_are_unchanged() {
        let r = CreateTopicsResponse {
            throttle_time_ms: 900,
            ..Default::default()
        };
        let back: CreateTopicsResponse =
            body(19, 7, &set_throttle_time(framed(19, 7, &r), 19, 7, 100));
        assert_eq!(back.throttle_time_ms, 900);
        // Metadata v0-2 has no field: the bytes go out as they are.
        let r = MetadataResponse::default();
        let f = framed(3, 1, &r);
        assert_eq!(set_throttle_time(f.clone(), 3, 1, 100), f);
        assert_eq!(response_throttle_time_offset(3, 2), None);
        // Produce keeps its throttle after the partition list: its handler sets it.
        assert_eq!(response_throttle_time_offset(0, 9), None);
    }
}
