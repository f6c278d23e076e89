//! The consumer protocol's embedded messages: the subscription a member puts in JoinGroup and
//! the assignment the leader puts in SyncGroup (`ConsumerProtocolSubscription` /
//! `ConsumerProtocolAssignment`, each an `int16` version followed by the message).

use std::collections::BTreeMap;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kafka_protocol::messages::consumer_protocol_subscription::TopicPartition as OwnedTopic;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::assignor::{MemberSubscription, TopicPartition};

/// The subscription version krec writes (v3: owned partitions, generation, rack).
const SUBSCRIPTION_VERSION: i16 = 3;
/// The assignment version krec writes.
const ASSIGNMENT_VERSION: i16 = 3;

/// Why embedded bytes could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

fn group_by_topic(partitions: &[TopicPartition]) -> BTreeMap<&str, Vec<i32>> {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        by_topic.entry(topic).or_default().push(*partition);
    }
    by_topic
}

/// Encodes a member's subscription. The cooperative-sticky assignor's user data is the
/// generation as one `int32`, as the Java client writes it.
pub fn encode_subscription(
    topics: &[String],
    owned: &[TopicPartition],
    generation: i32,
    cooperative_user_data: bool,
) -> Bytes {
    let user_data =
        cooperative_user_data.then(|| Bytes::copy_from_slice(&generation.to_be_bytes()));
    let message = ConsumerProtocolSubscription::default()
        .with_topics(
            topics
                .iter()
                .map(|t| StrBytes::from_string(t.clone()))
                .collect(),
        )
        .with_user_data(user_data)
        .with_owned_partitions(
            group_by_topic(owned)
                .into_iter()
                .map(|(topic, partitions)| {
                    OwnedTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
                        .with_partitions(partitions)
                })
                .collect(),
        )
        .with_generation_id(generation);
    encode_versioned(&message, SUBSCRIPTION_VERSION)
}

/// Decodes a member's subscription (any version; newer ones are read as the newest known,
/// since versions only append fields).
pub fn decode_subscription(
    member_id: &str,
    instance_id: Option<&str>,
    bytes: &[u8],
) -> Result<MemberSubscription, WireError> {
    let (version, mut body) = split_version(bytes)?;
    let message = ConsumerProtocolSubscription::decode(&mut body, version.min(3))
        .map_err(|e| WireError(format!("subscription of {member_id} (v{version}): {e}")))?;
    let mut generation = if version >= 2 {
        message.generation_id
    } else {
        -1
    };
    // Older members carry the cooperative generation in the user data only.
    if version < 2 {
        if let Some(data) = message.user_data.as_ref().filter(|d| d.len() == 4) {
            generation = i32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        }
    }
    Ok(MemberSubscription {
        member_id: member_id.to_owned(),
        instance_id: instance_id.map(str::to_owned),
        topics: message
            .topics
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect(),
        owned: message
            .owned_partitions
            .iter()
            .flat_map(|t| {
                let topic = t.topic.0.as_str().to_owned();
                t.partitions.iter().map(move |p| (topic.clone(), *p))
            })
            .collect(),
        generation,
    })
}

/// Encodes one member's assignment.
pub fn encode_assignment(partitions: &[TopicPartition]) -> Bytes {
    let message = ConsumerProtocolAssignment::default().with_assigned_partitions(
        group_by_topic(partitions)
            .into_iter()
            .map(|(topic, partitions)| {
                AssignedTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partitions(partitions)
            })
            .collect(),
    );
    encode_versioned(&message, ASSIGNMENT_VERSION)
}

/// Decodes the assignment SyncGroup returned; an empty byte string is no partitions.
pub fn decode_assignment(bytes: &[u8]) -> Result<Vec<TopicPartition>, WireError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let (version, mut body) = split_version(bytes)?;
    let message = ConsumerProtocolAssignment::decode(&mut body, version.min(3))
        .map_err(|e| WireError(format!("assignment (v{version}): {e}")))?;
    Ok(message
        .assigned_partitions
        .iter()
        .flat_map(|t| {
            let topic = t.topic.0.as_str().to_owned();
            t.partitions.iter().map(move |p| (topic.clone(), *p))
        })
        .collect())
}

fn split_version(bytes: &[u8]) -> Result<(i16, Bytes), WireError> {
    if bytes.len() < 2 {
        return Err(WireError(format!(
            "{} bytes, too short for a version",
            bytes.len()
        )));
    }
    let mut body = Bytes::copy_from_slice(bytes);
    let version = body.get_i16();
    if version < 0 {
        return Err(WireError(format!("negative version {version}")));
    }
    Ok((version, body))
}

fn encode_versioned<M: Encodable>(message: &M, version: i16) -> Bytes {
    let mut buffer = BytesMut::new();
    buffer.put_i16(version);
    // Encoding our own well-formed message into a growable buffer cannot fail.
    if message.encode(&mut buffer, version).is_err() {
        buffer.truncate(2);
    }
    buffer.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_round_trips_with_owned_partitions_and_generation() {
        let owned = vec![
            ("a".to_owned(), 1),
            ("a".to_owned(), 3),
            ("b".to_owned(), 0),
        ];
        let bytes = encode_subscription(&["a".into(), "b".into()], &owned, 7, true);
        assert_eq!(&bytes[..2], &[0, 3]);
        let member = decode_subscription("m", Some("i"), &bytes).unwrap();
        assert_eq!(member.topics, vec!["a", "b"]);
        assert_eq!(member.owned, owned);
        assert_eq!(member.generation, 7);
        assert_eq!(member.instance_id.as_deref(), Some("i"));
    }

    #[test]
    fn version_zero_subscription_as_old_clients_write_it() {
        // v0: topics ["t"], user data null.
        let mut bytes = vec![0, 0, 0, 0, 0, 1, 0, 1, b't'];
        bytes.extend_from_slice(&(-1i32).to_be_bytes());
        let member = decode_subscription("m", None, &bytes).unwrap();
        assert_eq!(member.topics, vec!["t"]);
        assert!(member.owned.is_empty());
        assert_eq!(member.generation, -1);
    }

    #[test]
    fn assignment_round_trips_and_empty_means_none() {
        let partitions = vec![("t".to_owned(), 0), ("t".to_owned(), 5)];
        let bytes = encode_assignment(&partitions);
        assert_eq!(decode_assignment(&bytes).unwrap(), partitions);
        assert_eq!(decode_assignment(&[]).unwrap(), Vec::new());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &[0u8][..],
            &[0xff, 0xff],
            &[0, 3, 0xff, 0xff, 0xff, 0xf0],
            &[0, 0, 0, 9, 0],
        ] {
            assert!(decode_assignment(bytes).is_err(), "{bytes:?}");
            assert!(decode_subscription("m", None, bytes).is_err(), "{bytes:?}");
        }
    }
}
