//! `krec metadata`: brokers, controller, cluster id and topic partitions (kcat's `-L`), as
//! text or one JSON document.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde_json::{json, Value};

use crate::cluster::{print, run_command, ClusterArgs};
use crate::Error;
use krec_client::describe::{describe_cluster, ClusterDescription, TopicDescription};
use krec_client::metadata::MetadataClient;

/// Arguments of `krec metadata`.
#[derive(Debug, clap::Args)]
pub struct MetadataArgs {
    /// Brokers and client properties.
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// Topics to describe, comma-separated or repeated (default: every topic).
    #[arg(
        short = 't',
        long = "topic",
        value_delimiter = ',',
        value_name = "TOPIC,..."
    )]
    pub topics: Vec<String>,

    /// One JSON document instead of text.
    #[arg(short = 'J', long = "json")]
    pub json: bool,
}

/// Runs `krec metadata`.
pub fn run(args: MetadataArgs) -> ExitCode {
    run_command("metadata", metadata(args))
}

async fn metadata(args: MetadataArgs) -> Result<(), Error> {
    let access = args.cluster.access()?;
    let mut client = MetadataClient::new(access.bootstrap, access.settings);
    let named = (!args.topics.is_empty()).then_some(args.topics.as_slice());
    let cluster = describe_cluster(&mut client, named)
        .await
        .map_err(krec_consumer::Error::from)?;
    if args.json {
        print(&format!("{}\n", to_json(&cluster)))?;
    } else {
        print(&to_text(&cluster))?;
    }
    // Asked about by name: a topic the cluster could not describe fails the command, after
    // everything else was printed.
    let failed: Vec<String> = cluster
        .topics
        .iter()
        .filter(|_| named.is_some())
        .filter_map(|t| {
            t.error
                .as_ref()
                .map(|error| format!("topic {:?}: {error}", t.name))
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::TopicErrors { topics: failed })
    }
}

/// The JSON document of the README.
pub fn to_json(cluster: &ClusterDescription) -> Value {
    let brokers: Vec<Value> = cluster
        .brokers
        .iter()
        .map(|b| json!({"id": b.id, "host": b.host, "port": b.port, "rack": b.rack}))
        .collect();
    let topics: Vec<Value> = cluster.topics.iter().map(topic_json).collect();
    json!({
        "cluster_id": cluster.cluster_id,
        "controller": (cluster.controller >= 0).then_some(cluster.controller),
        "brokers": brokers,
        "topics": topics,
    })
}

fn topic_json(topic: &TopicDescription) -> Value {
    let partitions: Vec<Value> = topic
        .partitions
        .iter()
        .map(|p| {
            json!({
                "partition": p.partition,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": p.replicas,
                "isr": p.isr,
                "offline": p.offline,
            })
        })
        .collect();
    json!({
        "name": topic.name,
        "id": topic_id(topic),
        "error": topic.error,
        "partitions": partitions,
    })
}

/// The text form: one line per broker, per topic and per partition.
pub fn to_text(cluster: &ClusterDescription) -> String {
    let mut text = String::new();
    let controller = match cluster.controller {
        id if id >= 0 => id.to_string(),
        _ => "none".to_owned(),
    };
    let _ = writeln!(
        text,
        "cluster {} controller {controller}",
        cluster.cluster_id.as_deref().unwrap_or("(no id)")
    );
    let _ = writeln!(text, "{} brokers:", cluster.brokers.len());
    for b in &cluster.brokers {
        let rack = b
            .rack
            .as_deref()
            .map(|r| format!(" rack {r}"))
            .unwrap_or_default();
        let _ = writeln!(text, "  broker {} at {}:{}{rack}", b.id, b.host, b.port);
    }
    let _ = writeln!(text, "{} topics:", cluster.topics.len());
    for topic in &cluster.topics {
        write_topic(&mut text, topic);
    }
    text
}

fn write_topic(text: &mut String, topic: &TopicDescription) {
    let id = topic_id(topic).unwrap_or_else(|| "none".to_owned());
    let _ = write!(text, "  topic \"{}\" id {id}", topic.name);
    if let Some(error) = &topic.error {
        let _ = write!(text, " error {error}");
    }
    let _ = writeln!(text, ", {} partitions:", topic.partitions.len());
    for p in &topic.partitions {
        let _ = write!(
            text,
            "    partition {} leader {} epoch {} replicas {} isr {} offline {}",
            p.partition,
            p.leader,
            p.leader_epoch,
            id_list(&p.replicas),
            id_list(&p.isr),
            id_list(&p.offline)
        );
        if let Some(error) = &p.error {
            let _ = write!(text, " error {error}");
        }
        text.push('\n');
    }
}

fn id_list(ids: &[i32]) -> String {
    if ids.is_empty() {
        return "-".to_owned();
    }
    ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// The topic id as Kafka's tools print it (URL-safe base64, no padding); none when nil.
fn topic_id(topic: &TopicDescription) -> Option<String> {
    use base64::Engine;
    (!topic.id.is_nil())
        .then(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(topic.id.as_bytes()))
}
