//! OffsetFetch of a group's committed positions with the metadata committed with them, stable
//! ones only when asked (KIP-447's `RequireStable`): how a transactional copy reads back where
//! it is, and what its commits carried.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponsePartition;
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::group_codes::UNSTABLE_OFFSET_COMMIT;
use crate::{error_name, Connection, Error, TopicPartition};

/// The last OffsetFetch version sent: one group, topics by name (v8 batches groups).
pub(super) const LAST_SINGLE_GROUP_VERSION: i16 = 7;
/// OffsetFetch carries `RequireStable` from this version on.
const REQUIRE_STABLE_VERSION: i16 = 7;

/// A partition's committed position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedPosition {
    /// The committed offset: the next one to read.
    pub offset: i64,
    /// The leader epoch committed with it, when one was.
    pub leader_epoch: Option<i32>,
    /// The metadata string committed with it, when one was.
    pub metadata: Option<String>,
}

/// OffsetFetch (one group, at most v7) of `partitions` (topic -> partition ids).
pub(super) fn offset_fetch_request(
    group: &str,
    partitions: &BTreeMap<String, Vec<i32>>,
    require_stable: bool,
) -> OffsetFetchRequest {
    OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_require_stable(require_stable)
        .with_topics(Some(
            partitions
                .iter()
                .map(|(topic, partitions)| {
                    OffsetFetchRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.clone())))
                        .with_partition_indexes(partitions.clone())
                })
                .collect(),
        ))
}

/// OffsetFetch of `partitions` (topic -> partition ids) of `group`: each partition's committed
/// position, with its leader epoch and metadata; a partition without a commit is absent.
/// With `require_stable` (v7+, else [`Error::UnsupportedVersion`]), a partition whose offsets
/// a transaction is still committing fails the call with the retriable
/// [`Error::UnstableOffsetCommit`] instead of answering an older position. A group-level error
/// is [`Error::Group`]; a partition's own, [`Error::Broker`] naming it.
pub async fn fetch_committed(
    connection: &mut Connection,
    group: &str,
    partitions: &BTreeMap<String, Vec<i32>>,
    require_stable: bool,
) -> Result<BTreeMap<TopicPartition, CommittedPosition>, Error> {
    let version = connection
        .versions()
        .negotiate::<OffsetFetchRequest>(connection.address())?
        .min(LAST_SINGLE_GROUP_VERSION);
    if require_stable && version < REQUIRE_STABLE_VERSION {
        let (broker_min, broker_max) = connection
            .versions()
            .range(<OffsetFetchRequest as crate::wire::ApiRequest>::KEY)
            .unwrap_or((-1, -1));
        return Err(Error::UnsupportedVersion {
            broker: connection.address().to_owned(),
            api: "OffsetFetch of stable offsets only",
            broker_min,
            broker_max,
            ours_min: REQUIRE_STABLE_VERSION,
            ours_max: LAST_SINGLE_GROUP_VERSION,
        });
    }
    let request = offset_fetch_request(group, partitions, require_stable);
    let response = connection
        .request_at(&request, version, Duration::from_secs(30))
        .await?;
    let refused = |code: i16, partition: Option<TopicPartition>| match (code, partition) {
        (UNSTABLE_OFFSET_COMMIT, partition) => Error::UnstableOffsetCommit {
            broker: connection.address().to_owned(),
            group: group.to_owned(),
            partition,
        },
        (code, None) => Error::Group {
            broker: connection.address().to_owned(),
            api: "OffsetFetch",
            group: group.to_owned(),
            code,
            name: error_name(code),
            detail: None,
        },
        (code, Some(TopicPartition { topic, partition })) => Error::Broker {
            broker: connection.address().to_owned(),
            api: "OffsetFetch",
            topic: Some(topic.to_string()),
            partition: Some(partition),
            code,
            name: error_name(code),
        },
    };
    if response.error_code != 0 {
        return Err(refused(response.error_code, None));
    }
    let mut positions = BTreeMap::new();
    for topic in response.topics {
        let name: Arc<str> = Arc::from(topic.name.0.as_str());
        for p in topic.partitions {
            let key = TopicPartition::new(name.clone(), p.partition_index);
            if p.error_code != 0 {
                return Err(refused(p.error_code, Some(key)));
            }
            if let Some(position) = position(p) {
                positions.insert(key, position);
            }
        }
    }
    Ok(positions)
}

/// The committed position a partition's answer holds (none: offset -1).
fn position(answer: OffsetFetchResponsePartition) -> Option<CommittedPosition> {
    (answer.committed_offset >= 0).then(|| CommittedPosition {
        offset: answer.committed_offset,
        leader_epoch: (answer.committed_leader_epoch >= 0).then_some(answer.committed_leader_epoch),
        metadata: answer.metadata.map(|m| m.as_str().to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseTopic;
    use kafka_protocol::messages::{ApiKey, OffsetFetchResponse};
    use krec_testkit::broker::{self, answers};

    use super::*;
    use crate::ConnectionSettings;

    fn answer(partition: i32, offset: i64, code: i16) -> OffsetFetchResponsePartition {
        OffsetFetchResponsePartition::default()
            .with_partition_index(partition)
            .with_committed_offset(offset)
            .with_committed_leader_epoch(if offset >= 0 { 4 } else { -1 })
            .with_metadata(Some(StrBytes::from_string(format!("source {offset}"))))
            .with_error_code(code)
    }

    /// A fake broker speaking OffsetFetch up to `max`, answering `partitions` of topic `t`
    /// with `group_code`, and checking the request asked for stable offsets as `stable` says.
    async fn committing(
        max: i16,
        group_code: i16,
        partitions: Vec<OffsetFetchResponsePartition>,
        stable: bool,
    ) -> Connection {
        let address = broker::start(move |request| match request.api_key {
            ApiKey::ApiVersions => {
                request.answer(&answers::api_versions(&[(ApiKey::OffsetFetch, 1, max)]))
            }
            _ => {
                let asked: OffsetFetchRequest = request.decode();
                assert_eq!(asked.require_stable, stable);
                assert_eq!(request.version, max.min(7));
                request.answer(
                    &OffsetFetchResponse::default()
                        .with_error_code(group_code)
                        .with_topics(vec![OffsetFetchResponseTopic::default()
                            .with_name(TopicName(StrBytes::from_static_str("t")))
                            .with_partitions(partitions.clone())]),
                )
            }
        })
        .await;
        Connection::connect(&address, &ConnectionSettings::default())
            .await
            .unwrap()
    }

    fn asked() -> BTreeMap<String, Vec<i32>> {
        BTreeMap::from([("t".to_owned(), vec![0, 1])])
    }

    #[tokio::test(flavor = "current_thread")]
    async fn positions_come_with_their_metadata_and_none_without_a_commit() {
        let answers = vec![answer(0, 42, 0), answer(1, -1, 0)];
        let mut connection = committing(9, 0, answers, true).await;
        let positions = fetch_committed(&mut connection, "g", &asked(), true)
            .await
            .unwrap();
        let expected = CommittedPosition {
            offset: 42,
            leader_epoch: Some(4),
            metadata: Some("source 42".to_owned()),
        };
        assert_eq!(positions.get(&TopicPartition::new("t", 0)), Some(&expected));
        assert_eq!(
            positions.len(),
            1,
            "partition 1 has no commit: {positions:?}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_unstable_partition_is_its_own_error() {
        let answers = vec![answer(0, 42, 0), answer(1, -1, UNSTABLE_OFFSET_COMMIT)];
        let mut connection = committing(7, 0, answers, true).await;
        let error = fetch_committed(&mut connection, "g", &asked(), true)
            .await
            .unwrap_err();
        let Error::UnstableOffsetCommit {
            group, partition, ..
        } = &error
        else {
            panic!("{error}");
        };
        assert_eq!(
            (&group[..], partition),
            ("g", &Some(TopicPartition::new("t", 1)))
        );
        assert!(error.to_string().contains("t/1"), "{error}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn group_and_partition_errors_are_named() {
        let mut connection = committing(7, 16, vec![], false).await;
        let error = fetch_committed(&mut connection, "g", &asked(), false)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, Error::Group { name, .. } if name == "NOT_COORDINATOR"),
            "{error}"
        );
        let mut connection = committing(7, 0, vec![answer(1, -1, 29)], false).await;
        let error = fetch_committed(&mut connection, "g", &asked(), false)
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                Error::Broker {
                    partition: Some(1),
                    code: 29,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn stable_offsets_need_v7() {
        let mut connection = committing(6, 0, vec![answer(0, 42, 0)], false).await;
        let error = fetch_committed(&mut connection, "g", &asked(), true)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::UnsupportedVersion { .. }), "{error}");
        let positions = fetch_committed(&mut connection, "g", &asked(), false)
            .await
            .unwrap();
        assert_eq!(positions[&TopicPartition::new("t", 0)].offset, 42);
    }
}
