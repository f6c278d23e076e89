//! Helpers of the metrics broker tests: HTTP reads of krec's endpoint, Prometheus's own tools
//! (Debian's `prometheus` package, installed by scripts/install-deps.sh): `promtool check
//! metrics`, and a Prometheus server of the test's own that scrapes krec.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on now (bound and released; the caller binds it next).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// GETs `url`: the status and body, or None when nothing answers.
pub fn get(url: &str, query: &[(&str, &str)]) -> Option<(u16, String)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut request = agent.get(url);
    for (key, value) in query {
        request = request.query(*key, *value);
    }
    let mut response = request.call().ok()?;
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_string().ok()?;
    Some((status, body))
}

/// The samples of `name` in Prometheus text: each sample's labels (as written) and value.
pub fn samples<'a>(text: &'a str, name: &str) -> Vec<(&'a str, f64)> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let labels = match series.split_once('{') {
                Some((metric, labels)) if metric == name => labels.trim_end_matches('}'),
                None if series == name => "",
                _ => return None,
            };
            Some((labels, value.parse().ok()?))
        })
        .collect()
}

/// Runs `promtool check metrics` on `text`: its exit success and what it printed.
pub fn promtool_check(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool (Debian's prometheus package, from scripts/install-deps.sh)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let output = child.wait_with_output().expect("promtool");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

/// A Prometheus server of the test's own: a temporary directory, 127.0.0.1, a free port,
/// scraping one target every second. Stopped when dropped.
pub struct Prometheus {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (`HOST:PORT`, path `/metrics`) and waits until it is
    /// ready.
    pub fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("temporary directory");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: krec\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let address = format!("127.0.0.1:{}", free_port());
        let log = dir.path().join("prometheus.log");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("prometheus log"))
            .spawn()
            .expect("run prometheus (Debian's prometheus package, from scripts/install-deps.sh)");
        let mut prometheus = Prometheus {
            child,
            url: format!("http://{address}"),
            log,
            _dir: dir,
        };
        prometheus.wait_ready();
        prometheus
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = get(&format!("{}/-/ready", self.url), &[]);
            if ready.is_some_and(|(status, _)| status == 200) {
                return;
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!("prometheus exited with {status}:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "prometheus not ready in time:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Evaluates `query` now through the HTTP API (`/api/v1/query`): each result series'
    /// labels and value.
    pub fn query(&self, query: &str) -> Vec<(serde_json::Value, f64)> {
        let (status, body) = get(&format!("{}/api/v1/query", self.url), &[("query", query)])
            .unwrap_or_else(|| panic!("prometheus did not answer {query:?}"));
        assert_eq!(status, 200, "query {query:?}: {body}");
        let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON answer");
        assert_eq!(answer["status"], "success", "query {query:?}: {body}");
        answer["data"]["result"]
            .as_array()
            .expect("a vector result")
            .iter()
            .map(|series| {
                let value = series["value"][1].as_str().expect("a sample value");
                (series["metric"].clone(), value.parse().expect("a number"))
            })
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
