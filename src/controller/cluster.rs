//! Broker membership: registration, heartbeats, fencing and controlled shutdown (Kafka's
//! `ClusterControlManager` and `BrokerHeartbeatManager`, KIP-631; broker epochs per KIP-903).
//!
//! A broker registers fenced with a new broker epoch, is unfenced by the first heartbeat that
//! shows it has caught up with the metadata log, and is fenced again when its session expires
//! or it asks to be. The only state outside the image is the soft heartbeat state of
//! [`BrokerHeartbeats`], which a new active controller rebuilds (every broker gets a full
//! session from the moment the controller first looks at it).
use std::collections::BTreeMap;

use super::controller_config::ControllerConfig;
use super::directories::{handle_directories_offline, is_reserved};
use super::election::{elect_leaderless, leads_any, remove_broker_from_partitions, Batch};
use super::image::MetadataImage;
use super::records::{BrokerEndpoint, MetadataRecord};
use crate::error::ErrorCode;

/// Soft per-broker state of the active controller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct HeartbeatState {
    last_contact_ms: i64,
    /// The metadata offset the broker must reach to be unfenced (Kafka: the offset of its
    /// registration record); learned at registration commit or at its first heartbeat.
    catch_up_offset: Option<i64>,
    /// The committed offset at which a broker in controlled shutdown was first seen leading
    /// nothing (Kafka's `controlledShutdownOffset`): it may stop once it has applied that
    /// offset, so it answers its waiting requests as a follower instead of dropping them.
    controlled_shutdown_offset: Option<i64>,
}

/// Last contact time per broker, with an injected clock (`now_ms` arguments).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerHeartbeats {
    states: BTreeMap<i32, HeartbeatState>,
}

impl BrokerHeartbeats {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records contact from `broker` at `now_ms`.
    pub fn touch(&mut self, broker: i32, now_ms: i64) {
        self.states.entry(broker).or_default().last_contact_ms = now_ms;
    }

    pub fn last_contact_ms(&self, broker: i32) -> Option<i64> {
        self.states.get(&broker).map(|s| s.last_contact_ms)
    }

    /// The caller learnt the offset at which the broker's registration committed: the broker
    /// is caught up once its metadata offset reaches it.
    pub fn set_registration_offset(&mut self, broker: i32, offset: i64) {
        if let Some(s) = self.states.get_mut(&broker) {
            s.catch_up_offset = Some(offset);
        }
    }

    pub fn remove(&mut self, broker: i32) {
        self.states.remove(&broker);
    }

    fn is_fresh(&self, broker: i32, now_ms: i64, config: &ControllerConfig) -> bool {
        self.last_contact_ms(broker)
            .is_some_and(|t| now_ms - t < config.broker_session_timeout_ms)
    }
}

/// A BrokerRegistration request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBrokerRequest {
    pub broker_id: i32,
    pub incarnation_id: String,
    pub endpoints: Vec<BrokerEndpoint>,
    pub rack: Option<String>,
    /// The broker's online log dirs by `directory.id` (KIP-858).
    pub log_dirs: Vec<[u8; 16]>,
    /// The feature levels the broker supports: (name, min, max).
    pub features: Vec<(String, i16, i16)>,
}

/// Registers a broker, fenced, under a broker epoch above every one the image has seen; a
/// retry of the same incarnation gets its existing epoch back. Returns the broker epoch.
pub fn register_broker(
    image: &MetadataImage,
    config: &ControllerConfig,
    request: &RegisterBrokerRequest,
    heartbeats: &mut BrokerHeartbeats,
    now_ms: i64,
) -> (Vec<MetadataRecord>, Result<i64, ErrorCode>) {
    if request.broker_id < 0 {
        return (Vec::new(), Err(ErrorCode::INVALID_REGISTRATION));
    }
    // A reserved id or the same dir twice is a broken registration (Kafka's
    // `ClusterControlManager.registerBroker` refuses both).
    let mut dirs = request.log_dirs.clone();
    dirs.sort_unstable();
    dirs.dedup();
    if dirs.len() != request.log_dirs.len() || dirs.iter().any(is_reserved) {
        return (Vec::new(), Err(ErrorCode::INVALID_REGISTRATION));
    }
    // A broker that cannot run at the finalized feature levels may not join (Kafka answers
    // UNSUPPORTED_VERSION; the broker logs the reason and retries).
    let supported = request
        .features
        .iter()
        .map(|(name, min, max)| (name.clone(), (*min, *max)))
        .collect();
    if let Some(why) = super::features::registration_refusal(&image.features, &supported) {
        tracing::warn!(broker_id = request.broker_id, "{why}");
        return (Vec::new(), Err(ErrorCode::UNSUPPORTED_VERSION));
    }
    if let Some(existing) = image.broker(request.broker_id) {
        if existing.incarnation_id == request.incarnation_id {
            heartbeats.touch(request.broker_id, now_ms);
            return (Vec::new(), Ok(existing.broker_epoch));
        }
        // Another incarnation still holding a live session: two processes share a node.id.
        if !existing.fenced && heartbeats.is_fresh(request.broker_id, now_ms, config) {
            return (Vec::new(), Err(ErrorCode::DUPLICATE_BROKER_REGISTRATION));
        }
    }
    let broker_epoch = image.last_broker_epoch + 1;
    let mut batch = Batch::new(image);
    batch.push(MetadataRecord::RegisterBroker {
        broker_id: request.broker_id,
        broker_epoch,
        incarnation_id: request.incarnation_id.clone(),
        endpoints: request.endpoints.clone(),
        rack: request.rack.clone(),
        fenced: true,
        log_dirs: request.log_dirs.clone(),
        features: request.features.clone(),
    });
    // The previous incarnation may still lead partitions: the new one registers fenced, so
    // they move on now, as when a session expires.
    remove_broker_from_partitions(&mut batch, config, request.broker_id, true);
    heartbeats.states.insert(
        request.broker_id,
        HeartbeatState {
            last_contact_ms: now_ms,
            ..Default::default()
        },
    );
    (batch.records, Ok(broker_epoch))
}

/// A BrokerHeartbeat request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerHeartbeatRequest {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// The offset of the metadata log the broker has applied.
    pub current_metadata_offset: i64,
    pub want_fence: bool,
    pub want_shutdown: bool,
    /// The `directory.id`s of the broker's offline log dirs (v1+, KIP-858).
    pub offline_log_dirs: Vec<[u8; 16]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerHeartbeatReply {
    pub error: ErrorCode,
    pub is_caught_up: bool,
    pub is_fenced: bool,
    pub should_shutdown: bool,
}

/// Answers one heartbeat (Kafka's `BrokerHeartbeatManager.calculateNextBrokerState`): a fenced
/// broker is unfenced once caught up, an active one fenced if it asks, and one that wants to
/// shut down is moved out of its leaderships and ISRs and told to shut down once it leads
/// nothing in the committed image. Log dirs it reports offline are handled as Kafka's
/// `handleDirectoriesOffline` ([`handle_directories_offline`]).
pub fn broker_heartbeat(
    image: &MetadataImage,
    config: &ControllerConfig,
    request: &BrokerHeartbeatRequest,
    heartbeats: &mut BrokerHeartbeats,
    now_ms: i64,
    last_committed_offset: i64,
) -> (Vec<MetadataRecord>, BrokerHeartbeatReply) {
    let error_reply = |error| BrokerHeartbeatReply {
        error,
        is_caught_up: false,
        is_fenced: true,
        should_shutdown: false,
    };
    let Some(registration) = image.broker(request.broker_id) else {
        return (Vec::new(), error_reply(ErrorCode::BROKER_ID_NOT_REGISTERED));
    };
    if registration.broker_epoch != request.broker_epoch {
        return (Vec::new(), error_reply(ErrorCode::STALE_BROKER_EPOCH));
    }
    heartbeats.touch(request.broker_id, now_ms);
    let catch_up_offset = {
        let state = heartbeats.states.entry(request.broker_id).or_default();
        *state.catch_up_offset.get_or_insert(last_committed_offset)
    };
    let is_caught_up = request.current_metadata_offset >= catch_up_offset;
    let (id, epoch) = (request.broker_id, request.broker_epoch);
    let mut batch = Batch::new(image);
    let mut should_shutdown = false;
    if registration.fenced {
        if request.want_shutdown {
            // A fenced broker leads nothing and is in no ISR it could leave: it may go now.
            should_shutdown = true;
        } else if !request.want_fence && is_caught_up {
            batch.push(MetadataRecord::UnfenceBroker {
                broker_id: id,
                broker_epoch: epoch,
            });
            elect_leaderless(&mut batch, config);
        }
    } else if request.want_shutdown || registration.in_controlled_shutdown {
        if !registration.in_controlled_shutdown {
            batch.push(MetadataRecord::BrokerControlledShutdown {
                broker_id: id,
                broker_epoch: epoch,
            });
        }
        // Whatever it still leads or follows in (leaderships it regained as last ISR member
        // included) moves away, never uncleanly: the broker is still healthy.
        remove_broker_from_partitions(&mut batch, config, id, false);
        if !leads_any(image, id) {
            let state = heartbeats.states.entry(id).or_default();
            let moved_at = *state
                .controlled_shutdown_offset
                .get_or_insert(last_committed_offset);
            should_shutdown = request.current_metadata_offset >= moved_at;
        }
        if should_shutdown {
            batch.push(MetadataRecord::FenceBroker {
                broker_id: id,
                broker_epoch: epoch,
            });
        }
    } else if request.want_fence {
        batch.push(MetadataRecord::FenceBroker {
            broker_id: id,
            broker_epoch: epoch,
        });
        remove_broker_from_partitions(&mut batch, config, id, true);
    }
    handle_directories_offline(&mut batch, config, id, epoch, &request.offline_log_dirs);
    let is_fenced = batch.image.broker(id).map_or(true, |b| b.fenced);
    (
        batch.records,
        BrokerHeartbeatReply {
            error: ErrorCode::NONE,
            is_caught_up,
            is_fenced,
            should_shutdown,
        },
    )
}

/// Fences every unfenced broker whose session has expired, moving its leaderships and ISR
/// memberships away (unclean elections where a topic allows them). A broker the controller has
/// never heard from since it became active starts its session now.
pub fn fence_expired_brokers(
    image: &MetadataImage,
    config: &ControllerConfig,
    heartbeats: &mut BrokerHeartbeats,
    now_ms: i64,
) -> Vec<MetadataRecord> {
    let mut batch = Batch::new(image);
    let live: Vec<(i32, i64)> = image
        .live_brokers()
        .map(|b| (b.broker_id, b.broker_epoch))
        .collect();
    for (id, epoch) in live {
        let Some(last) = heartbeats.last_contact_ms(id) else {
            heartbeats.touch(id, now_ms);
            continue;
        };
        if now_ms - last < config.broker_session_timeout_ms {
            continue;
        }
        batch.push(MetadataRecord::FenceBroker {
            broker_id: id,
            broker_epoch: epoch,
        });
        remove_broker_from_partitions(&mut batch, config, id, true);
    }
    batch.records
}

/// Removes a broker from the cluster (Kafka's UnregisterBroker): only a fenced broker may go,
/// so that no partition is left led by a broker that no longer exists.
pub fn unregister_broker(
    image: &MetadataImage,
    broker_id: i32,
) -> (Vec<MetadataRecord>, ErrorCode) {
    match image.broker(broker_id) {
        None => (Vec::new(), ErrorCode::BROKER_ID_NOT_REGISTERED),
        Some(b) if !b.fenced => (Vec::new(), ErrorCode::INVALID_REQUEST),
        Some(b) => (
            vec![MetadataRecord::UnregisterBroker {
                broker_id,
                broker_epoch: b.broker_epoch,
            }],
            ErrorCode::NONE,
        ),
    }
}
