//! Kafka's own configuration files and its storage tool's steps, run with the real `strata`
//! binary (issue 12, item 7): Kafka 4's `config/server.properties` after `strata storage
//! format --standalone`, a Kafka 3.x `config/kraft/server.properties` whose
//! `advertised.listeners` leaves the controller listener out, and `--initial-controllers`.
mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use common::cluster::free_port;
use common::{api_call, create_topic_with, Client};

const BIN: &str = env!("CARGO_BIN_EXE_strata");

/// A fixture with Kafka's ports and log dir replaced; returns its path and the client port.
fn fixture(name: &str, dir: &Path) -> (PathBuf, u16, u16) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .expect("fixture");
    let (client, controller) = (free_port(), free_port());
    let text = text
        .replace("9092", &client.to_string())
        .replace("9093", &controller.to_string())
        .replace(
            "log.dirs=/tmp/kraft-combined-logs",
            &format!("log.dirs={}", dir.join("data").display()),
        );
    // No admin listener: tests run side by side (Kafka's fixtures have no such key).
    let text = text + "\nstrata.admin.listeners=\n";
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    (path, client, controller)
}

/// Runs `strata <args>` to its end: (success, stdout, stderr).
fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run strata");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Running {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `strata --config <path>`: Ok once it logged "strata started", Err(its log) if it
/// exited first.
fn start(config: &Path) -> Result<Running, String> {
    let mut child = Command::new(BIN)
        .args(["--config", &config.display().to_string()])
        .env("NO_COLOR", "1")
        .env("STRATA_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strata");
    let log = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let (log, tx) = (log.clone(), tx.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if line.contains("strata started") {
                    let _ = tx.send(true);
                }
                log.lock().unwrap().push(line);
            }
            let _ = tx.send(false);
        });
    }
    // Both readers must end before the log counts as whole: the process may close stdout
    // before its last stderr line (the reason it exited) has been read.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let (mut started, mut streams_open) = (false, 2);
    while streams_open > 0 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(true) => {
                started = true;
                break;
            }
            Ok(false) => streams_open -= 1,
            Err(_) => break,
        }
    }
    let running = Running { child, log };
    if started {
        Ok(running)
    } else {
        Err(running.log.lock().unwrap().join("\n"))
    }
}

/// The cluster id a broker reports, after creating and producing to a topic.
async fn serves(port: u16) -> String {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = Client::connect(addr).await;
    // Until the broker has registered with its controller, a topic cannot be placed
    // (INVALID_REPLICATION_FACTOR, as Kafka answers); a client retries.
    let mut code = -1;
    for _ in 0..100 {
        code = create_topic_with(&mut c, "quickstart-events", 1, &[]).await;
        if code != strata::error::ErrorCode::INVALID_REPLICATION_FACTOR.code() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exists = strata::error::ErrorCode::TOPIC_ALREADY_EXISTS.code();
    assert!(code == 0 || code == exists, "create topic: {code}");
    let (code, _) =
        common::cluster::produce_retrying(&mut c, "quickstart-events", &[b"hello"]).await;
    assert_eq!(code, 0, "produce");
    let m = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        metadata_request::MetadataRequest {
            topics: None,
            ..Default::default()
        }
    );
    m.cluster_id.unwrap_or_default()
}

#[test]
fn random_uuid_is_a_kafka_cluster_id() {
    let (ok, out, err) = run(&["storage", "random-uuid"]);
    assert!(ok, "{err}");
    let id = out.trim();
    assert_eq!(id.len(), 22, "{id:?}");
    assert!(strata::protocol::codec::Uuid::parse(id).is_some(), "{id:?}");
    assert_ne!(
        run(&["storage", "random-uuid"]).1.trim(),
        id,
        "a new id each time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka4_server_properties_after_format_standalone() {
    let dir = tempfile::tempdir().unwrap();
    let (config, client, _) = fixture("kafka4-server.properties", dir.path());
    let config_arg = config.display().to_string();

    // Unformatted, it stops at once and says what to run (it used to look for a quorum at
    // its own, not yet open, controller port and fail with no hint).
    let err = start(&config)
        .err()
        .expect("an unformatted standalone controller refuses");
    assert!(err.contains("strata storage format"), "{err}");

    let cluster_id = run(&["storage", "random-uuid"]).1.trim().to_string();
    let (ok, out, err) = run(&[
        "storage",
        "format",
        "--standalone",
        "--cluster-id",
        &cluster_id,
        "--config",
        &config_arg,
    ]);
    assert!(ok, "format: {err}");
    assert!(out.contains(&cluster_id), "{out}");
    // Formatting twice is refused, unless told to skip formatted dirs.
    let (ok, _, err) = run(&[
        "storage",
        "format",
        "--standalone",
        "-t",
        &cluster_id,
        "--config",
        &config_arg,
    ]);
    assert!(!ok && err.contains("already formatted"), "{err}");
    let (ok, _, err) = run(&[
        "storage",
        "format",
        "-s",
        "-t",
        &cluster_id,
        "-g",
        "--config",
        &config_arg,
    ]);
    assert!(ok, "--ignore-formatted: {err}");

    let broker = start(&config).unwrap_or_else(|log| panic!("start after format:\n{log}"));
    assert_eq!(serves(client).await, cluster_id, "the formatted cluster id");
    drop(broker);
    // A restart keeps the quorum it stored.
    let broker = start(&config).unwrap_or_else(|log| panic!("restart:\n{log}"));
    assert_eq!(serves(client).await, cluster_id);
    drop(broker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka3_kraft_config_without_an_advertised_controller_listener() {
    let dir = tempfile::tempdir().unwrap();
    let (config, client, _) = fixture("kafka3-kraft-server.properties", dir.path());
    let broker = start(&config).unwrap_or_else(|log| panic!("start:\n{log}"));
    assert!(!serves(client).await.is_empty());
    drop(broker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_with_initial_controllers() {
    let dir = tempfile::tempdir().unwrap();
    let (config, client, controller) = fixture("kafka4-server.properties", dir.path());
    let config_arg = config.display().to_string();
    let cluster_id = run(&["storage", "random-uuid"]).1.trim().to_string();
    let dir_id = run(&["storage", "random-uuid"]).1.trim().to_string();
    let voters = format!("1@localhost:{controller}:{dir_id}");

    // Bad input is refused with a reason: a malformed list, both voter options, a bad id.
    let (ok, _, err) = run(&[
        "storage",
        "format",
        "-t",
        &cluster_id,
        "--initial-controllers",
        "1@localhost",
        "--config",
        &config_arg,
    ]);
    assert!(!ok && !err.is_empty());
    let (ok, _, _) = run(&[
        "storage",
        "format",
        "-t",
        &cluster_id,
        "-s",
        "-I",
        &voters,
        "--config",
        &config_arg,
    ]);
    assert!(!ok, "--standalone with --initial-controllers");
    let (ok, _, err) = run(&[
        "storage",
        "format",
        "-t",
        "not-a-uuid",
        "-I",
        &voters,
        "--config",
        &config_arg,
    ]);
    assert!(!ok && err.contains("not a base64 UUID"), "{err}");

    let (ok, _, err) = run(&[
        "storage",
        "format",
        "-t",
        &cluster_id,
        "-I",
        &voters,
        "--config",
        &config_arg,
    ]);
    assert!(ok, "format: {err}");
    let meta = std::fs::read_to_string(dir.path().join("data/meta.properties")).unwrap();
    assert!(meta.contains(&format!("directory.id={dir_id}")), "{meta}");
    assert!(meta.contains(&format!("cluster.id={cluster_id}")), "{meta}");
    let broker = start(&config).unwrap_or_else(|log| panic!("start:\n{log}"));
    assert_eq!(serves(client).await, cluster_id);
    drop(broker);
}
