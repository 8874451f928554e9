//! Scripted peers for the client's unit tests: one that answers every request frame with a
//! given function and counts its connections, and one that accepts and never answers.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A peer that answers each request frame (without its size) with the response frame
/// `answer` makes, closes a connection after `per_connection` answers, and counts the
/// connections it accepts.
pub async fn answering_peer(
    per_connection: usize,
    answer: fn(Bytes) -> Vec<u8>,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                for _ in 0..per_connection {
                    let Ok(size) = s.read_i32().await else { return };
                    let mut frame = vec![0u8; size as usize];
                    s.read_exact(&mut frame).await.unwrap();
                    s.write_all(&answer(Bytes::from(frame))).await.unwrap();
                }
            });
        }
    });
    (addr, accepted)
}

/// A peer that takes one connection and says nothing for 5 s.
pub async fn silent_peer() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(s);
    });
    addr
}
