//! A small Kafka client over real TCP for integration tests, built on Strata's own codec, and
//! an in-process broker on an ephemeral port with its data in a temporary directory.
#![allow(dead_code)]
use std::net::SocketAddr;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::header::RequestHeader;
use strata::server::startup::{start, RunningBroker};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub mod admin;
pub mod authz;
pub mod certs;
pub mod cluster;
pub mod coord;
pub mod logs;
pub mod offsets;
pub mod process;
pub mod share;
pub mod tls;
pub mod txn;

pub struct TestBroker {
    pub running: Option<RunningBroker>,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

pub fn config_for(dir: &std::path::Path, extra: &[(&str, &str)]) -> strata::config::BrokerConfig {
    let mut overrides: Vec<String> = vec![
        "listeners=PLAINTEXT://127.0.0.1:0".into(),
        format!("log.dirs={}", dir.display()),
        // No admin listener unless a test asks (several brokers run at once).
        "strata.admin.listeners=".into(),
    ];
    for (k, v) in extra {
        overrides.push(format!("{k}={v}"));
    }
    strata::config::BrokerConfig::load(None, &overrides)
        .expect("test config")
        .0
}

impl TestBroker {
    pub async fn start(extra: &[(&str, &str)]) -> TestBroker {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, extra).await
    }

    pub async fn start_in(dir: tempfile::TempDir, extra: &[(&str, &str)]) -> TestBroker {
        let config = config_for(dir.path(), extra);
        let running = start(config, strata::clock::system())
            .await
            .expect("broker starts");
        let addr = running.local_addrs[0];
        TestBroker {
            running: Some(running),
            addr,
            dir,
        }
    }

    /// Clean shutdown, then a fresh broker on the same data.
    pub async fn restart(mut self, extra: &[(&str, &str)]) -> TestBroker {
        self.running.take().unwrap().stop().await.unwrap();
        Self::start_in(self.dir, extra).await
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr).await
    }
}

pub struct Client {
    pub stream: TcpStream,
    correlation_id: i32,
    client_id: String,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Client::from_stream(stream)
    }

    /// A client over an already connected socket (e.g. one bound to a chosen local address).
    pub fn from_stream(stream: TcpStream) -> Client {
        Client {
            stream,
            correlation_id: 0,
            client_id: "strata-test".into(),
        }
    }

    /// Sends the following requests with another client id (quotas are per client id).
    pub fn set_client_id(&mut self, client_id: &str) {
        self.client_id = client_id.into();
    }

    /// Sends a request and returns the raw response body (after the header).
    pub async fn send_raw<Req: Encode>(
        &mut self,
        api_key: i16,
        version: i16,
        flexible_req: bool,
        flexible_resp: bool,
        req: &Req,
    ) -> Bytes {
        self.write_request(api_key, version, flexible_req, req)
            .await;
        let mut resp = self.read_frame().await.expect("response");
        assert_eq!(resp.get_i32(), self.correlation_id, "correlation id");
        if flexible_resp && api_key != 18 {
            let n = resp.get_u8();
            assert_eq!(n, 0, "no tagged fields in response header");
        }
        resp
    }

    /// Sends a request without reading its response.
    pub async fn write_request<Req: Encode>(
        &mut self,
        api_key: i16,
        version: i16,
        flexible_req: bool,
        req: &Req,
    ) {
        self.correlation_id += 1;
        let header = RequestHeader {
            api_key,
            api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some(self.client_id.clone()),
            unknown_tagged_fields: vec![],
        };
        let mut body = BytesMut::new();
        header.encode(&mut body, if flexible_req { 2 } else { 1 });
        req.encode(&mut body, version);
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.put_slice(&body);
        self.stream.write_all(&frame).await.unwrap();
    }

    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let size = self.stream.read_i32().await.ok()?;
        let mut buf = vec![0u8; size as usize];
        self.stream.read_exact(&mut buf).await.ok()?;
        Some(Bytes::from(buf))
    }

    pub async fn send<Req: Encode, Resp: Decode>(
        &mut self,
        api_key: i16,
        version: i16,
        req: &Req,
        req_flexible: bool,
        resp_flexible: bool,
    ) -> Resp {
        let mut body = self
            .send_raw(api_key, version, req_flexible, resp_flexible, req)
            .await;
        let resp = Resp::decode(&mut body, version).expect("decodes");
        assert!(body.is_empty(), "response fully consumed");
        resp
    }

    /// Whether the broker closed the connection (reads EOF within a second).
    pub async fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(
            tokio::time::timeout(std::time::Duration::from_secs(2), self.stream.read(&mut b)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

macro_rules! api_call {
    ($client:expr, $module_req:ident :: $req:ident, $module_resp:ident :: $resp:ident, $version:expr, $value:expr) => {{
        use strata::protocol::messages::{$module_req, $module_resp};
        let v: i16 = $version;
        let r: $module_resp::$resp = $client
            .send(
                $module_req::$req::API_KEY,
                v,
                &$value,
                $module_req::$req::is_flexible(v),
                $module_resp::$resp::is_flexible(v),
            )
            .await;
        r
    }};
}
pub(crate) use api_call;

/// Builds one uncompressed batch of `values` (no keys) with an optional producer identity.
pub fn batch(values: &[&[u8]], producer: Option<(i64, i16, i32)>) -> Bytes {
    let (pid, epoch, seq) = producer.unwrap_or((-1, -1, -1));
    let records: Vec<strata::protocol::records::Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| strata::protocol::records::Record {
            offset_delta: i as i32,
            timestamp_delta: 0,
            key: None,
            value: Some(Bytes::copy_from_slice(v)),
            headers: vec![],
        })
        .collect();
    let mut b = strata::protocol::records::RecordBatchBuilder::new(0)
        .producer(pid, epoch, seq)
        .base_timestamp_ms(now_ms());
    for r in records {
        b.push_record(r);
    }
    b.build().freeze()
}

/// The wall clock, for record timestamps (old timestamps would be removed by retention).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// FindCoordinator v4 for one group key (the first for a group creates `__consumer_offsets`).
pub async fn find_group_coordinator(
    c: &mut Client,
    group: &str,
) -> strata::protocol::messages::find_coordinator_response::FindCoordinatorResponse {
    use strata::protocol::messages::find_coordinator_request::*;
    api_call!(
        c,
        find_coordinator_request::FindCoordinatorRequest,
        find_coordinator_response::FindCoordinatorResponse,
        4,
        FindCoordinatorRequest {
            key_type: 0,
            coordinator_keys: vec![group.into()],
            ..Default::default()
        }
    )
}

/// Metadata v12 for one topic, without auto-creating it.
pub async fn topic_metadata(
    c: &mut Client,
    topic: &str,
) -> strata::protocol::messages::metadata_response::MetadataResponse {
    use strata::protocol::messages::metadata_request::*;
    api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some(topic.into()),
                ..Default::default()
            }]),
            allow_auto_topic_creation: false,
            ..Default::default()
        }
    )
}

/// CreateTopics v7 for one topic with `configs`; returns its error code.
pub async fn create_topic_with(
    c: &mut Client,
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> i16 {
    create_topic_rf(c, name, partitions, 1, configs).await
}

/// CreateTopics v7 for one topic with a replication factor and `configs`; its error code.
pub async fn create_topic_rf(
    c: &mut Client,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(&str, &str)],
) -> i16 {
    use strata::protocol::messages::create_topics_request::*;
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor,
            configs: configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: k.to_string(),
                    value: Some(v.to_string()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        timeout_ms: 1000,
        ..Default::default()
    };
    let r = api_call!(
        c,
        create_topics_request::CreateTopicsRequest,
        create_topics_response::CreateTopicsResponse,
        7,
        req
    );
    r.topics[0].error_code
}

/// A Fetch of partition 0 of `topic` at `offset` by a consumer (no wait, 1 MiB in all, at
/// most `partition_max_bytes` from the partition), for tests to adjust.
pub fn fetch_request(
    topic: &str,
    offset: i64,
    isolation_level: i8,
    partition_max_bytes: i32,
) -> strata::protocol::messages::fetch_request::FetchRequest {
    use strata::protocol::messages::fetch_request::*;
    FetchRequest {
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        isolation_level,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: offset,
                partition_max_bytes,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// One Fetch v12 of partition 0 of `topic` at `offset` (no wait, 1 MiB in all, at most
/// `partition_max_bytes` from the partition): the partition's answer.
pub async fn fetch_partition(
    c: &mut Client,
    topic: &str,
    offset: i64,
    isolation_level: i8,
    partition_max_bytes: i32,
) -> strata::protocol::messages::fetch_response::PartitionData {
    let req = fetch_request(topic, offset, isolation_level, partition_max_bytes);
    let r = api_call!(
        c,
        fetch_request::FetchRequest,
        fetch_response::FetchResponse,
        12,
        req
    );
    r.responses[0].partitions[0].clone()
}

/// DescribeConfigs v4 (with synonyms) of one resource: its result.
pub async fn describe_configs(
    c: &mut Client,
    resource_type: i8,
    name: &str,
) -> strata::protocol::messages::describe_configs_response::DescribeConfigsResult {
    use strata::protocol::messages::describe_configs_request::*;
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: None,
            ..Default::default()
        }],
        include_synonyms: true,
        ..Default::default()
    };
    let r = api_call!(
        c,
        describe_configs_request::DescribeConfigsRequest,
        describe_configs_response::DescribeConfigsResponse,
        4,
        req
    );
    r.results.into_iter().next().expect("one result")
}

/// IncrementalAlterConfigs v1 of one resource with (name, op, value) ops: (error code,
/// message).
pub async fn incremental_alter(
    c: &mut Client,
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    use strata::protocol::messages::incremental_alter_configs_request::*;
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: ops
                .iter()
                .map(|(n, op, v)| AlterableConfig {
                    name: n.to_string(),
                    config_operation: *op,
                    value: v.map(String::from),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        validate_only,
        ..Default::default()
    };
    let r = api_call!(
        c,
        incremental_alter_configs_request::IncrementalAlterConfigsRequest,
        incremental_alter_configs_response::IncrementalAlterConfigsResponse,
        1,
        req
    );
    (
        r.responses[0].error_code,
        r.responses[0].error_message.clone(),
    )
}

/// CreateTopics at `version` for topics of `(name, partitions)`, replication factor 1; each
/// topic's (name, code), sorted, and the response's throttle.
pub async fn create_topics_at(
    c: &mut Client,
    version: i16,
    topics: &[(&str, i32)],
) -> (Vec<(String, i16)>, i32) {
    use strata::protocol::messages::create_topics_request::*;
    let r = api_call!(
        c,
        create_topics_request::CreateTopicsRequest,
        create_topics_response::CreateTopicsResponse,
        version,
        CreateTopicsRequest {
            topics: topics
                .iter()
                .map(|(name, partitions)| CreatableTopic {
                    name: name.to_string(),
                    num_partitions: *partitions,
                    replication_factor: 1,
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 10_000,
            ..Default::default()
        }
    );
    let mut codes: Vec<(String, i16)> = r
        .topics
        .into_iter()
        .map(|t| (t.name, t.error_code))
        .collect();
    codes.sort();
    (codes, r.throttle_time_ms)
}
