//! The admin HTTP listener seen from a test (the `/metrics`, health and web console tests): one
//! request over real TCP, a `/metrics` scrape, and the value of one rendered series.
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP/1.1 request: (status, head, body).
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    accept: &str,
) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: strata\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("response in time")
        .unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

/// The value of the sample `series` (name with its labels, as rendered), if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

pub async fn scrape(addr: SocketAddr) -> String {
    let (status, _, body) = http(addr, "GET", "/metrics", "text/plain").await;
    assert_eq!(status, 200);
    body
}
