//! The broker's channel to the active controller (Kafka's `NodeToControllerChannelManager`):
//! requests go to the quorum leader's controller listener over one kept connection; a failed
//! connection is dropped and the next call reconnects to whoever leads then.
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::controller::Quorum;
use crate::protocol::codec::{Decode, Encode};
use crate::server::peer::PeerClient;

use super::MetadataQuorum;

#[derive(Debug)]
pub enum ChannelError {
    /// No controller is known to lead right now.
    NoController,
    Network(String),
    Decode(String),
}

impl std::fmt::Display for ChannelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

pub struct ControllerChannel {
    node_id: i32,
    voters: BTreeMap<i32, String>,
    quorum: Arc<MetadataQuorum>,
    timeout_ms: u64,
    conn: tokio::sync::Mutex<Option<(i32, PeerClient)>>,
}

impl ControllerChannel {
    pub fn new(
        node_id: i32,
        voters: BTreeMap<i32, String>,
        quorum: Arc<MetadataQuorum>,
        timeout_ms: u64,
    ) -> Self {
        ControllerChannel {
            node_id,
            voters,
            quorum,
            timeout_ms,
            conn: tokio::sync::Mutex::new(None),
        }
    }

    /// Sends one request to the active controller and decodes its response.
    pub async fn call<Req: Encode, Resp: Decode>(
        &self,
        api_key: i16,
        api_version: i16,
        request: &Req,
    ) -> Result<Resp, ChannelError> {
        let body = self.call_raw(api_key, api_version, request).await?;
        let mut body = body;
        Resp::decode(&mut body, api_version).map_err(|e| ChannelError::Decode(e.to_string()))
    }

    async fn call_raw<Req: Encode>(
        &self,
        api_key: i16,
        api_version: i16,
        request: &Req,
    ) -> Result<Bytes, ChannelError> {
        let leader = self
            .quorum
            .leader()
            .map(|l| l as i32)
            .ok_or(ChannelError::NoController)?;
        let addr = self
            .voters
            .get(&leader)
            .ok_or(ChannelError::NoController)?
            .clone();
        let mut conn = self.conn.lock().await;
        if conn.as_ref().is_some_and(|(id, _)| *id != leader) {
            *conn = None;
        }
        if conn.is_none() {
            let client_id = format!("strata-broker-{}-to-controller", self.node_id);
            let c = PeerClient::connect(&addr, &client_id, self.timeout_ms)
                .await
                .map_err(|e| ChannelError::Network(format!("{e:?}")))?;
            *conn = Some((leader, c));
        }
        let Some((_, c)) = conn.as_mut() else {
            return Err(ChannelError::NoController);
        };
        match c.call(api_key, api_version, request).await {
            Ok(body) => Ok(body),
            Err(e) => {
                *conn = None;
                Err(ChannelError::Network(format!("{e:?}")))
            }
        }
    }
}
