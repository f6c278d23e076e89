//! What the tests share: the broker, producer configurations, and reading a topic back with
//! krec-consumer within a time limit.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use krec_consumer::{Consumer, ConsumerConfig, StartOffset};
use krec_producer::ProducerConfig;
pub use krec_testkit::live;

/// The longest any single wait of these tests may take.
pub const LIMIT: Duration = Duration::from_secs(30);

/// A producer configuration for `bootstrap` with the given properties on top.
pub fn producer_config(bootstrap: &str, properties: &[(&str, &str)]) -> ProducerConfig {
    ProducerConfig::from_properties(properties.iter().copied())
        .expect("properties")
        .with("bootstrap.servers", bootstrap)
        .expect("bootstrap.servers")
}

/// Sets `config` (`key=value`) on entity `name` of `entity_type` (`topics`, `clients`) with
/// Kafka's ConfigCommand.
pub fn alter_config(broker: &live::LiveBroker, entity_type: &str, name: &str, config: &str) {
    broker.tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            "{bootstrap}",
            "--alter",
            "--entity-type",
            entity_type,
            "--entity-name",
            name,
            "--add-config",
            config,
        ],
    );
}

/// A record as read back: offset, key, value, headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Every record of `topic`, by partition in offset order, read with krec-consumer.
pub async fn read_back(bootstrap: &str, topic: &str) -> BTreeMap<i32, Vec<Read>> {
    let mut config =
        ConsumerConfig::new(ConsumerConfig::parse_bootstrap(bootstrap).expect("bootstrap"));
    config.max_wait = Duration::from_millis(100);
    let mut consumer = Consumer::connect(config).await.expect("consumer connect");
    consumer
        .assign_topic(topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    let mut read: BTreeMap<i32, Vec<Read>> = BTreeMap::new();
    while let Some(chunk) = within("reading back", consumer.next_chunk())
        .await
        .expect("next_chunk")
    {
        let partition = read.entry(chunk.partition()).or_default();
        for record in chunk.records() {
            let record = record.expect("a record that decodes");
            partition.push(Read {
                offset: record.offset(),
                key: record.key().map(<[u8]>::to_vec),
                value: record.value().map(<[u8]>::to_vec),
                headers: record
                    .headers()
                    .iter()
                    .map(|h| {
                        let name = h.key_str().expect("UTF-8 header name").to_owned();
                        (name, h.value.map(<[u8]>::to_vec))
                    })
                    .collect(),
            });
        }
    }
    consumer.close().await;
    read
}

/// `future`, or a panic naming `what` after [`LIMIT`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done after {LIMIT:?}"))
}

/// One lane of the broker's Toxiproxy (`KREC_TEST_PROXY_ENV`, `kafka.sh start --proxies K`):
/// its bootstrap string, whose advertised addresses are the lane's proxies, and a small client
/// of Toxiproxy's HTTP API for them. Cleared of its toxics when dropped.
pub struct Lane {
    pub bootstrap: String,
    api: String,
    proxies: Vec<String>,
}

impl Lane {
    /// Lane `index` (1-based) of the suite's proxied broker.
    pub fn take(index: usize) -> Lane {
        let path = live::required("KREC_TEST_PROXY_ENV");
        let text = std::fs::read_to_string(&path).expect("read proxy.env");
        let env: std::collections::HashMap<&str, &str> =
            text.lines().filter_map(|l| l.split_once('=')).collect();
        let lane = Lane {
            bootstrap: env[format!("LANE{index}").as_str()].to_owned(),
            api: env["TOXIPROXY_API"].to_owned(),
            proxies: env[format!("LANE{index}_PROXIES").as_str()]
                .split(',')
                .map(str::to_owned)
                .collect(),
        };
        lane.clear();
        lane
    }

    /// Adds toxic `name` of `kind` on `stream` with `attributes` (JSON) to every proxy.
    pub fn add_toxic(&self, name: &str, kind: &str, stream: &str, attributes: &str) {
        for proxy in &self.proxies {
            let body = format!(
                r#"{{"name":"{name}","type":"{kind}","stream":"{stream}","toxicity":1.0,"attributes":{attributes}}}"#
            );
            self.call("POST", &format!("/proxies/{proxy}/toxics"), &body);
        }
    }

    /// Removes toxic `name` from every proxy.
    pub fn remove_toxic(&self, name: &str) {
        for proxy in &self.proxies {
            self.call("DELETE", &format!("/proxies/{proxy}/toxics/{name}"), "");
        }
    }

    fn clear(&self) {
        for proxy in &self.proxies {
            let listed = self.call("GET", &format!("/proxies/{proxy}/toxics"), "");
            for name in listed.split("\"name\":\"").skip(1) {
                let name = &name[..name.find('"').unwrap_or(0)];
                self.call("DELETE", &format!("/proxies/{proxy}/toxics/{name}"), "");
            }
        }
    }

    /// One HTTP/1.1 call of the API (std only); panics unless it answers 2xx.
    fn call(&self, method: &str, path: &str, body: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&self.api).expect("toxiproxy API");
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.api,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .expect("toxiproxy write");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("toxiproxy read");
        let status = answer.split(' ').nth(1).unwrap_or("");
        assert!(
            status.starts_with('2'),
            "toxiproxy {method} {path}: {answer}"
        );
        answer
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.clear();
    }
}
