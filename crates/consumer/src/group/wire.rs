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
    for TopicPartition { topic, partition } in partitions {
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
    check_lengths(&body, version.min(3), true)
        .map_err(|e| WireError(format!("subscription of {member_id} (v{version}): {}", e.0)))?;
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
                t.partitions
                    .iter()
                    .map(move |p| TopicPartition::new(topic.as_str(), *p))
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
    check_lengths(&body, version.min(3), false)
        .map_err(|e| WireError(format!("assignment (v{version}): {}", e.0)))?;
    let message = ConsumerProtocolAssignment::decode(&mut body, version.min(3))
        .map_err(|e| WireError(format!("assignment (v{version}): {e}")))?;
    Ok(message
        .assigned_partitions
        .iter()
        .flat_map(|t| {
            let topic = t.topic.0.as_str().to_owned();
            t.partitions
                .iter()
                .map(move |p| TopicPartition::new(topic.as_str(), *p))
        })
        .collect())
}

/// Walks the layout of a subscription (`subscription = true`) or assignment at `version`,
/// checking every array count and length against the bytes left, so that decoding never
/// reserves memory for elements the input cannot hold (kafka-protocol reserves an array's
/// count up front). Versions 0-3 of both are fixed-width, not flexible.
fn check_lengths(body: &[u8], version: i16, subscription: bool) -> Result<(), WireError> {
    let mut walk = LengthWalk { rest: body };
    if subscription {
        walk.array(2, |w| w.string(false))?;
        walk.bytes()?;
        if version >= 1 {
            walk.array(6, |w| {
                w.string(false)?;
                w.array(4, |w| w.take(4))
            })?;
        }
        if version >= 2 {
            walk.take(4)?;
        }
        if version >= 3 {
            walk.string(true)?;
        }
    } else {
        walk.array(6, |w| {
            w.string(false)?;
            w.array(4, |w| w.take(4))
        })?;
        walk.bytes()?;
    }
    Ok(())
}

struct LengthWalk<'a> {
    rest: &'a [u8],
}

impl LengthWalk<'_> {
    fn take(&mut self, count: usize) -> Result<(), WireError> {
        if self.rest.len() < count {
            return Err(WireError(format!(
                "{count} bytes needed, {} left",
                self.rest.len()
            )));
        }
        self.rest = &self.rest[count..];
        Ok(())
    }

    fn int(&mut self, width: usize) -> Result<i64, WireError> {
        let bytes = self.rest.get(..width).ok_or_else(|| {
            WireError(format!(
                "{width}-byte length needed, {} left",
                self.rest.len()
            ))
        })?;
        let value = bytes.iter().fold(0i64, |acc, b| (acc << 8) | i64::from(*b));
        self.take(width)?;
        // Sign-extend.
        let shift = 64 - 8 * width as u32;
        Ok((value << shift) >> shift)
    }

    fn string(&mut self, nullable: bool) -> Result<(), WireError> {
        match self.int(2)? {
            -1 if nullable => Ok(()),
            length if length >= 0 => self.take(length as usize),
            length => Err(WireError(format!("string length {length}"))),
        }
    }

    fn bytes(&mut self) -> Result<(), WireError> {
        match self.int(4)? {
            -1 => Ok(()),
            length if length >= 0 => self.take(length as usize),
            length => Err(WireError(format!("bytes length {length}"))),
        }
    }

    fn array(
        &mut self,
        min_element: usize,
        mut element: impl FnMut(&mut Self) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        let count = self.int(4)?;
        if count < 0 || count as usize > self.rest.len() / min_element {
            return Err(WireError(format!(
                "array of {count} elements in {} bytes",
                self.rest.len()
            )));
        }
        for _ in 0..count {
            element(self)?;
        }
        Ok(())
    }
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
            TopicPartition::from(("a", 1)),
            TopicPartition::from(("a", 3)),
            TopicPartition::from(("b", 0)),
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
        let partitions = vec![
            TopicPartition::from(("t", 0)),
            TopicPartition::from(("t", 5)),
        ];
        let bytes = encode_assignment(&partitions);
        assert_eq!(decode_assignment(&bytes).unwrap(), partitions);
        assert_eq!(decode_assignment(&[]).unwrap(), Vec::new());
    }

    #[test]
    fn hostile_counts_are_errors_not_allocations() {
        // A subscription claiming 2^31-1 topics, and an assignment claiming 2^31-1 topics /
        // partitions: refused before anything is reserved for them.
        let mut topics = vec![0, 3];
        topics.extend_from_slice(&i32::MAX.to_be_bytes());
        let error = decode_subscription("m", None, &topics).unwrap_err();
        assert!(
            error.0.contains("array of 2147483647 elements"),
            "{error:?}"
        );
        let error = decode_assignment(&topics).unwrap_err();
        assert!(
            error.0.contains("array of 2147483647 elements"),
            "{error:?}"
        );
        let mut partitions = vec![0, 0, 0, 0, 0, 1, 0, 1, b't'];
        partitions.extend_from_slice(&i32::MAX.to_be_bytes());
        let error = decode_assignment(&partitions).unwrap_err();
        assert!(
            error.0.contains("array of 2147483647 elements"),
            "{error:?}"
        );
    }

    #[test]
    fn every_cut_of_a_valid_subscription_is_an_error() {
        let owned = vec![TopicPartition::from(("a", 1))];
        let bytes = encode_subscription(&["a".into()], &owned, 7, true);
        for cut in 0..bytes.len() {
            assert!(
                decode_subscription("m", None, &bytes[..cut]).is_err(),
                "cut {cut}"
            );
        }
        let bytes = encode_assignment(&owned);
        for cut in 1..bytes.len() {
            assert!(decode_assignment(&bytes[..cut]).is_err(), "cut {cut}");
        }
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

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = decode_subscription("m", None, &bytes);
            let _ = decode_assignment(&bytes);
        }
    }
}
