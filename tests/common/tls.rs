//! TLS clients for the TLS tests: a rustls client configuration trusting a test CA (with an
//! optional client certificate), a Kafka connection over any stream, an ApiVersions probe,
//! and a broker with a PLAINTEXT and an SSL listener.
#![allow(dead_code)]
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::header::RequestHeader;
use strata::protocol::messages::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::certs::{Ca, Leaf};
use super::TestBroker;

pub fn client_config(trust: &Ca, identity: Option<&Leaf>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trust.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some(leaf) => builder
            .with_client_auth_cert(
                vec![leaf.der.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf.key_der.clone())),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

/// A Kafka client over any stream.
pub struct KafkaConn<S> {
    pub stream: S,
    pub correlation_id: i32,
}

impl<S: AsyncRead + AsyncWrite + Unpin> KafkaConn<S> {
    pub async fn send<Req: Encode, Resp: Decode>(
        &mut self,
        api_key: i16,
        version: i16,
        req: &Req,
        req_flexible: bool,
        resp_flexible: bool,
    ) -> Resp {
        self.correlation_id += 1;
        let header = RequestHeader {
            api_key,
            api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("tls-test".into()),
            unknown_tagged_fields: vec![],
        };
        let mut body = BytesMut::new();
        header.encode(&mut body, if req_flexible { 2 } else { 1 });
        req.encode(&mut body, version);
        let mut frame = BytesMut::new();
        frame.put_i32(body.len() as i32);
        frame.put_slice(&body);
        self.stream.write_all(&frame).await.unwrap();
        self.stream.flush().await.unwrap();
        let size = self.stream.read_i32().await.expect("response size");
        let mut buf = vec![0u8; size as usize];
        self.stream.read_exact(&mut buf).await.unwrap();
        let mut resp = Bytes::from(buf);
        assert_eq!(resp.get_i32(), self.correlation_id);
        if resp_flexible && api_key != 18 {
            assert_eq!(resp.get_u8(), 0);
        }
        let r = Resp::decode(&mut resp, version).expect("decodes");
        assert!(resp.is_empty());
        r
    }
}

pub async fn tls_connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<KafkaConn<tokio_rustls::client::TlsStream<TcpStream>>> {
    let tcp = TcpStream::connect(addr).await?;
    let mut stream = tokio_rustls::TlsConnector::from(config)
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await?;
    // With TLS 1.3 a refused client certificate shows only on the first read.
    stream.flush().await?;
    Ok(KafkaConn {
        stream,
        correlation_id: 0,
    })
}

/// Whether the connection works: an ApiVersions round trip within two seconds.
pub async fn api_versions_ok(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> bool {
    let attempt = async {
        let mut c = tls_connect(addr, config).await.ok()?;
        api_versions_round_trip(&mut c.stream).await
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// An ApiVersions v0 request, framed.
pub fn api_versions_v0_frame() -> BytesMut {
    let req = api_versions_request::ApiVersionsRequest::default();
    let mut body = BytesMut::new();
    RequestHeader {
        api_key: 18,
        api_version: 0,
        correlation_id: 1,
        client_id: Some("t".into()),
        unknown_tagged_fields: vec![],
    }
    .encode(&mut body, 1);
    req.encode(&mut body, 0);
    let mut frame = BytesMut::new();
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);
    frame
}

/// Sends ApiVersions v0 on `stream`; whether a response came back.
pub async fn api_versions_round_trip<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
) -> Option<bool> {
    stream.write_all(&api_versions_v0_frame()).await.ok()?;
    stream.flush().await.ok()?;
    let size = stream.read_i32().await.ok()?;
    Some(size > 0)
}

/// The error that stops a broker with an SSL listener and `keys` from starting.
pub async fn start_up_error(dir: &Path, keys: &[(&str, &str)]) -> String {
    let mut all = vec![("listeners", "SSL://127.0.0.1:0")];
    all.extend_from_slice(keys);
    let config = super::config_for(dir, &all);
    match strata::server::startup::start(config, strata::clock::system()).await {
        Ok(_) => panic!("{keys:?} started"),
        Err(e) => e.to_string(),
    }
}

pub struct TlsBroker {
    pub _broker: TestBroker,
    pub plaintext: SocketAddr,
    pub tls: SocketAddr,
}

/// A broker with a PLAINTEXT and an SSL listener (in that order) with PEM stores and `extra`
/// keys.
pub async fn tls_broker(keystore: &Path, truststore: &Path, extra: &[(&str, &str)]) -> TlsBroker {
    let keystore = keystore.display().to_string();
    let truststore = truststore.display().to_string();
    let mut keys = vec![
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", keystore.as_str()),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", truststore.as_str()),
    ];
    keys.extend_from_slice(extra);
    tls_broker_with(&keys).await
}

/// A broker with a PLAINTEXT and an SSL listener (in that order) and the TLS keys `keys`.
pub async fn tls_broker_with(keys: &[(&str, &str)]) -> TlsBroker {
    let mut all = vec![("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0")];
    all.extend_from_slice(keys);
    let broker = TestBroker::start(&all).await;
    let addrs = &broker.running.as_ref().unwrap().local_addrs;
    let (plaintext, tls) = (addrs[0], addrs[1]);
    TlsBroker {
        _broker: broker,
        plaintext,
        tls,
    }
}
