//! Starting and stopping the bundled control plane (`testenv/`) as a child
//! process.
//!
//! The child is started with `--exit-on-stdin-close` and a piped stdin that
//! only this process holds: when a test binary ends — normally, by a panic or
//! by a signal — the pipe closes and the control plane shuts itself down, so
//! no server outlives the tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

/// The JSON line testenv prints (and writes to `<data-dir>/ready.json`) once
/// `/readyz` is ok.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ready {
    pub server: String,
    pub data_dir: PathBuf,
    pub kubeconfigs: std::collections::BTreeMap<String, PathBuf>,
    pub pid: u32,
    /// The Kubernetes release it runs, e.g. `v1.37.2`.
    #[serde(default)]
    pub version: String,
}

impl Ready {
    /// Reads the ready file of a control plane started elsewhere, e.g. by
    /// `scripts/testenv start`.
    pub fn from_data_dir(dir: &Path) -> Result<Ready, String> {
        let path = dir.join("ready.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "reading {}: {e} (is testenv running there?)",
                path.display()
            )
        })?;
        serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))
    }

    pub fn kubeconfig(&self, user: &str) -> &Path {
        &self.kubeconfigs[user]
    }
}

/// How to start a control plane.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Data dir to use (and keep); a fresh temporary one when `None`.
    pub data_dir: Option<PathBuf>,
    /// Secure port; a free one when `None`.
    pub port: Option<u16>,
    /// `--etcd-compaction-interval`.
    pub compaction: Option<Duration>,
    /// Extra kube-apiserver flags.
    pub apiserver_args: Vec<String>,
}

/// A running testenv process.
pub struct ControlPlane {
    child: Child,
    stdin: Option<ChildStdin>,
    ready: Ready,
    log: PathBuf,
    /// The data dir was testenv's own temporary one: testenv removes it when
    /// it shuts down, but a killed testenv cannot, so `kill` does.
    temporary_data: bool,
}

/// Repository root (where Cargo.toml is).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds testenv once per process (cached across runs by the script) and
/// returns the binary: of the release `KDI_TESTENV_VERSION` names, which the
/// script reads (v1.37.2 when unset).
pub fn binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/testenv"))
            .arg("build")
            .stderr(Stdio::inherit())
            .output()
            .expect("running scripts/testenv build");
        assert!(
            out.status.success(),
            "scripts/testenv build failed ({}); see its output above",
            out.status
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
    })
    .clone()
}

impl ControlPlane {
    /// Starts a control plane and waits (up to 3 minutes) until it is ready.
    pub fn start(opts: &Options) -> Result<ControlPlane, String> {
        let bin = binary();
        let logs = repo_root().join("target/testenv/logs");
        std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
        let log = logs.join(format!(
            "testenv-{}-{}.log",
            std::process::id(),
            rand::random::<u32>()
        ));
        let mut cmd = Command::new(&bin);
        cmd.arg("--exit-on-stdin-close")
            .arg("--log-file")
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(dir) = &opts.data_dir {
            cmd.arg("--data-dir").arg(dir);
        }
        if let Some(port) = opts.port {
            cmd.arg("--port").arg(port.to_string());
        }
        if let Some(c) = opts.compaction {
            cmd.arg("--etcd-compaction-interval")
                .arg(format!("{}ms", c.as_millis()));
        }
        for a in &opts.apiserver_args {
            cmd.arg(format!("--apiserver-arg={a}"));
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("starting {}: {e}", bin.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref() {
                match line {
                    Ok(l) if l.contains("\"ready\":true") => {
                        let _ = tx.send(l);
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
            // Keep draining so the child never blocks on a full pipe.
            for _ in lines {}
        });
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    let ready: Ready = serde_json::from_str(&line)
                        .map_err(|e| format!("bad ready line {line:?}: {e}"))?;
                    return Ok(ControlPlane {
                        child,
                        stdin,
                        ready,
                        log,
                        temporary_data: opts.data_dir.is_none(),
                    });
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {}
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "testenv exited with {status} before it was ready; log {}:\n{}",
                    log.display(),
                    tail(&log, 30)
                ));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "testenv not ready after 180s; log {}:\n{}",
                    log.display(),
                    tail(&log, 30)
                ));
            }
        }
    }

    pub fn ready(&self) -> &Ready {
        &self.ready
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Port of the secure endpoint.
    pub fn port(&self) -> u16 {
        self.ready
            .server
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("server URL has a port")
    }

    /// Graceful stop (the child sees stdin close and shuts down, as on
    /// SIGTERM); waits up to 60 s, then kills.
    pub fn stop(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let status = self.child.wait().expect("waiting for killed testenv");
                if self.temporary_data {
                    let _ = std::fs::remove_dir_all(&self.ready.data_dir);
                }
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Abrupt stop: SIGKILL, as a crash would. A temporary data dir is
    /// removed afterwards (testenv had no chance to).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.temporary_data {
            let _ = std::fs::remove_dir_all(&self.ready.data_dir);
        }
    }
}

/// The last `n` lines of a log file.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
