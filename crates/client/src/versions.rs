//! ApiVersions negotiation: for each API, the highest version both sides speak.

use std::collections::HashMap;

use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
    DescribeGroupsRequest, DescribeGroupsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse, FetchRequest, FetchResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
    ShareGroupDescribeRequest, ShareGroupDescribeResponse, ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::Message;

use crate::wire::ApiRequest;
use crate::Error;

macro_rules! api_request {
    ($request:ty, $response:ty, $key:expr) => {
        impl ApiRequest for $request {
            const KEY: i16 = $key;
            type Response = $response;
        }
    };
}

api_request!(FetchRequest, FetchResponse, 1);
api_request!(ListOffsetsRequest, ListOffsetsResponse, 2);
api_request!(MetadataRequest, MetadataResponse, 3);
api_request!(ApiVersionsRequest, ApiVersionsResponse, 18);
api_request!(OffsetCommitRequest, OffsetCommitResponse, 8);
api_request!(OffsetFetchRequest, OffsetFetchResponse, 9);
api_request!(FindCoordinatorRequest, FindCoordinatorResponse, 10);
api_request!(JoinGroupRequest, JoinGroupResponse, 11);
api_request!(HeartbeatRequest, HeartbeatResponse, 12);
api_request!(LeaveGroupRequest, LeaveGroupResponse, 13);
api_request!(SyncGroupRequest, SyncGroupResponse, 14);
api_request!(DescribeGroupsRequest, DescribeGroupsResponse, 15);
api_request!(ListGroupsRequest, ListGroupsResponse, 16);
api_request!(SaslHandshakeRequest, SaslHandshakeResponse, 17);
api_request!(SaslAuthenticateRequest, SaslAuthenticateResponse, 36);
api_request!(
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    68
);
api_request!(
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    69
);
api_request!(ShareGroupDescribeRequest, ShareGroupDescribeResponse, 77);
api_request!(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, 76);
api_request!(ShareFetchRequest, ShareFetchResponse, 78);
api_request!(ShareAcknowledgeRequest, ShareAcknowledgeResponse, 79);
api_request!(
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    90
);

/// The version range of each API a broker announced in its ApiVersions response.
#[derive(Clone, Debug, Default)]
pub struct ApiVersions {
    ranges: HashMap<i16, (i16, i16)>,
}

impl ApiVersions {
    /// Reads the announced ranges from an ApiVersions response.
    pub(crate) fn from_response(response: &ApiVersionsResponse) -> Self {
        let ranges = response
            .api_keys
            .iter()
            .map(|api| (api.api_key, (api.min_version, api.max_version)))
            .collect();
        Self { ranges }
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
    match api_key {
        1 => "Fetch",
        2 => "ListOffsets",
        3 => "Metadata",
        8 => "OffsetCommit",
        9 => "OffsetFetch",
        10 => "FindCoordinator",
        11 => "JoinGroup",
        12 => "Heartbeat",
        13 => "LeaveGroup",
        14 => "SyncGroup",
        15 => "DescribeGroups",
        16 => "ListGroups",
        17 => "SaslHandshake",
        36 => "SaslAuthenticate",
        18 => "ApiVersions",
        68 => "ConsumerGroupHeartbeat",
        69 => "ConsumerGroupDescribe",
        76 => "ShareGroupHeartbeat",
        77 => "ShareGroupDescribe",
        78 => "ShareFetch",
        79 => "ShareAcknowledge",
        90 => "DescribeShareGroupOffsets",
        _ => "request",
    }
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
