//! The `rdkafka` crate (librdkafka built from source by `rdkafka-sys`) against a broker:
//! creates a topic, produces keyed records with headers (one with a null value) from an
//! idempotent producer, and reads them back by partition assignment. Exit 0 = pass.
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::TopicPartitionList;

const N: usize = 200;

fn fail(msg: String) -> ! {
    println!("ASSERTION FAILED: {msg}");
    std::process::exit(1)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bootstrap = args.next().unwrap_or_else(|| "127.0.0.1:9092".into());
    let topic = args.next().unwrap_or_else(|| "compat-rdkafka".into());

    let admin: AdminClient<DefaultClientContext> =
        ClientConfig::new().set("bootstrap.servers", &bootstrap).create().expect("admin client");
    let created = futures_lite_block_on(admin.create_topics(
        &[NewTopic::new(&topic, 1, TopicReplication::Fixed(1))],
        &AdminOptions::new(),
    ));
    match created {
        Ok(results) => {
            for r in results {
                if let Err((t, e)) = r {
                    fail(format!("create topic {t}: {e}"));
                }
            }
        }
        Err(e) => fail(format!("create topics: {e}")),
    }

    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("enable.idempotence", "true")
        .set("compression.type", "lz4")
        .create()
        .expect("producer");
    for i in 0..N {
        let key = format!("k{i}");
        let value = format!("v{i}");
        let headers = OwnedHeaders::new()
            .insert(Header { key: "h", value: Some("1") })
            .insert(Header { key: "h", value: Some("2") });
        let mut record = BaseRecord::to(&topic).key(&key).partition(0).headers(headers);
        if i % 20 != 7 {
            record = record.payload(&value);
        }
        if let Err((e, _)) = producer.send(record) {
            fail(format!("send {i}: {e}"));
        }
        producer.poll(Duration::ZERO);
    }
    if let Err(e) = producer.flush(Duration::from_secs(30)) {
        fail(format!("flush: {e}"));
    }

    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic, 0, rdkafka::Offset::Beginning).expect("tpl");
    consumer.assign(&tpl).expect("assign");
    let mut got = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while got < N && std::time::Instant::now() < deadline {
        let Some(m) = consumer.poll(Duration::from_millis(500)) else { continue };
        let m = m.unwrap_or_else(|e| fail(format!("consume: {e}")));
        let i = got;
        if m.offset() != i as i64 {
            fail(format!("record {i} at offset {}", m.offset()));
        }
        if m.key() != Some(format!("k{i}").as_bytes()) {
            fail(format!("record {i} key {:?}", m.key()));
        }
        let want_value = (i % 20 != 7).then(|| format!("v{i}"));
        if m.payload().map(|p| p.to_vec()) != want_value.map(|v| v.into_bytes()) {
            fail(format!("record {i} value {:?}", m.payload()));
        }
        let headers = m.headers().map(|h| h.iter().map(|x| (x.key.to_string(), x.value.map(|v| v.to_vec()))).collect::<Vec<_>>());
        if headers != Some(vec![("h".into(), Some(b"1".to_vec())), ("h".into(), Some(b"2".to_vec()))]) {
            fail(format!("record {i} headers {headers:?}"));
        }
        got += 1;
    }
    if got != N {
        fail(format!("read {got} of {N} records"));
    }
    println!("rdkafka crate: {N} records round-tripped (lz4, idempotent, duplicate headers, null values)");
}

/// Drives a future to completion on this thread (the admin API is async; no runtime needed).
fn futures_lite_block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}
