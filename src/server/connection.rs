//! One client connection: frames in, responses out, in request order.
//!
//! The reader decodes each frame and starts its handler at once, so requests on one connection
//! are processed concurrently (Kafka clients pipeline up to five), while the writer sends the
//! responses strictly in the order the requests arrived. Produce requests run their append
//! stage inline in the reader, so appends happen in connection order; only their wait for
//! acknowledgement runs concurrently. The reader also makes the first poll of each response
//! future: a response ready then goes straight to the writer. A long-poll Fetch that must wait
//! goes to the writer too, which polls it itself in its turn, so the produce that gives it data
//! wakes one task, not the fetch's task and then the writer; any other response that waits
//! gets a task of its own. A frame larger than `socket.request.max.bytes` or with a
//! negative size closes the connection before anything is allocated, as Kafka does.
//!
//! Slow and silent clients cannot hold resources: a frame's bytes are read into a buffer that
//! grows as they arrive, with memory reserved from the broker's
//! [`MemoryPool`](super::memory_pool::MemoryPool) (`queued.max.request.bytes`), never
//! allocated on the size prefix alone; once its size is read a frame must arrive within
//! `strata.request.read.timeout.ms` of socket time; a connection with no request in flight
//! and no traffic for `connections.max.idle.ms` is closed (Kafka's idle expiry), also when
//! it stopped mid-frame; and a frame waits for one of the broker's `queued.max.requests`
//! slots before it is read, so when the handlers fall behind the connections stop reading,
//! as Kafka's processors stop when its request queue is full. A client throttled by a quota
//! has its connection muted (no request read) for its throttle time, as Kafka's KIP-219
//! channel muting.
//!
//! The stream is plaintext or TLS ([`SecuredStream`]); the loops are generic over its two
//! halves, so a plaintext connection splits its socket without a lock as before, and a TLS
//! one uses tokio's split.
//!
//! A client that closes its side gets no more responses: the connection closes at once (its
//! slot and socket freed) and the requests it had sent finish detached, as Kafka processes
//! what it has read from a channel it then closes; only its waiting fetches, which would
//! change nothing more, end with it. At shutdown the reader stops and the
//! writer sends the responses already under way, but
//! waits at most [`SHUTDOWN_DRAIN`] for those still parked (a JoinGroup waiting for its
//! rebalance, whose timers stop with the broker; a long-poll Fetch): then it closes without
//! them, as Kafka's SocketServer closes its connections at shutdown.
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{BufMut, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::listener::NetworkState;
use super::memory_pool::Reservation;
use crate::broker::Broker;
use crate::handlers::{self, ConnectionContext, Outcome};
use crate::metrics::{RequestTimes, RequestTiming};
use crate::security::sasl::Gate;
use crate::security::SecuredStream;
use crate::storage::FileRegion;

/// Read buffer per connection. Small on purpose: it is allocated (and zeroed) for every
/// connection, idle or not, and a frame larger than it is read straight into its own buffer
/// (tokio's `BufReader` bypasses its buffer for large reads), so a bigger one saves nothing on
/// the produce path. 64 KiB cost ~45 KB of RSS per idle connection (BENCHMARKS.md).
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// The first allocation for a frame's bytes; the buffer then doubles as bytes arrive.
const FIRST_CHUNK_BYTES: usize = 64 * 1024;

/// How long, after shutdown starts, a connection still waits for responses in flight.
pub const SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(3);

pub struct Connection {
    broker: Arc<Broker>,
    network: Arc<NetworkState>,
    stream: SecuredStream,
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
    /// No request in flight and no traffic for `connections.max.idle.ms`.
    Idle,
    /// A frame's bytes did not arrive within the request read timeout.
    ReadTimeout {
        size: i32,
        received: usize,
    },
    BadRequest(String),
    /// SASL refused the connection (logged by the exchange) or its session expired.
    Authentication(String),
    /// The SASL exchange did not finish within `strata.request.read.timeout.ms`.
    AuthenticationTimeout,
    /// A handler panicked: the responses after it could not keep their order.
    HandlerFailed,
    Shutdown,
}

impl Connection {
    pub fn new(
        broker: Arc<Broker>,
        network: Arc<NetworkState>,
        stream: SecuredStream,
        context: Arc<ConnectionContext>,
        shutdown: CancellationToken,
    ) -> Self {
        Connection {
            broker,
            network,
            stream,
            context,
            shutdown,
        }
    }

    pub async fn run(self) {
        let Connection {
            broker,
            network,
            stream,
            context,
            shutdown,
        } = self;
        match stream {
            SecuredStream::Plain(tcp) => {
                let (rd, wr) = tcp.into_split();
                serve(broker, network, rd, wr, context, shutdown).await
            }
            SecuredStream::Tls(tls) => {
                let (rd, wr) = tokio::io::split(*tls);
                serve(broker, network, rd, wr, context, shutdown).await
            }
        }
    }
}

async fn serve<R, W>(
    broker: Arc<Broker>,
    network: Arc<NetworkState>,
    rd: R,
    wr: W,
    context: Arc<ConnectionContext>,
    shutdown: CancellationToken,
) where
    R: AsyncRead + Unpin + Send,
    W: SendRegion + 'static,
{
    {
        let inflight = broker.limits.max_inflight_requests_per_connection.max(1);
        let (tx, rx) = mpsc::channel::<InFlight>(inflight);
        let activity = Arc::new(Activity::new());
        let peer_gone = CancellationToken::new();
        let writer = tokio::spawn(write_loop(
            wr,
            rx,
            shutdown.clone(),
            peer_gone.clone(),
            activity.clone(),
            broker.metrics.clone(),
        ));
        let reason = read_loop(
            &broker,
            &network,
            BufReader::with_capacity(READ_BUFFER_BYTES, rd),
            tx,
            &context,
            &shutdown,
            &activity,
        )
        .await;
        // A client that closed (or whose socket failed) reads no response: the connection
        // closes now and frees its slot, as Kafka closes a channel at EOF, while the requests
        // it already sent run to their end (their appends and coordinator writes happen;
        // their waits end by their own timeouts), detached from it.
        if matches!(reason, CloseReason::Eof | CloseReason::Io(_)) {
            peer_gone.cancel();
        }
        match &reason {
            CloseReason::Eof | CloseReason::Shutdown => {}
            CloseReason::ReadTimeout { .. } | CloseReason::AuthenticationTimeout => {
                tracing::info!(peer = %context.peer, listener = %context.listener_name, reason = ?reason, "closing a connection that did not send its request in time")
            }
            other => {
                tracing::debug!(peer = %context.peer, listener = %context.listener_name, reason = ?other, "closing connection")
            }
        }
        // The writer drains every response already started, then ends.
        let _ = writer.await;
    }
}

/// A request whose response the writer sends in turn, and what the request metrics need.
struct InFlight {
    reply: Reply,
    request: Option<RequestMeta>,
}

/// A response (and when it was ready) as the writer takes it. Most responses are ready at the
/// handler's first poll, which the reader makes inline: only those that wait (acks=all, a
/// long-poll fetch, a coordinator) become tasks of their own. A task per request cost a
/// wake-up of another worker per request, the writer and the new task being both runnable
/// (BENCHMARKS.md, "Why eight partitions cost twice as much").
enum Reply {
    Ready(Option<handlers::Response>, Instant),
    Running(JoinHandle<(Option<handlers::Response>, Instant)>),
    /// A waiting request that may be dropped unanswered
    /// ([`handlers::droppable_while_waiting`]), polled by the writer when its turn comes.
    /// Its waits are registered by the first poll and its deadline is fixed, so the time it
    /// spends behind earlier responses loses no wake-up and stretches no timeout.
    Parked(handlers::ResponseFuture, Arc<RequestTiming>),
}

impl Reply {
    fn abort(&self) {
        if let Reply::Running(handle) = self {
            handle.abort();
        }
    }
}

/// Polls a handler's response future once, inline and under its request's timing; a future
/// still pending is parked for the writer if `droppable`, else spawned to finish on its own.
/// Err: the handler panicked.
fn first_poll(
    timing: &Arc<RequestTiming>,
    mut fut: handlers::ResponseFuture,
    droppable: bool,
) -> Result<Reply, ()> {
    let mut cx = Context::from_waker(Waker::noop());
    Ok(
        match timing.sync_scope(|| poll_catching(fut.as_mut(), &mut cx)) {
            Poll::Ready(Err(())) => return Err(()),
            Poll::Ready(Ok(response)) => Reply::Ready(response, Instant::now()),
            Poll::Pending if droppable => Reply::Parked(fut, timing.clone()),
            // Spawned, the future is polled again with its task's waker, which replaces the no-op
            // one wherever it registered (tokio's primitives keep the waker of the latest poll).
            Poll::Pending => Reply::Running(tokio::spawn(
                timing.scope(async move { (fut.await, Instant::now()) }),
            )),
        },
    )
}

/// A request's identity and the phases measured before its response is ready.
struct RequestMeta {
    api_key: i16,
    api_version: i16,
    /// When its frame was fully read.
    received: Instant,
    /// Its wait for a `queued.max.requests` slot (Kafka's request queue time).
    request_queue: Duration,
    /// Its purgatory time and whether it is a follower's fetch, told by the handler.
    timing: Arc<RequestTiming>,
}

/// What the idle check needs from both halves: requests whose responses are not yet written,
/// and when the connection last moved bytes.
struct Activity {
    started: Instant,
    in_flight: AtomicUsize,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            started: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        self.last_ms
            .store(self.started.elapsed().as_millis() as u64, Ordering::Release);
    }

    /// How long the connection has been idle: zero while a response is owed.
    fn idle_for(&self) -> Duration {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::Acquire));
        self.started.elapsed().saturating_sub(last)
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    broker: &Arc<Broker>,
    network: &NetworkState,
    mut rd: BufReader<R>,
    tx: mpsc::Sender<InFlight>,
    context: &Arc<ConnectionContext>,
    shutdown: &CancellationToken,
    activity: &Activity,
) -> CloseReason {
    let max_frame = broker.limits.socket_request_max_bytes;
    // On a SASL listener: the exchange, which must end within the request read timeout.
    let mut sasl = super::sasl_gate::session(&network.sasl, context);
    let auth_deadline = Instant::now() + network.request_read_timeout;
    loop {
        let read = read_size(&mut rd, network.connections_max_idle, shutdown, activity);
        let size = match sasl.as_ref().filter(|s| !s.authenticated()) {
            Some(_) => match tokio::time::timeout_at(auth_deadline, read).await {
                Ok(r) => r,
                Err(_) => return CloseReason::AuthenticationTimeout,
            },
            None => read.await,
        };
        let size = match size {
            Ok(size) => size,
            Err(reason) => return reason,
        };
        if size < 0 {
            return CloseReason::NegativeFrameSize(size);
        }
        // `sasl.server.max.receive.size` bounds frames until the client authenticates.
        let max_frame = sasl
            .as_ref()
            .and_then(|s| s.max_receive_size())
            .unwrap_or(max_frame);
        if size as usize > max_frame {
            return CloseReason::FrameTooLarge(size);
        }
        // A throttled client's connection reads no further request until its throttle time
        // has passed (KIP-219: its response, carrying the time, went out at once).
        if let Some(until) = context.muted_until() {
            tokio::select! {
                _ = shutdown.cancelled() => return CloseReason::Shutdown,
                _ = tokio::time::sleep_until(until) => {}
            }
        }
        // One of the broker's `queued.max.requests` slots, held until the request is handed
        // to its handler; while none is free this connection reads nothing more. The wait is
        // the request's queue time: once its body is in, its handler starts at once.
        let queue_wait_started = Instant::now();
        let queued = tokio::select! {
            _ = shutdown.cancelled() => return CloseReason::Shutdown,
            p = network.request_queue.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return CloseReason::Shutdown,
            },
        };
        let request_queue = queue_wait_started.elapsed();
        let (frame, reservation) =
            match read_frame(&mut rd, size, network, activity, shutdown).await {
                Ok(read) => read,
                Err(reason) => return reason,
            };
        activity.touch();
        if let Some(session) = sasl.as_mut() {
            match super::sasl_gate::judge(broker, session, &frame) {
                Gate::Pass => {}
                Gate::Reply {
                    reply,
                    principal,
                    close,
                } => {
                    if let Some(p) = principal {
                        context.set_principal(p);
                        context.set_token_authenticated(session.token_authenticated());
                    }
                    let bytes = super::sasl_gate::encode(reply);
                    drop(reservation);
                    drop(queued);
                    activity.in_flight.fetch_add(1, Ordering::AcqRel);
                    let reply = Reply::Ready(Some(bytes.into()), Instant::now());
                    if tx
                        .send(InFlight {
                            reply,
                            request: None,
                        })
                        .await
                        .is_err()
                    {
                        return CloseReason::Eof;
                    }
                    match close {
                        Some(why) => return CloseReason::Authentication(why),
                        None => continue,
                    }
                }
                Gate::Close(why) => return CloseReason::Authentication(why),
            }
        }
        let received = Instant::now();
        let timing = RequestTiming::new();
        let api = (frame.len() >= 4).then(|| RequestMeta {
            api_key: i16::from_be_bytes([frame[0], frame[1]]),
            api_version: i16::from_be_bytes([frame[2], frame[3]]),
            received,
            request_queue,
            timing: timing.clone(),
        });
        let outcome = timing.scope(handlers::start(broker, frame, context)).await;
        // The request is decoded and its handler started: Kafka's request queue and memory
        // pool let go of a request at this point too.
        drop(reservation);
        drop(queued);
        match outcome {
            Outcome::Respond(fut) => {
                let droppable = api
                    .as_ref()
                    .is_some_and(|m| handlers::droppable_while_waiting(m.api_key));
                let Ok(reply) = first_poll(&timing, fut, droppable) else {
                    tracing::error!(peer = %context.peer, "request handler failed");
                    return CloseReason::HandlerFailed;
                };
                activity.in_flight.fetch_add(1, Ordering::AcqRel);
                if tx
                    .send(InFlight {
                        reply,
                        request: api,
                    })
                    .await
                    .is_err()
                {
                    return CloseReason::Eof;
                }
            }
            Outcome::Close(why) => return CloseReason::BadRequest(why),
        }
    }
}

/// Waits for the next frame's size prefix; closes the connection once it has been idle for
/// `max_idle` (None: never).
async fn read_size<R: AsyncRead + Unpin>(
    rd: &mut BufReader<R>,
    max_idle: Option<Duration>,
    shutdown: &CancellationToken,
    activity: &Activity,
) -> Result<i32, CloseReason> {
    // Not cancel-safe, so it is polled to the end rather than restarted on each idle check.
    let read = rd.read_i32();
    tokio::pin!(read);
    let mut check_in = max_idle.unwrap_or(Duration::MAX);
    loop {
        let check = async {
            match max_idle {
                Some(_) => tokio::time::sleep(check_in).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => return Err(CloseReason::Shutdown),
            r = &mut read => return match r {
                Ok(s) => Ok(s),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(CloseReason::Eof),
                Err(e) => Err(CloseReason::Io(e)),
            },
            _ = check => {
                let max_idle = max_idle.unwrap_or(Duration::MAX);
                let idle_for = activity.idle_for();
                if idle_for >= max_idle {
                    return Err(CloseReason::Idle);
                }
                // Busy or recently active: look again when it could first be idle long enough.
                check_in = (max_idle - idle_for).max(Duration::from_millis(1));
            }
        }
    }
}

/// Reads a frame of `size` bytes into a buffer that grows as they arrive, reserving its memory
/// from the broker's pool first; gives up when the socket has made the frame wait
/// `strata.request.read.timeout.ms` in all, or, with no response owed, when no byte has come
/// for `connections.max.idle.ms`: Kafka's idle expiry closes a connection that stopped
/// mid-frame too, so the shorter of the two applies.
async fn read_frame<R: AsyncRead + Unpin>(
    rd: &mut BufReader<R>,
    size: i32,
    network: &NetworkState,
    activity: &Activity,
    shutdown: &CancellationToken,
) -> Result<(Bytes, Reservation), CloseReason> {
    let size_bytes = size as usize;
    let mut reservation = network.memory_pool.reservation();
    let mut frame: Vec<u8> = Vec::new();
    let mut budget = network.request_read_timeout;
    // Socket time since the last byte arrived (a wait for pool memory is the broker's, not
    // the client's, so it does not count).
    let mut quiet = Duration::ZERO;
    while frame.len() < size_bytes {
        if frame.len() == frame.capacity() {
            let target = size_bytes.min((frame.capacity() * 2).max(FIRST_CHUNK_BYTES));
            let more = target - frame.capacity();
            tokio::select! {
                _ = shutdown.cancelled() => return Err(CloseReason::Shutdown),
                _ = reservation.grow(more) => {}
            }
            frame.reserve_exact(more);
        }
        let room = frame.capacity() - frame.len();
        let idle_left = network
            .connections_max_idle
            .map_or(Duration::MAX, |max_idle| max_idle.saturating_sub(quiet));
        let idle_first = idle_left < budget;
        let started = Instant::now();
        let read = tokio::time::timeout(
            budget.min(idle_left),
            rd.read_buf(&mut (&mut frame).limit(room)),
        )
        .await;
        let waited = started.elapsed();
        budget = budget.saturating_sub(waited);
        quiet += waited;
        match read {
            Err(_) if !idle_first => {
                return Err(CloseReason::ReadTimeout {
                    size,
                    received: frame.len(),
                })
            }
            // A connection that is owed a response is not idle, as in `read_size`.
            Err(_) if activity.in_flight.load(Ordering::Acquire) > 0 => quiet = Duration::ZERO,
            Err(_) => return Err(CloseReason::Idle),
            Ok(Ok(0)) => return Err(CloseReason::Eof),
            Ok(Ok(_)) => quiet = Duration::ZERO,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(CloseReason::Eof)
            }
            Ok(Err(e)) => return Err(CloseReason::Io(e)),
        }
    }
    Ok((Bytes::from(frame), reservation))
}

async fn write_loop<W: SendRegion>(
    wr: W,
    mut rx: mpsc::Receiver<InFlight>,
    shutdown: CancellationToken,
    peer_gone: CancellationToken,
    activity: Arc<Activity>,
    metrics: Arc<crate::metrics::BrokerMetrics>,
) {
    let mut wr = BufWriter::with_capacity(64 * 1024, wr);
    // Fires SHUTDOWN_DRAIN after shutdown starts; created once, so the grace is per
    // connection, not per response. Never polled again once it has fired.
    let drain_over = async {
        shutdown.cancelled().await;
        tokio::time::sleep(SHUTDOWN_DRAIN).await;
    };
    tokio::pin!(drain_over);
    while let Some(InFlight { reply, request }) = rx.recv().await {
        let turn = match reply {
            Reply::Ready(response, ready) => Turn::Done(Ok((response, ready))),
            Reply::Running(mut handle) => {
                let turn = await_turn(&mut handle, &peer_gone, drain_over.as_mut()).await;
                if matches!(turn, Turn::Drained) {
                    handle.abort();
                }
                turn.map(|joined| joined.map_err(|e| e.to_string()))
            }
            Reply::Parked(fut, timing) => {
                let parked = std::pin::pin!(unwinding(timing.scope(fut)));
                await_turn(parked, &peer_gone, drain_over.as_mut())
                    .await
                    .map(|polled| {
                        polled
                            .map(|response| (response, Instant::now()))
                            .map_err(|()| "panicked".to_string())
                    })
            }
        };
        let joined = match turn {
            Turn::Done(joined) => joined,
            // Dropping the handles detaches their tasks; nothing they do is cut short. Parked
            // futures end here, unanswered.
            Turn::PeerGone => return,
            Turn::Drained => {
                rx.close();
                while let Ok(h) = rx.try_recv() {
                    h.reply.abort();
                }
                let _ = wr.flush().await;
                return;
            }
        };
        let taken = Instant::now();
        let (response, ready) = match joined {
            Ok(r) => r,
            Err(e) => {
                // A handler panicked: the response order can no longer be kept, so close.
                tracing::error!(error = %e, "request handler failed");
                return;
            }
        };
        if let Some(resp) = response {
            if write_response(&mut wr, resp).await.is_err() {
                return;
            }
        }
        if let Some(r) = request {
            let remote = r.timing.remote();
            metrics.requests.record(
                r.api_key,
                r.api_version,
                r.timing.is_follower_fetch(),
                RequestTimes {
                    request_queue: r.request_queue,
                    local: ready
                        .saturating_duration_since(r.received)
                        .saturating_sub(remote),
                    remote,
                    response_queue: taken.saturating_duration_since(ready),
                    response_send: taken.elapsed(),
                },
            );
        }
        activity.touch();
        activity.in_flight.fetch_sub(1, Ordering::AcqRel);
        if rx.is_empty() && wr.flush().await.is_err() {
            return;
        }
    }
    let _ = wr.flush().await;
}

/// How the writer's wait for the response whose turn it is ended.
enum Turn<T> {
    Done(T),
    /// The client closed its side: nothing more is written.
    PeerGone,
    /// Shutdown started [`SHUTDOWN_DRAIN`] ago.
    Drained,
}

impl<T> Turn<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Turn<U> {
        match self {
            Turn::Done(t) => Turn::Done(f(t)),
            Turn::PeerGone => Turn::PeerGone,
            Turn::Drained => Turn::Drained,
        }
    }
}

async fn await_turn<F: std::future::Future + Unpin>(
    response: F,
    peer_gone: &CancellationToken,
    drain_over: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> Turn<F::Output> {
    tokio::select! {
        biased;
        r = response => Turn::Done(r),
        _ = peer_gone.cancelled() => Turn::PeerGone,
        _ = drain_over => Turn::Drained,
    }
}

/// Polls `fut` once; a panic in the poll ends it with Err, as a task's handle reports one.
fn poll_catching<F: std::future::Future + ?Sized>(
    fut: std::pin::Pin<&mut F>,
    cx: &mut Context<'_>,
) -> Poll<Result<F::Output, ()>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
        Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(_) => Poll::Ready(Err(())),
    }
}

/// Awaits `fut`, turning a panic in any of its polls into Err.
async fn unwinding<F: std::future::Future>(fut: F) -> Result<F::Output, ()> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| poll_catching(fut.as_mut(), cx)).await
}

/// Writes one response: its in-memory bytes, and between them the file regions of a
/// zero-copy fetch, each sent once what precedes it is flushed.
async fn write_response<W: SendRegion>(
    wr: &mut BufWriter<W>,
    response: handlers::Response,
) -> std::io::Result<()> {
    let (head, regions) = response.into_parts();
    let mut at = 0;
    for (pos, region) in &regions {
        wr.write_all(&head[at..*pos]).await?;
        wr.flush().await?;
        wr.get_mut().send_region(region).await?;
        at = *pos;
    }
    wr.write_all(&head[at..]).await
}

/// A connection's write half that can send a region of a file: with sendfile on a plaintext
/// socket, by reading and writing it elsewhere (TLS must encrypt the bytes).
pub(super) trait SendRegion: AsyncWrite + Unpin + Send {
    fn send_region<'a>(
        &'a mut self,
        region: &'a FileRegion,
    ) -> impl std::future::Future<Output = std::io::Result<()>> + Send + 'a {
        async move {
            const CHUNK: usize = 64 * 1024;
            // One buffer for the whole region: zeroing a fresh one per chunk cost as much as
            // a copy of the bytes.
            let mut buf = vec![0u8; CHUNK.min(region.len)];
            let mut done = 0;
            while done < region.len {
                let n = CHUNK.min(region.len - done);
                std::os::unix::fs::FileExt::read_exact_at(
                    &*region.file,
                    &mut buf[..n],
                    region.position + done as u64,
                )?;
                self.write_all(&buf[..n]).await?;
                done += n;
            }
            Ok(())
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Send> SendRegion for tokio::io::WriteHalf<T> {}

impl SendRegion for tokio::net::tcp::OwnedWriteHalf {
    fn send_region<'a>(
        &'a mut self,
        region: &'a FileRegion,
    ) -> impl std::future::Future<Output = std::io::Result<()>> + Send + 'a {
        async move {
            use std::os::fd::AsRawFd;
            let stream: &tokio::net::TcpStream = self.as_ref();
            let socket = stream.as_raw_fd();
            let file = region.file.as_raw_fd();
            let mut offset = region.position as libc::off_t;
            let mut left = region.len;
            while left > 0 {
                stream.writable().await?;
                let sent = stream.try_io(tokio::io::Interest::WRITABLE, || {
                    let mut at = offset;
                    // SAFETY: both descriptors are open for the call (the stream and the
                    // region's file are borrowed), and `at` is ours.
                    let n = unsafe { libc::sendfile(socket, file, &mut at, left) };
                    if n < 0 {
                        Err(std::io::Error::last_os_error())
                    } else {
                        Ok(n as usize)
                    }
                });
                match sent {
                    // The file is shorter than the region (truncated since it was read): the
                    // frame cannot be completed, so the connection must close.
                    Ok(0) => {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "segment file shorter than the fetched region",
                        ))
                    }
                    Ok(n) => {
                        offset += n as libc::off_t;
                        left -= n;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
    }
}
