//! One client connection: frames in, responses out, in request order.
//!
//! The reader decodes each frame and starts its handler at once, so requests on one connection
//! are processed concurrently (Kafka clients pipeline up to five), while the writer sends the
//! responses strictly in the order the requests arrived. Produce requests run their append
//! stage inline in the reader, so appends happen in connection order; only their wait for
//! acknowledgement runs concurrently. A frame larger than `socket.request.max.bytes` or with a
//! negative size closes the connection before anything is allocated, as Kafka does.
//!
//! At shutdown the reader stops and the writer sends the responses already under way, but
//! waits at most [`SHUTDOWN_DRAIN`] for those still parked (a JoinGroup waiting for its
//! rebalance, whose timers stop with the broker; a long-poll Fetch): then it closes without
//! them, as Kafka's SocketServer closes its connections at shutdown.
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::broker::Broker;
use crate::handlers::{self, ConnectionContext, Outcome};

/// Read buffer per connection. Small on purpose: it is allocated (and zeroed) for every
/// connection, idle or not, and a frame larger than it is read straight into its own buffer
/// (tokio's `BufReader` bypasses its buffer for large reads), so a bigger one saves nothing on
/// the produce path. 64 KiB cost ~45 KB of RSS per idle connection (BENCHMARKS.md).
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// How long, after shutdown starts, a connection still waits for responses in flight.
pub const SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(3);

pub struct Connection {
    broker: Arc<Broker>,
    stream: TcpStream,
    context: Arc<ConnectionContext>,
    shutdown: CancellationToken,
}

/// Why a connection was closed by the broker (the fields are for the debug log).
#[derive(Debug)]
#[allow(dead_code)]
enum CloseReason {
    Eof,
    Io(std::io::Error),
    FrameTooLarge(i32),
    NegativeFrameSize(i32),
    BadRequest(String),
    Shutdown,
}

impl Connection {
    pub fn new(
        broker: Arc<Broker>,
        stream: TcpStream,
        context: Arc<ConnectionContext>,
        shutdown: CancellationToken,
    ) -> Self {
        Connection {
            broker,
            stream,
            context,
            shutdown,
        }
    }

    pub async fn run(self) {
        let Connection {
            broker,
            stream,
            context,
            shutdown,
        } = self;
        let (rd, wr) = stream.into_split();
        let inflight = broker.limits.max_inflight_requests_per_connection.max(1);
        let (tx, rx) = mpsc::channel::<JoinHandle<Option<Bytes>>>(inflight);
        let writer = tokio::spawn(write_loop(wr, rx, shutdown.clone()));
        let reason = read_loop(
            &broker,
            BufReader::with_capacity(READ_BUFFER_BYTES, rd),
            tx,
            &context,
            &shutdown,
        )
        .await;
        match &reason {
            CloseReason::Eof | CloseReason::Shutdown => {}
            other => {
                tracing::debug!(peer = %context.peer, listener = %context.listener_name, reason = ?other, "closing connection")
            }
        }
        // The writer drains every response already started, then ends.
        let _ = writer.await;
    }
}

async fn read_loop(
    broker: &Arc<Broker>,
    mut rd: BufReader<tokio::net::tcp::OwnedReadHalf>,
    tx: mpsc::Sender<JoinHandle<Option<Bytes>>>,
    context: &Arc<ConnectionContext>,
    shutdown: &CancellationToken,
) -> CloseReason {
    let max_frame = broker.limits.socket_request_max_bytes;
    loop {
        let size = tokio::select! {
            _ = shutdown.cancelled() => return CloseReason::Shutdown,
            s = rd.read_i32() => match s {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return CloseReason::Eof,
                Err(e) => return CloseReason::Io(e),
            },
        };
        if size < 0 {
            return CloseReason::NegativeFrameSize(size);
        }
        if size as usize > max_frame {
            return CloseReason::FrameTooLarge(size);
        }
        let mut frame = BytesMut::zeroed(size as usize);
        if let Err(e) = rd.read_exact(&mut frame).await {
            return if e.kind() == std::io::ErrorKind::UnexpectedEof {
                CloseReason::Eof
            } else {
                CloseReason::Io(e)
            };
        }
        match handlers::start(broker, frame.freeze(), context).await {
            Outcome::Respond(fut) => {
                let handle = tokio::spawn(fut);
                if tx.send(handle).await.is_err() {
                    return CloseReason::Eof;
                }
            }
            Outcome::Close(why) => return CloseReason::BadRequest(why),
        }
    }
}

async fn write_loop(
    wr: tokio::net::tcp::OwnedWriteHalf,
    mut rx: mpsc::Receiver<JoinHandle<Option<Bytes>>>,
    shutdown: CancellationToken,
) {
    let mut wr = BufWriter::with_capacity(64 * 1024, wr);
    // Fires SHUTDOWN_DRAIN after shutdown starts; created once, so the grace is per
    // connection, not per response. Never polled again once it has fired.
    let drain_over = async {
        shutdown.cancelled().await;
        tokio::time::sleep(SHUTDOWN_DRAIN).await;
    };
    tokio::pin!(drain_over);
    while let Some(mut handle) = rx.recv().await {
        let joined = tokio::select! {
            biased;
            r = &mut handle => r,
            _ = &mut drain_over => {
                handle.abort();
                rx.close();
                while let Ok(h) = rx.try_recv() {
                    h.abort();
                }
                let _ = wr.flush().await;
                return;
            }
        };
        let response = match joined {
            Ok(r) => r,
            Err(e) => {
                // A handler panicked: the response order can no longer be kept, so close.
                tracing::error!(error = %e, "request handler failed");
                return;
            }
        };
        if let Some(resp) = response {
            if wr.write_all(&resp).await.is_err() {
                return;
            }
        }
        if rx.is_empty() && wr.flush().await.is_err() {
            return;
        }
    }
    let _ = wr.flush().await;
}
