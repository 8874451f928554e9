//! Producer ids for a cluster member, in blocks from the controller (AllocateProducerIds,
//! KIP-730; Kafka's `RPCProducerIdManager`): ids are unique across brokers because every
//! block is a committed metadata record. The next block is fetched in the background once
//! the current one is 90 % used, so InitProducerId rarely waits; when none is at hand the
//! allocation fails with a retriable error (COORDINATOR_LOAD_IN_PROGRESS for the client).
use std::sync::Arc;

use parking_lot::Mutex;

use crate::coordinator::txn::{ProducerIdAllocError, ProducerIdAllocator};
use crate::error::ErrorCode;
use crate::protocol::messages::allocate_producer_ids_request::AllocateProducerIdsRequest;
use crate::protocol::messages::allocate_producer_ids_response::AllocateProducerIdsResponse;
use crate::replica::ReplicaManager;

use super::ClusterContext;

#[derive(Default)]
struct Blocks {
    /// Next id to hand out and the end (exclusive) of the current block.
    next: i64,
    end: i64,
    /// A block fetched ahead: (start, len).
    prefetched: Option<(i64, i64)>,
    fetching: bool,
    block_len: i64,
}

pub struct ControllerProducerIds {
    cluster: std::sync::OnceLock<Arc<ClusterContext>>,
    replicas: Arc<ReplicaManager>,
    node_id: i32,
    blocks: Arc<Mutex<Blocks>>,
    runtime: tokio::runtime::Handle,
}

impl ControllerProducerIds {
    pub fn new(node_id: i32, replicas: Arc<ReplicaManager>) -> Arc<Self> {
        Arc::new(ControllerProducerIds {
            cluster: std::sync::OnceLock::new(),
            replicas,
            node_id,
            blocks: Arc::new(Mutex::new(Blocks::default())),
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// The cluster exists after the coordinators that use this allocator; set it once.
    pub fn attach(&self, cluster: Arc<ClusterContext>) {
        let _ = self.cluster.set(cluster);
        self.fetch_in_background();
    }

    /// Waits (at most `timeout_ms`) until a block is at hand; a lone voter starts serving
    /// only then, so its first InitProducerId never has to be retried.
    pub async fn wait_for_block(&self, timeout_ms: u64) -> bool {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(timeout_ms);
        loop {
            {
                let b = self.blocks.lock();
                if b.next < b.end || b.prefetched.is_some() {
                    return true;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    fn fetch_in_background(&self) {
        let Some(cluster) = self.cluster.get().cloned() else {
            return;
        };
        {
            let mut b = self.blocks.lock();
            if b.fetching || b.prefetched.is_some() {
                return;
            }
            b.fetching = true;
        }
        let blocks = self.blocks.clone();
        let replicas = self.replicas.clone();
        let node_id = self.node_id;
        self.runtime.spawn(async move {
            // The controller hands blocks to registered brokers only.
            while replicas.broker_epoch().0 < 0 {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            let mut fetched = None;
            for attempt in 0..50u64 {
                let request = AllocateProducerIdsRequest {
                    broker_id: node_id,
                    broker_epoch: replicas.broker_epoch().0,
                    ..Default::default()
                };
                let r: Result<AllocateProducerIdsResponse, _> = cluster
                    .channel
                    .call(crate::protocol::messages::allocate_producer_ids_request::AllocateProducerIdsRequest::API_KEY, 0, &request)
                    .await;
                match r {
                    Ok(r)
                        if ErrorCode::from_code(r.error_code).is_ok() && r.producer_id_len > 0 =>
                    {
                        fetched = Some((r.producer_id_start, r.producer_id_len as i64));
                        break;
                    }
                    Ok(r) => tracing::debug!(error = r.error_code, "AllocateProducerIds refused"),
                    Err(e) => tracing::debug!(error = %e, "AllocateProducerIds failed"),
                }
                tokio::time::sleep(std::time::Duration::from_millis(
                    100 * (attempt + 1).min(10),
                ))
                .await;
            }
            let mut b = blocks.lock();
            b.fetching = false;
            if let Some((start, len)) = fetched {
                if b.next >= b.end {
                    b.next = start;
                    b.end = start + len;
                    b.block_len = len;
                } else {
                    b.prefetched = Some((start, len));
                }
            }
        });
    }
}

impl ProducerIdAllocator for ControllerProducerIds {
    fn generate_producer_id(&self) -> Result<i64, ProducerIdAllocError> {
        let (id, low) = {
            let mut b = self.blocks.lock();
            if b.next >= b.end {
                if let Some((start, len)) = b.prefetched.take() {
                    b.next = start;
                    b.end = start + len;
                    b.block_len = len;
                }
            }
            if b.next >= b.end {
                (None, true)
            } else {
                let id = b.next;
                b.next += 1;
                // Fetch ahead when 90 % of the block is used.
                let low = (b.end - b.next) * 10 < b.block_len.max(1);
                (Some(id), low)
            }
        };
        if low {
            self.fetch_in_background();
        }
        id.ok_or_else(|| {
            ProducerIdAllocError("no producer-id block from the controller yet".into())
        })
    }
}
