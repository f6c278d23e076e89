use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey};
use kafka_protocol::messages::ApiVersionsResponse;

use super::classify::txn_codes::*;
use super::*;
use crate::group::group_codes;

/// A broker announcing Produce, TxnOffsetCommit and EndTxn up to `max` each (in that order),
/// with `transaction.version` finalized at `level` (None: not reported).
fn broker(max: [i16; 3], level: Option<i16>) -> ApiVersions {
    let keys = [
        ProduceRequest::KEY,
        TxnOffsetCommitRequest::KEY,
        EndTxnRequest::KEY,
    ];
    let response = ApiVersionsResponse::default()
        .with_api_keys(
            keys.iter()
                .zip(max)
                .map(|(&key, max)| {
                    ApiVersion::default()
                        .with_api_key(key)
                        .with_max_version(max)
                })
                .collect(),
        )
        .with_finalized_features(
            level
                .map(|level| {
                    FinalizedFeatureKey::default()
                        .with_name(StrBytes::from_static_str(TRANSACTION_VERSION_FEATURE))
                        .with_max_version_level(level)
                        .with_min_version_level(level)
                })
                .into_iter()
                .collect(),
        );
    ApiVersions::from_response(&response)
}

#[test]
fn v2_needs_the_feature_and_every_v2_version() {
    use TransactionProtocol::*;
    assert_eq!(protocol(&broker([13, 5, 5], Some(2))), V2);
    assert_eq!(protocol(&broker([13, 5, 5], Some(3))), V2);
    assert_eq!(
        protocol(&broker([13, 5, 5], Some(1))),
        V1,
        "feature below 2"
    );
    assert_eq!(
        protocol(&broker([13, 5, 5], None)),
        V1,
        "no feature reported"
    );
    assert_eq!(
        protocol(&broker([11, 5, 5], Some(2))),
        V1,
        "Produce below v12"
    );
    assert_eq!(
        protocol(&broker([13, 4, 5], Some(2))),
        V1,
        "TxnOffsetCommit below v5"
    );
    assert_eq!(
        protocol(&broker([13, 5, 4], Some(2))),
        V1,
        "EndTxn below v5"
    );
    assert_eq!(V1.max_produce_version(), 11);
    assert!(V2.max_produce_version() >= 13);
}

#[test]
fn the_codes_are_kafkas() {
    let names = [
        (REQUEST_TIMED_OUT, "REQUEST_TIMED_OUT"),
        (NETWORK_EXCEPTION, "NETWORK_EXCEPTION"),
        (NOT_ENOUGH_REPLICAS, "NOT_ENOUGH_REPLICAS"),
        (
            NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        ),
        (TOPIC_AUTHORIZATION_FAILED, "TOPIC_AUTHORIZATION_FAILED"),
        (GROUP_AUTHORIZATION_FAILED, "GROUP_AUTHORIZATION_FAILED"),
        (CLUSTER_AUTHORIZATION_FAILED, "CLUSTER_AUTHORIZATION_FAILED"),
        (OUT_OF_ORDER_SEQUENCE_NUMBER, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        (INVALID_PRODUCER_EPOCH, "INVALID_PRODUCER_EPOCH"),
        (INVALID_TXN_STATE, "INVALID_TXN_STATE"),
        (INVALID_PRODUCER_ID_MAPPING, "INVALID_PRODUCER_ID_MAPPING"),
        (CONCURRENT_TRANSACTIONS, "CONCURRENT_TRANSACTIONS"),
        (
            TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        ),
        (OPERATION_NOT_ATTEMPTED, "OPERATION_NOT_ATTEMPTED"),
        (UNKNOWN_PRODUCER_ID, "UNKNOWN_PRODUCER_ID"),
        (PRODUCER_FENCED, "PRODUCER_FENCED"),
        (TRANSACTION_ABORTABLE, "TRANSACTION_ABORTABLE"),
    ];
    for (code, name) in names {
        assert_eq!(crate::error_name(code), name);
    }
}

#[test]
fn errors_are_classified_as_javas_transaction_manager_does() {
    use TxnApi::*;
    use TxnErrorClass::*;
    let cases = [
        (EndTxn, 0, None),
        // Fenced by a newer producer: fatal, never retried.
        (EndTxn, PRODUCER_FENCED, Some(Fenced)),
        (EndTxn, INVALID_PRODUCER_EPOCH, Some(Fenced)),
        (InitProducerId, PRODUCER_FENCED, Some(Fenced)),
        (TxnOffsetCommit, INVALID_PRODUCER_EPOCH, Some(Fenced)),
        (AddPartitionsToTxn, INVALID_PRODUCER_EPOCH, Some(Fenced)),
        (Produce, INVALID_PRODUCER_EPOCH, Some(Abort)),
        (Produce, PRODUCER_FENCED, Some(Fenced)),
        // Fatal.
        (AddPartitionsToTxn, INVALID_TXN_STATE, Some(Fatal)),
        (EndTxn, INVALID_TXN_STATE, Some(Fatal)),
        (
            FindCoordinator,
            TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            Some(Fatal),
        ),
        (
            InitProducerId,
            TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            Some(Fatal),
        ),
        (AddPartitionsToTxn, TOPIC_AUTHORIZATION_FAILED, Some(Fatal)),
        (TxnOffsetCommit, GROUP_AUTHORIZATION_FAILED, Some(Fatal)),
        (EndTxn, 43, Some(Fatal)),
        // Abortable: the producer aborts and goes on.
        (TxnOffsetCommit, TRANSACTION_ABORTABLE, Some(Abort)),
        (Produce, TRANSACTION_ABORTABLE, Some(Abort)),
        (
            TxnOffsetCommit,
            group_codes::ILLEGAL_GENERATION,
            Some(Abort),
        ),
        (TxnOffsetCommit, group_codes::UNKNOWN_MEMBER_ID, Some(Abort)),
        (
            TxnOffsetCommit,
            group_codes::FENCED_MEMBER_EPOCH,
            Some(Abort),
        ),
        (
            TxnOffsetCommit,
            group_codes::STALE_MEMBER_EPOCH,
            Some(Abort),
        ),
        (
            TxnOffsetCommit,
            group_codes::FENCED_INSTANCE_ID,
            Some(Abort),
        ),
        (AddPartitionsToTxn, OPERATION_NOT_ATTEMPTED, Some(Abort)),
        (AddPartitionsToTxn, 87, Some(Abort)),
        (Produce, 10, Some(Abort)),
        (EndTxn, UNKNOWN_PRODUCER_ID, Some(AbortWithEpochBump)),
        (
            AddOffsetsToTxn,
            INVALID_PRODUCER_ID_MAPPING,
            Some(AbortWithEpochBump),
        ),
        (
            Produce,
            OUT_OF_ORDER_SEQUENCE_NUMBER,
            Some(AbortWithEpochBump),
        ),
        // Retriable, after finding the coordinator again or as they are.
        (EndTxn, group_codes::NOT_COORDINATOR, Some(Rediscover)),
        (
            AddOffsetsToTxn,
            group_codes::COORDINATOR_NOT_AVAILABLE,
            Some(Rediscover),
        ),
        (TxnOffsetCommit, REQUEST_TIMED_OUT, Some(Rediscover)),
        (EndTxn, REQUEST_TIMED_OUT, Some(Retry)),
        (AddPartitionsToTxn, CONCURRENT_TRANSACTIONS, Some(Retry)),
        (InitProducerId, CONCURRENT_TRANSACTIONS, Some(Retry)),
        (
            InitProducerId,
            group_codes::COORDINATOR_LOAD_IN_PROGRESS,
            Some(Retry),
        ),
        (
            TxnOffsetCommit,
            group_codes::UNSTABLE_OFFSET_COMMIT,
            Some(Retry),
        ),
        (Produce, crate::codes::NOT_LEADER_OR_FOLLOWER, Some(Retry)),
        (Produce, NOT_ENOUGH_REPLICAS, Some(Retry)),
    ];
    for (api, code, class) in cases {
        assert_eq!(
            classify(api, code),
            class,
            "{api:?} {}",
            crate::error_name(code)
        );
    }
    assert!(Fenced.is_fatal() && Fatal.is_fatal());
    assert!(!Abort.is_fatal() && !AbortWithEpochBump.is_fatal() && !Retry.is_fatal());
}

#[test]
fn a_lost_connection_means_the_coordinator_again_and_the_rest_is_fatal() {
    let lost = Error::Timeout {
        broker: "b:9092".to_owned(),
        api: "EndTxn",
        timeout_ms: 1,
    };
    assert_eq!(
        classify_error(TxnApi::EndTxn, &lost),
        TxnErrorClass::Rediscover
    );
    assert_eq!(classify_error(TxnApi::Produce, &lost), TxnErrorClass::Retry);
    let malformed = Error::Protocol {
        broker: "b:9092".to_owned(),
        api: "EndTxn",
        detail: String::new(),
    };
    assert_eq!(
        classify_error(TxnApi::EndTxn, &malformed),
        TxnErrorClass::Fatal
    );
}

#[test]
fn the_verdict_names_the_gravest_partition() {
    let answer = PartitionCodes {
        broker: "b:9092".to_owned(),
        api: TxnApi::TxnOffsetCommit,
        partitions: vec![
            (TopicPartition::new("t", 0), 0),
            (
                TopicPartition::new("t", 1),
                group_codes::COORDINATOR_LOAD_IN_PROGRESS,
            ),
            (TopicPartition::new("t", 2), group_codes::ILLEGAL_GENERATION),
            (TopicPartition::new("t", 3), group_codes::NOT_COORDINATOR),
        ],
    };
    assert_eq!(answer.failed().count(), 3);
    let (class, error) = answer.verdict().unwrap();
    assert_eq!(class, TxnErrorClass::Abort);
    assert!(
        matches!(
            &error,
            Error::Broker { api: "TxnOffsetCommit", partition: Some(2), code, .. }
                if *code == group_codes::ILLEGAL_GENERATION
        ),
        "{error}"
    );
    let clean = PartitionCodes {
        partitions: vec![(TopicPartition::new("t", 0), 0)],
        ..answer
    };
    assert!(clean.verdict().is_none());
}
