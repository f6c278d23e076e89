//! `krec groups`: every group of the cluster with its type and state, or one group described
//! like `kafka-consumer-groups.sh --describe` (members, assignor, and per partition the
//! group's offset, the end and the lag), as text or JSON.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde_json::{json, Value};

use crate::cluster::{print, run_command, ClusterArgs};
use crate::Error;
use krec_client::group_lag::PartitionLag;
use krec_client::groups::{describe_group, list_groups, GroupDescription, GroupFilter, GroupList};
use krec_client::metadata::MetadataClient;

/// Arguments of `krec groups`.
#[derive(Debug, clap::Args)]
pub struct GroupsArgs {
    /// Brokers and client properties.
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// The group to describe (default: list every group).
    #[arg(value_name = "GROUP")]
    pub group: Option<String>,

    /// List only groups of these types, comma-separated.
    #[arg(
        long = "type",
        value_delimiter = ',',
        value_name = "TYPE,...",
        value_parser = ["classic", "consumer", "share", "streams"]
    )]
    pub types: Vec<String>,

    /// List only groups in these states, comma-separated (`Stable`, `Empty`, ...).
    #[arg(long = "state", value_delimiter = ',', value_name = "STATE,...")]
    pub states: Vec<String>,

    /// `read_uncommitted` (default, or `isolation.level`): the end of a partition is its
    /// high watermark; `read_committed`: its last stable offset.
    #[arg(long = "isolation", value_parser = ["read_uncommitted", "read_committed"])]
    pub isolation: Option<String>,

    /// JSON instead of text: one object per line for a list, one document for a group.
    #[arg(short = 'J', long = "json")]
    pub json: bool,
}

/// How many times a question is asked when the broker drops the connection or does not answer.
const ATTEMPTS: u32 = 3;

/// After a dropped connection or a timeout (a broker restarting, a coordinator loading its
/// state), waits and says whether to ask again; other errors are final.
async fn ask_again(error: &krec_client::Error, attempt: &mut u32) -> bool {
    if *attempt >= ATTEMPTS || error.is_security_failure() || !error.is_connection_failure() {
        return false;
    }
    *attempt += 1;
    tracing::warn!(%error, "krec groups: asking again");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    true
}

/// Runs `krec groups`.
pub fn run(args: GroupsArgs) -> ExitCode {
    run_command("groups", groups(args))
}

async fn groups(args: GroupsArgs) -> Result<(), Error> {
    let access = args.cluster.access()?;
    let mut client = MetadataClient::new(access.bootstrap, access.settings.clone());
    let client_error = |e: krec_client::Error| Error::Consumer(e.into());
    let Some(group) = &args.group else {
        if args.isolation.is_some() {
            return Err(Error::InvalidArgument {
                what: "--isolation",
                detail: "it applies to the end offsets of one group: give a GROUP".to_owned(),
            });
        }
        let filter = GroupFilter {
            types: args.types.clone(),
            states: args.states.clone(),
        };
        let mut attempt = 1;
        let list = loop {
            match list_groups(&mut client, &access.settings, &filter).await {
                Err(error) if ask_again(&error, &mut attempt).await => continue,
                listed => break listed.map_err(client_error)?,
            }
        };
        if !list.types_reported {
            eprintln!(
                "krec groups: note: a broker does not report group types (ListGroups before \
                 v5, Kafka before 3.8); its groups are all classic and shown as such"
            );
        }
        return print(&if args.json {
            list_json(&list)
        } else {
            list_text(&list)
        });
    };
    if !args.types.is_empty() || !args.states.is_empty() {
        return Err(Error::InvalidArgument {
            what: "--type/--state",
            detail: "they filter the list of groups: leave out GROUP to list".to_owned(),
        });
    }
    let read_committed = args
        .isolation
        .as_deref()
        .map_or(access.config.read_committed, |level| {
            level == "read_committed"
        });
    let mut attempt = 1;
    let described = loop {
        match describe_group(&mut client, &access.settings, group, read_committed).await {
            Err(error) if ask_again(&error, &mut attempt).await => continue,
            described => break described.map_err(client_error)?,
        }
    };
    if args.json {
        print(&format!("{}\n", describe_json(&described)))?;
    } else {
        print(&describe_text(&described, read_committed))?;
    }
    let failed: Vec<String> = described
        .partitions
        .iter()
        .filter(|p| !p.errors.is_empty())
        .map(|p| format!("{}/{}: {}", p.topic, p.partition, p.errors.join(", ")))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::TopicErrors { topics: failed })
    }
}

/// One JSON object per group, one per line.
pub fn list_json(list: &GroupList) -> String {
    let mut text = String::new();
    for g in &list.groups {
        let line = json!({
            "group": g.group, "type": g.group_type, "state": g.state,
            "protocol_type": g.protocol_type,
        });
        let _ = writeln!(text, "{line}");
    }
    text
}

/// The list as a table: GROUP, TYPE, STATE.
pub fn list_text(list: &GroupList) -> String {
    let rows = list
        .groups
        .iter()
        .map(|g| vec![g.group.clone(), g.group_type.clone(), or_dash(&g.state)])
        .collect();
    table(&["GROUP", "TYPE", "STATE"], rows)
}

/// The JSON document of one group (see the README).
pub fn describe_json(group: &GroupDescription) -> Value {
    let offset_key = offset_key(group);
    let members: Vec<Value> = group
        .members
        .iter()
        .map(|m| {
            let assignment: Vec<Value> = m
                .assignment
                .iter()
                .map(|p| json!({"topic": &*p.topic, "partition": p.partition}))
                .collect();
            json!({
                "member_id": m.member_id, "instance_id": m.instance_id,
                "client_id": m.client_id, "host": m.host, "assignment": assignment,
            })
        })
        .collect();
    let partitions: Vec<Value> = group
        .partitions
        .iter()
        .map(|p| {
            let mut row = json!({
                "topic": p.topic, "partition": p.partition, "end_offset": p.end,
                "lag": p.lag, "member_id": p.member, "errors": p.errors,
            });
            row[offset_key] = json!(p.offset);
            row
        })
        .collect();
    json!({
        "group": group.group, "type": group.group_type, "state": group.state,
        "protocol_type": group.protocol_type, "assignor": group.assignor,
        "group_epoch": group.group_epoch,
        "coordinator": {"id": group.coordinator_id, "address": group.coordinator},
        "members": members, "partitions": partitions,
    })
}

/// Share groups have a start offset per partition; the others a committed one.
fn offset_key(group: &GroupDescription) -> &'static str {
    if group.group_type == "share" {
        "start_offset"
    } else {
        "committed_offset"
    }
}

/// A heading, the partitions (as kafka-consumer-groups.sh shows them) and the members.
pub fn describe_text(group: &GroupDescription, read_committed: bool) -> String {
    let mut text = heading_line(group);
    text.push_str(&partition_table(group, read_committed));
    if group.members.is_empty() {
        let _ = writeln!(text, "\ngroup {} has no active members", group.group);
        return text;
    }
    text.push('\n');
    text.push_str(&member_table(group));
    text
}

/// The group's name, type, state, assignor, epoch and coordinator, then a blank line.
fn heading_line(group: &GroupDescription) -> String {
    let mut text = format!(
        "group {} type {} state {} assignor {}",
        group.group,
        group.group_type,
        or_dash(&group.state),
        or_dash(&group.assignor)
    );
    if let Some(protocol_type) = &group.protocol_type {
        let _ = write!(text, " protocol-type {}", or_dash(protocol_type));
    }
    if let Some(epoch) = group.group_epoch {
        let _ = write!(text, " epoch {epoch}");
    }
    let _ = writeln!(
        text,
        " coordinator {} ({})\n",
        group.coordinator_id, group.coordinator
    );
    text
}

/// One row per partition: its offsets, lag and member, and errors when any partition has some.
fn partition_table(group: &GroupDescription, read_committed: bool) -> String {
    let offset = if group.group_type == "share" {
        "START-OFFSET"
    } else {
        "CURRENT-OFFSET"
    };
    let end = if read_committed {
        "LAST-STABLE-OFFSET"
    } else {
        "LOG-END-OFFSET"
    };
    let errors = group.partitions.iter().any(|p| !p.errors.is_empty());
    let rows = group
        .partitions
        .iter()
        .map(|p| partition_row(group, p, errors))
        .collect();
    let heading = [
        "TOPIC",
        "PARTITION",
        offset,
        end,
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "ERRORS",
    ];
    // The errors column only when there are errors to show.
    let columns = if errors {
        heading.len()
    } else {
        heading.len() - 1
    };
    table(&heading[..columns], rows)
}

/// One row per member: its ids, host and assigned partitions.
fn member_table(group: &GroupDescription) -> String {
    let members = group
        .members
        .iter()
        .map(|m| {
            let assigned: Vec<String> = m.assignment.iter().map(ToString::to_string).collect();
            vec![
                m.member_id.clone(),
                m.instance_id.clone().unwrap_or_else(|| "-".to_owned()),
                or_dash(&m.client_id),
                or_dash(&m.host),
                if assigned.is_empty() {
                    "-".to_owned()
                } else {
                    assigned.join(",")
                },
            ]
        })
        .collect();
    let heading = [
        "MEMBER-ID",
        "INSTANCE-ID",
        "CLIENT-ID",
        "HOST",
        "ASSIGNMENT",
    ];
    table(&heading, members)
}

fn partition_row(group: &GroupDescription, p: &PartitionLag, with_errors: bool) -> Vec<String> {
    let number = |value: Option<i64>| value.map_or("-".to_owned(), |v| v.to_string());
    let member = p
        .member
        .as_ref()
        .and_then(|id| group.members.iter().find(|m| &m.member_id == id));
    let mut row = vec![
        p.topic.clone(),
        p.partition.to_string(),
        number(p.offset),
        number(p.end),
        number(p.lag),
        member.map_or("-".to_owned(), |m| m.member_id.clone()),
        member.map_or("-".to_owned(), |m| or_dash(&m.host)),
        member.map_or("-".to_owned(), |m| or_dash(&m.client_id)),
    ];
    if with_errors {
        row.push(if p.errors.is_empty() {
            "-".to_owned()
        } else {
            p.errors.join(",")
        });
    }
    row
}

fn or_dash(text: &str) -> String {
    if text.is_empty() {
        "-".to_owned()
    } else {
        text.to_owned()
    }
}

/// Left-aligned columns two spaces apart, the last one unpadded.
fn table(heading: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = heading.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let heading: Vec<String> = heading.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&heading).chain(&rows) {
        let last = row.len().saturating_sub(1);
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i == last {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<width$}  ");
            }
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use krec_client::groups::{GroupListing, GroupMember};

    fn described(group_type: &str) -> GroupDescription {
        GroupDescription {
            group: "billing".to_owned(),
            group_type: group_type.to_owned(),
            state: "Stable".to_owned(),
            protocol_type: None,
            assignor: "uniform".to_owned(),
            group_epoch: Some(4),
            coordinator_id: 1,
            coordinator: "h:9092".to_owned(),
            members: vec![GroupMember {
                member_id: "m1".to_owned(),
                instance_id: None,
                client_id: "krec".to_owned(),
                host: "/10.0.0.7".to_owned(),
                assignment: vec![krec_client::TopicPartition::new("orders", 0)],
            }],
            partitions: vec![PartitionLag {
                topic: "orders".to_owned(),
                partition: 0,
                offset: Some(3),
                end: Some(10),
                lag: Some(7),
                member: Some("m1".to_owned()),
                errors: Vec::new(),
            }],
        }
    }

    #[test]
    fn text_shows_offsets_lag_and_owner_in_columns() {
        let text = describe_text(&described("consumer"), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "group billing type consumer state Stable assignor uniform epoch 4 coordinator 1 \
             (h:9092)"
        );
        let cells: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            cells,
            ["orders", "0", "3", "10", "7", "m1", "/10.0.0.7", "krec",]
        );
        assert!(!lines[2].contains("ERRORS"), "{text}");
        let mut refused = described("consumer");
        refused.partitions[0].errors = vec!["offset: TOPIC_AUTHORIZATION_FAILED".to_owned()];
        let text = describe_text(&refused, false);
        let row = text.lines().nth(3).unwrap();
        assert!(
            row.ends_with("krec       offset: TOPIC_AUTHORIZATION_FAILED"),
            "{text}"
        );
        assert!(lines[2].starts_with("TOPIC"), "{text}");
        let share = describe_text(&described("share"), true);
        assert!(
            share.contains("START-OFFSET  LAST-STABLE-OFFSET"),
            "{share}"
        );
    }

    #[test]
    fn json_names_the_offset_by_the_group_type() {
        let consumer = describe_json(&described("consumer"));
        assert_eq!(consumer["partitions"][0]["committed_offset"], 3);
        assert_eq!(consumer["partitions"][0]["lag"], 7);
        assert_eq!(consumer["members"][0]["assignment"][0]["topic"], "orders");
        let share = describe_json(&described("share"));
        assert_eq!(share["partitions"][0]["start_offset"], 3);
        assert!(share["partitions"][0].get("committed_offset").is_none());
    }

    #[test]
    fn the_list_has_one_line_per_group() {
        let list = GroupList {
            groups: vec![GroupListing {
                group: "g".to_owned(),
                group_type: "share".to_owned(),
                protocol_type: "share".to_owned(),
                state: String::new(),
            }],
            types_reported: true,
        };
        assert_eq!(list_text(&list), "GROUP  TYPE   STATE\ng      share  -\n");
        let line: Value = serde_json::from_str(list_json(&list).trim()).unwrap();
        assert_eq!(line["type"], "share");
    }
}
