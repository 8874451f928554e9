//! The real `strata` binary as a child process on an ephemeral port (crash tests: kill -9,
//! test-only fault injection through the environment).
#![allow(dead_code)]
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Segment size the spawned broker uses: small, so every scenario crosses segment rolls.
pub const SEGMENT_BYTES: &str = "65536";

/// A `strata` child process and where it listens.
pub struct Strata {
    pub child: Child,
    pub addr: SocketAddr,
    /// Everything the broker logged so far (stdout and stderr), for failure messages.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Strata {
    /// Starts the binary on 127.0.0.1:0 with `dir` as its only log dir and waits for the
    /// "strata started" line, which carries the bound port.
    pub fn spawn(dir: &Path) -> Strata {
        Self::spawn_with_env(dir, &[])
    }

    /// As [`Strata::spawn`], with extra environment variables (test-only fault injection).
    pub fn spawn_with_env(dir: &Path, env: &[(&str, &str)]) -> Strata {
        let mut env = env.to_vec();
        env.push(("NO_COLOR", "1"));
        Self::spawn_with(dir, &env, &[])
    }

    /// As [`Strata::spawn`], with exactly these extra variables (no `NO_COLOR` unless given)
    /// and extra arguments (`--override k=v` after the defaults wins over them).
    pub fn spawn_with(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Strata {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args([
                "--override",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "--override",
                "strata.admin.listeners=",
                "--override",
                &format!("log.dirs={}", dir.display()),
                "--override",
                &format!("log.segment.bytes={SEGMENT_BYTES}"),
                "--override",
                // Small index interval: many index entries per 64 KiB segment.
                "log.index.interval.bytes=1024",
            ])
            .args(args)
            .env("STRATA_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strata");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let log = log.clone();
            let tx = tx.clone();
            // Drains the pipe for the life of the process so the broker never blocks on it.
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if line.contains("strata started") {
                        let _ = tx.send(started_port(&line));
                    }
                    log.lock().unwrap().push(line);
                }
            });
        }
        // A generous bound for a debug build on a loaded machine; only a hang trips it.
        let port = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Some(port)) => port,
            other => {
                let _ = child.kill();
                panic!(
                    "strata did not start ({other:?}); log:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
        };
        Strata {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
        }
    }

    /// SIGKILL: the process ends at whatever point it is, no flush, no marker.
    pub fn kill9(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }

    /// SIGTERM and wait: a clean shutdown, which must exit 0.
    pub fn stop(mut self) {
        // SAFETY: plain kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        assert_eq!(rc, 0, "SIGTERM");
        let status = self.child.wait().expect("wait");
        assert!(
            status.success(),
            "clean shutdown exit {status:?}; log:\n{}",
            self.log.lock().unwrap().join("\n")
        );
    }

    /// Waits (up to `timeout`) for the process to end by itself; returns whether it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    pub fn logged(&self, needle: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(needle))
    }
}

impl Drop for Strata {
    fn drop(&mut self) {
        // A failed assertion must not leave a broker behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port of the first `127.0.0.1:<port>` in the "strata started" line.
pub fn started_port(line: &str) -> Option<u16> {
    let at = line.find("127.0.0.1:")? + "127.0.0.1:".len();
    let digits: String = line[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}
