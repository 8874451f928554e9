//! What idle long-polling consumers cost a producer (issue 12, "waiting requests"): starts a
//! broker in this process on loopback, measures a lock-step producer (acks=1, one 100 B record
//! per request) for `SECONDS` with no consumers, then again while `CONSUMERS` connections each
//! hold a Fetch (`min_bytes` 1, `max_wait_ms` 30,000) on a topic that takes no writes.
//!
//! Reports per phase: produce requests per second, latency p50/p99, and the broker's CPU time
//! (the threads of its runtime, named `strata-broker`, read from `/proc/self/task`; the
//! clients run on other threads) per produce request.
//!
//! Run: `cargo run --example long_poll_idle -- [CONSUMERS=1000] [SECONDS=10] [IDLE_PARTITIONS=100]`
//! (figures in BENCHMARKS.md). Linux only (it reads `/proc`).
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::header::RequestHeader;
use strata::protocol::messages::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BROKER_THREADS: &str = "strata-broker";

/// One connection speaking Strata's own codec.
struct Conn {
    stream: TcpStream,
    correlation_id: i32,
}

impl Conn {
    async fn connect(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            correlation_id: 0,
        }
    }

    async fn send<Req: Encode>(&mut self, api_key: i16, version: i16, flexible: bool, req: &Req) {
        self.correlation_id += 1;
        let header = RequestHeader {
            api_key,
            api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("long-poll-bench".into()),
            unknown_tagged_fields: vec![],
        };
        let mut body = BytesMut::new();
        header.encode(&mut body, if flexible { 2 } else { 1 });
        req.encode(&mut body, version);
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.put_slice(&body);
        self.stream.write_all(&frame).await.unwrap();
    }

    async fn receive<Resp: Decode>(&mut self, version: i16, flexible: bool) -> Resp {
        let size = self.stream.read_i32().await.expect("response");
        let mut buf = vec![0u8; size as usize];
        self.stream.read_exact(&mut buf).await.unwrap();
        let mut body = Bytes::from(buf);
        assert_eq!(body.get_i32(), self.correlation_id);
        if flexible {
            body.get_u8(); // no tagged fields in the response header
        }
        Resp::decode(&mut body, version).expect("decodes")
    }
}

async fn create_topic(addr: SocketAddr, name: &str, partitions: i32) {
    use create_topics_request::*;
    let mut c = Conn::connect(addr).await;
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 5000,
        ..Default::default()
    };
    c.send(CreateTopicsRequest::API_KEY, 7, true, &req).await;
    let r: create_topics_response::CreateTopicsResponse = c.receive(7, true).await;
    assert_eq!(r.topics[0].error_code, 0, "create {name}");
}

fn one_record() -> Bytes {
    let mut b = strata::protocol::records::RecordBatchBuilder::new(0);
    b.append(
        1_700_000_000_000,
        None,
        Some(Bytes::from(vec![b'x'; 100])),
        vec![],
    );
    b.build().freeze()
}

/// A consumer parked on `partition` of the idle topic; counts the responses it gets (none
/// are expected inside a measurement window shorter than `max_wait_ms`).
async fn idle_consumer(addr: SocketAddr, partition: i32, responses: Arc<AtomicUsize>) {
    use fetch_request::*;
    let mut c = Conn::connect(addr).await;
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 30_000,
        min_bytes: 1,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: "idle".into(),
            partitions: vec![FetchPartition {
                partition,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    loop {
        c.send(FetchRequest::API_KEY, 12, true, &req).await;
        let r: fetch_response::FetchResponse = c.receive(12, true).await;
        assert_eq!(r.responses[0].partitions[0].error_code, 0);
        responses.fetch_add(1, Ordering::Relaxed);
    }
}

struct Phase {
    requests: usize,
    elapsed: Duration,
    latencies_us: Vec<u64>,
    broker_cpu: Duration,
}

async fn produce_for(addr: SocketAddr, seconds: u64) -> Phase {
    use produce_request::*;
    let mut c = Conn::connect(addr).await;
    let cpu_before = broker_cpu();
    let started = Instant::now();
    let mut latencies_us = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        let req = ProduceRequest {
            acks: 1,
            timeout_ms: 5000,
            topic_data: vec![TopicProduceData {
                name: "busy".into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(one_record()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let t = Instant::now();
        c.send(ProduceRequest::API_KEY, 9, true, &req).await;
        let r: produce_response::ProduceResponse = c.receive(9, true).await;
        latencies_us.push(t.elapsed().as_micros() as u64);
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    let elapsed = started.elapsed();
    Phase {
        requests: latencies_us.len(),
        elapsed,
        latencies_us,
        broker_cpu: broker_cpu().saturating_sub(cpu_before),
    }
}

/// User + system CPU time of the broker runtime's threads.
fn broker_cpu() -> Duration {
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let mut ticks = 0u64;
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with(BROKER_THREADS) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
        let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        ticks += rest[11].parse::<u64>().unwrap() + rest[12].parse::<u64>().unwrap();
    }
    Duration::from_micros(ticks * 1_000_000 / ticks_per_s)
}

fn report(label: &str, p: &mut Phase) {
    p.latencies_us.sort_unstable();
    let at = |q: f64| p.latencies_us[((p.latencies_us.len() - 1) as f64 * q) as usize];
    println!(
        "{label:<28} {:>8.0} req/s  p50 {:>6} us  p99 {:>6} us  broker CPU {:>6.2} s = {:>6.1} us/request",
        p.requests as f64 / p.elapsed.as_secs_f64(),
        at(0.50),
        at(0.99),
        p.broker_cpu.as_secs_f64(),
        p.broker_cpu.as_micros() as f64 / p.requests.max(1) as f64,
    );
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numeric arguments"))
        .collect();
    let consumers = *args.first().unwrap_or(&1000) as usize;
    let seconds = *args.get(1).unwrap_or(&10);
    let idle_partitions = *args.get(2).unwrap_or(&100) as i32;

    let dir = tempfile::tempdir().unwrap();
    let overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0".to_string(),
        format!("log.dirs={}", dir.path().display()),
        "max.connections=100000".to_string(),
        "strata.admin.listeners=".to_string(),
    ];
    let config = strata::config::BrokerConfig::load(None, &overrides)
        .expect("config")
        .0;
    let broker_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(BROKER_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let running = broker_rt
        .block_on(strata::server::startup::start(
            config,
            strata::clock::system(),
        ))
        .expect("broker starts");
    let addr = running.local_addrs[0];

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("bench-client")
        .enable_all()
        .build()
        .unwrap();
    client_rt.block_on(async move {
        create_topic(addr, "busy", 1).await;
        create_topic(addr, "idle", idle_partitions).await;
        // Warm up the producer path.
        produce_for(addr, 1).await;

        let mut alone = produce_for(addr, seconds).await;
        report("no consumers", &mut alone);

        let responses = Arc::new(AtomicUsize::new(0));
        for i in 0..consumers {
            tokio::spawn(idle_consumer(
                addr,
                i as i32 % idle_partitions,
                responses.clone(),
            ));
        }
        // Let every consumer connect and park its fetch.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut with = produce_for(addr, seconds).await;
        report(&format!("{consumers} idle long polls"), &mut with);
        println!(
            "idle fetch responses during the window: {} (expected 0)",
            responses.load(Ordering::Relaxed)
        );
    });
    drop(client_rt);
    broker_rt.block_on(async { running.stop().await.unwrap() });
}
