//! ApiVersions negotiation: for each API, the highest version both sides speak.

use std::collections::HashMap;

use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, ApiVersionsRequest, ApiVersionsResponse,
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, CreatePartitionsRequest, CreatePartitionsResponse,
    CreateTopicsRequest, CreateTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    DescribeGroupsRequest, DescribeGroupsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse, EndTxnRequest, EndTxnResponse, FetchRequest, FetchResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse,
    InitProducerIdRequest, InitProducerIdResponse, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse,
    ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    ProduceRequest, ProduceResponse, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse, ShareAcknowledgeRequest, ShareAcknowledgeResponse,
    ShareFetchRequest, ShareFetchResponse, ShareGroupDescribeRequest, ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, SyncGroupRequest, SyncGroupResponse,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::Message;

use crate::wire::ApiRequest;
use crate::Error;

/// The ApiVersions version asked first; a broker that answers UNSUPPORTED_VERSION is asked
/// again at v0, which every broker understands.
pub(crate) const API_VERSIONS_VERSION: i16 = 3;

/// The SaslHandshake version sent: v1, after which the mechanism's messages travel in
/// SaslAuthenticate requests (KIP-152).
pub(crate) const SASL_HANDSHAKE_VERSION: i16 = 1;

/// The last AddPartitionsToTxn version a client sends: v4 on batch several transactions for
/// brokers verifying a producer's partitions (KIP-890), with no field for a client's own.
pub(crate) const ADD_PARTITIONS_TO_TXN_CLIENT_VERSION: i16 = 3;

/// One API this client sends, and the range of versions it sends it at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpokenApi {
    /// Kafka's API key.
    pub key: i16,
    /// Its name in Kafka's protocol guide.
    pub name: &'static str,
    /// The lowest version sent.
    pub min: i16,
    /// The highest version sent.
    pub max: i16,
}

impl SpokenApi {
    /// An API sent at a fixed range, or at what kafka-protocol implements of it: the range
    /// [`ApiVersions::negotiate`] meets the broker's with.
    const fn new<R: ApiRequest>(name: &'static str, fixed: Option<(i16, i16)>) -> Self {
        let (min, max) = match fixed {
            Some(range) => range,
            None => (R::VERSIONS.min, R::VERSIONS.max),
        };
        Self {
            key: R::KEY,
            name,
            min,
            max,
        }
    }
}

macro_rules! fixed_range {
    () => {
        None
    };
    ($range:expr) => {
        Some($range)
    };
}

/// Declares each request type with its API key and response, and lists them in [`SPOKEN`].
macro_rules! api_requests {
    ($($request:ty => $response:ty, $key:expr, $name:literal $(, sent $range:expr)?;)*) => {
        $(
            impl ApiRequest for $request {
                const KEY: i16 = $key;
                type Response = $response;
            }
        )*

        /// Every API this client sends, by API key, with the versions it sends: made from the
        /// declarations negotiation uses, so it cannot drift from them (`krec version -v`).
        pub const SPOKEN: &[SpokenApi] = &[
            $(SpokenApi::new::<$request>($name, fixed_range!($($range)?)),)*
        ];
    };
}

api_requests! {
    ProduceRequest => ProduceResponse, 0, "Produce";
    FetchRequest => FetchResponse, 1, "Fetch";
    ListOffsetsRequest => ListOffsetsResponse, 2, "ListOffsets";
    MetadataRequest => MetadataResponse, 3, "Metadata";
    OffsetCommitRequest => OffsetCommitResponse, 8, "OffsetCommit";
    OffsetFetchRequest => OffsetFetchResponse, 9, "OffsetFetch";
    FindCoordinatorRequest => FindCoordinatorResponse, 10, "FindCoordinator";
    JoinGroupRequest => JoinGroupResponse, 11, "JoinGroup";
    HeartbeatRequest => HeartbeatResponse, 12, "Heartbeat";
    LeaveGroupRequest => LeaveGroupResponse, 13, "LeaveGroup";
    SyncGroupRequest => SyncGroupResponse, 14, "SyncGroup";
    DescribeGroupsRequest => DescribeGroupsResponse, 15, "DescribeGroups";
    ListGroupsRequest => ListGroupsResponse, 16, "ListGroups";
    SaslHandshakeRequest => SaslHandshakeResponse, 17, "SaslHandshake",
        sent (SASL_HANDSHAKE_VERSION, SASL_HANDSHAKE_VERSION);
    ApiVersionsRequest => ApiVersionsResponse, 18, "ApiVersions", sent (0, API_VERSIONS_VERSION);
    CreateTopicsRequest => CreateTopicsResponse, 19, "CreateTopics";
    InitProducerIdRequest => InitProducerIdResponse, 22, "InitProducerId";
    AddPartitionsToTxnRequest => AddPartitionsToTxnResponse, 24, "AddPartitionsToTxn",
        sent (0, ADD_PARTITIONS_TO_TXN_CLIENT_VERSION);
    AddOffsetsToTxnRequest => AddOffsetsToTxnResponse, 25, "AddOffsetsToTxn";
    EndTxnRequest => EndTxnResponse, 26, "EndTxn";
    TxnOffsetCommitRequest => TxnOffsetCommitResponse, 28, "TxnOffsetCommit";
    DescribeConfigsRequest => DescribeConfigsResponse, 32, "DescribeConfigs";
    SaslAuthenticateRequest => SaslAuthenticateResponse, 36, "SaslAuthenticate";
    CreatePartitionsRequest => CreatePartitionsResponse, 37, "CreatePartitions";
    ConsumerGroupHeartbeatRequest => ConsumerGroupHeartbeatResponse, 68, "ConsumerGroupHeartbeat";
    ConsumerGroupDescribeRequest => ConsumerGroupDescribeResponse, 69, "ConsumerGroupDescribe";
    ShareGroupHeartbeatRequest => ShareGroupHeartbeatResponse, 76, "ShareGroupHeartbeat";
    ShareGroupDescribeRequest => ShareGroupDescribeResponse, 77, "ShareGroupDescribe";
    ShareFetchRequest => ShareFetchResponse, 78, "ShareFetch";
    ShareAcknowledgeRequest => ShareAcknowledgeResponse, 79, "ShareAcknowledge";
    DescribeShareGroupOffsetsRequest => DescribeShareGroupOffsetsResponse, 90,
        "DescribeShareGroupOffsets";
}

/// The version range of each API a broker announced in its ApiVersions response, and the
/// cluster's finalized feature levels it reported (v3+, KIP-584).
#[derive(Clone, Debug, Default)]
pub struct ApiVersions {
    ranges: HashMap<i16, (i16, i16)>,
    finalized: HashMap<String, i16>,
}

impl ApiVersions {
    /// Reads the announced ranges and finalized features from an ApiVersions response.
    pub(crate) fn from_response(response: &ApiVersionsResponse) -> Self {
        let ranges = response
            .api_keys
            .iter()
            .map(|api| (api.api_key, (api.min_version, api.max_version)))
            .collect();
        let finalized = response
            .finalized_features
            .iter()
            .map(|feature| (feature.name.to_string(), feature.max_version_level))
            .collect();
        Self { ranges, finalized }
    }

    /// The level a feature is finalized at in the broker's cluster (`transaction.version`,
    /// `group.version`...), as the broker knew it when the connection opened; `None` when
    /// the broker reported no such feature (one older than Kafka 2.7 reports none).
    pub fn finalized_feature_level(&self, feature: &str) -> Option<i16> {
        self.finalized.get(feature).copied()
    }

    /// The broker's `(min, max)` for an API key, if it speaks that API at all.
    pub fn range(&self, api_key: i16) -> Option<(i16, i16)> {
        self.ranges.get(&api_key).copied()
    }

    /// The highest version of `R` that both the broker and kafka-protocol speak.
    pub fn negotiate<R: ApiRequest>(&self, broker: &str) -> Result<i16, Error> {
        let ours = R::VERSIONS;
        let (broker_min, broker_max) = self.range(R::KEY).unwrap_or((-1, -1));
        let highest = broker_max.min(ours.max);
        if broker_max < 0 || highest < broker_min.max(ours.min) {
            return Err(Error::UnsupportedVersion {
                broker: broker.to_owned(),
                api: api_name(R::KEY),
                broker_min,
                broker_max,
                ours_min: ours.min,
                ours_max: ours.max,
            });
        }
        Ok(highest)
    }
}

/// A readable name for the APIs this client uses (for errors and logs).
pub fn api_name(api_key: i16) -> &'static str {
    SPOKEN
        .iter()
        .find(|api| api.key == api_key)
        .map_or("request", |api| api.name)
}

/// The highest version of a message type kafka-protocol implements.
#[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
pub(crate) fn highest_supported<M: Message>() -> i16 {
    M::VERSIONS.max
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    fn table(entries: &[(i16, i16, i16)]) -> ApiVersions {
        let response = ApiVersionsResponse::default().with_api_keys(
            entries
                .iter()
                .map(|&(key, min, max)| {
                    ApiVersion::default()
                        .with_api_key(key)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        );
        ApiVersions::from_response(&response)
    }

    #[test]
    fn picks_the_highest_common_version() {
        let versions = table(&[(1, 0, 12), (3, 0, 99)]);
        assert_eq!(versions.negotiate::<FetchRequest>("b").unwrap(), 12);
        assert_eq!(
            versions.negotiate::<MetadataRequest>("b").unwrap(),
            highest_supported::<MetadataRequest>()
        );
    }

    #[test]
    fn spoken_lists_each_api_once_with_the_range_negotiation_uses() {
        let keys: Vec<i16> = SPOKEN.iter().map(|api| api.key).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(keys, sorted, "by key, each once");
        assert!(SPOKEN.iter().all(|api| 0 <= api.min && api.min <= api.max));
        let fetch = SPOKEN.iter().find(|api| api.name == "Fetch").unwrap();
        let ours = <FetchRequest as Message>::VERSIONS;
        assert_eq!((fetch.key, fetch.min, fetch.max), (1, ours.min, ours.max));
        let api_versions = SPOKEN.iter().find(|api| api.key == 18).unwrap();
        assert_eq!(
            (api_versions.min, api_versions.max),
            (0, API_VERSIONS_VERSION)
        );
        assert_eq!(api_name(36), "SaslAuthenticate");
        assert_eq!(api_name(999), "request");
    }

    #[test]
    fn no_overlap_is_an_error() {
        // kafka-protocol speaks Fetch from v4 on; a broker stuck at v0..=3 cannot be used.
        let versions = table(&[(1, 0, 3)]);
        let error = versions.negotiate::<FetchRequest>("b:9092").unwrap_err();
        assert!(
            matches!(
                error,
                Error::UnsupportedVersion {
                    broker_max: 3,
                    ours_min: 4,
                    ..
                }
            ),
            "{error}"
        );
        let missing = table(&[]);
        assert!(missing.negotiate::<FetchRequest>("b").is_err());
    }
}
