//! Thin public wrappers over crate-private parsers (SASL, response decoding), for
//! `crates/client/fuzz` only (feature `fuzzing`). Not an API: nothing here is stable.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::*;

use crate::connection::decode_body;
use crate::fetch::{
    scan_batches, FetchParams, FetchTarget, Scan, ScanError, FIRST_VERSION_WITH_TOPIC_IDS,
};
use crate::fetch_session::FetchSession;
use crate::sasl::scram::{ScramClient, ScramMechanism};
use crate::security::{jaas, properties, Secret};
use crate::versions::highest_supported;

/// The responses krec decodes: (API key, lowest and highest version it may negotiate).
pub fn response_apis() -> Vec<(i16, i16, i16)> {
    fn entry<R: crate::wire::ApiRequest>() -> (i16, i16, i16) {
        (R::KEY, R::VERSIONS.min, highest_supported::<R>())
    }
    vec![
        entry::<ApiVersionsRequest>(),
        entry::<MetadataRequest>(),
        entry::<ListOffsetsRequest>(),
        entry::<FetchRequest>(),
        entry::<FindCoordinatorRequest>(),
        entry::<JoinGroupRequest>(),
        entry::<SyncGroupRequest>(),
        entry::<HeartbeatRequest>(),
        entry::<LeaveGroupRequest>(),
        entry::<OffsetFetchRequest>(),
        entry::<OffsetCommitRequest>(),
        entry::<ConsumerGroupHeartbeatRequest>(),
        entry::<SaslHandshakeRequest>(),
        entry::<SaslAuthenticateRequest>(),
        entry::<ShareGroupHeartbeatRequest>(),
        entry::<ShareFetchRequest>(),
        entry::<ShareAcknowledgeRequest>(),
        entry::<ProduceRequest>(),
        entry::<InitProducerIdRequest>(),
        entry::<AddPartitionsToTxnRequest>(),
        entry::<AddOffsetsToTxnRequest>(),
        entry::<EndTxnRequest>(),
        entry::<TxnOffsetCommitRequest>(),
        entry::<ListGroupsRequest>(),
        entry::<DescribeGroupsRequest>(),
        entry::<ConsumerGroupDescribeRequest>(),
        entry::<ShareGroupDescribeRequest>(),
        entry::<DescribeShareGroupOffsetsRequest>(),
        entry::<CreateTopicsRequest>(),
        entry::<DescribeConfigsRequest>(),
        entry::<CreatePartitionsRequest>(),
    ]
}

/// Every (API key, version) [`response_apis`] allows, in order: the fuzz targets' byte 0
/// indexes this.
pub fn response_choices() -> Vec<(i16, i16)> {
    response_apis()
        .into_iter()
        .flat_map(|(key, min, max)| (min..=max).map(move |version| (key, version)))
        .collect()
}

/// Decodes a response body of `api_key` at `version` as a connection does (layout check,
/// then kafka-protocol), or the fault's text.
pub fn decode_response(api_key: i16, version: i16, body: Bytes) -> Result<(), String> {
    fn decode<T: kafka_protocol::protocol::Decodable>(
        key: i16,
        version: i16,
        body: Bytes,
    ) -> Result<(), String> {
        decode_body::<T>(key, version, body).map(drop)
    }
    match ApiKey::try_from(api_key).map_err(|()| format!("API key {api_key}"))? {
        ApiKey::ApiVersions => decode::<ApiVersionsResponse>(api_key, version, body),
        ApiKey::Metadata => decode::<MetadataResponse>(api_key, version, body),
        ApiKey::ListOffsets => decode::<ListOffsetsResponse>(api_key, version, body),
        ApiKey::Fetch => decode::<FetchResponse>(api_key, version, body),
        ApiKey::FindCoordinator => decode::<FindCoordinatorResponse>(api_key, version, body),
        ApiKey::JoinGroup => decode::<JoinGroupResponse>(api_key, version, body),
        ApiKey::SyncGroup => decode::<SyncGroupResponse>(api_key, version, body),
        ApiKey::Heartbeat => decode::<HeartbeatResponse>(api_key, version, body),
        ApiKey::LeaveGroup => decode::<LeaveGroupResponse>(api_key, version, body),
        ApiKey::OffsetFetch => decode::<OffsetFetchResponse>(api_key, version, body),
        ApiKey::OffsetCommit => decode::<OffsetCommitResponse>(api_key, version, body),
        ApiKey::ConsumerGroupHeartbeat => {
            decode::<ConsumerGroupHeartbeatResponse>(api_key, version, body)
        }
        ApiKey::SaslHandshake => decode::<SaslHandshakeResponse>(api_key, version, body),
        ApiKey::SaslAuthenticate => decode::<SaslAuthenticateResponse>(api_key, version, body),
        ApiKey::ShareGroupHeartbeat => {
            decode::<ShareGroupHeartbeatResponse>(api_key, version, body)
        }
        ApiKey::ShareFetch => decode::<ShareFetchResponse>(api_key, version, body),
        ApiKey::ShareAcknowledge => decode::<ShareAcknowledgeResponse>(api_key, version, body),
        ApiKey::Produce => decode::<ProduceResponse>(api_key, version, body),
        ApiKey::InitProducerId => decode::<InitProducerIdResponse>(api_key, version, body),
        ApiKey::AddPartitionsToTxn => decode::<AddPartitionsToTxnResponse>(api_key, version, body),
        ApiKey::AddOffsetsToTxn => decode::<AddOffsetsToTxnResponse>(api_key, version, body),
        ApiKey::EndTxn => decode::<EndTxnResponse>(api_key, version, body),
        ApiKey::TxnOffsetCommit => decode::<TxnOffsetCommitResponse>(api_key, version, body),
        ApiKey::ListGroups => decode::<ListGroupsResponse>(api_key, version, body),
        ApiKey::DescribeGroups => decode::<DescribeGroupsResponse>(api_key, version, body),
        ApiKey::ConsumerGroupDescribe => {
            decode::<ConsumerGroupDescribeResponse>(api_key, version, body)
        }
        ApiKey::ShareGroupDescribe => decode::<ShareGroupDescribeResponse>(api_key, version, body),
        ApiKey::DescribeShareGroupOffsets => {
            decode::<DescribeShareGroupOffsetsResponse>(api_key, version, body)
        }
        ApiKey::CreateTopics => decode::<CreateTopicsResponse>(api_key, version, body),
        ApiKey::DescribeConfigs => decode::<DescribeConfigsResponse>(api_key, version, body),
        ApiKey::CreatePartitions => decode::<CreatePartitionsResponse>(api_key, version, body),
        other => Err(format!("krec does not send {other:?}")),
    }
}

/// One partition of a Fetch answer as the fetch loop gets it: the session entry it belongs
/// to, its records and what the batch-header scan found.
#[derive(Debug)]
pub struct AnsweredPartition {
    /// Index of its entry in the session (below [`FETCH_PARTITIONS`]).
    pub entry: usize,
    /// Topic name (always [`FETCH_TOPIC`]: the session names it).
    pub topic: Arc<str>,
    /// Partition id.
    pub partition: i32,
    /// The records, a slice of the response body.
    pub records: Bytes,
    /// The scan of its batch headers.
    pub scan: Result<Scan, ScanError>,
}

/// A Fetch answer read against a session, as [`read_fetch`] gives it.
#[derive(Debug)]
pub struct FetchAnswer {
    /// The partitions answered, in the broker's order.
    pub partitions: Vec<AnsweredPartition>,
    /// Entries left out of an incremental answer: nothing new for them.
    pub unchanged: Vec<usize>,
    /// The answer did not fit the session.
    pub mismatched: bool,
}

/// The topic id of the session [`read_fetch`] reads against (topic [`FETCH_TOPIC`]).
pub const KNOWN_TOPIC_ID: uuid::Uuid = uuid::Uuid::from_u128(0x6b72_6563);
/// The topic the session of [`read_fetch`] fetches, by this name and [`KNOWN_TOPIC_ID`].
pub const FETCH_TOPIC: &str = "t";
/// The session of [`read_fetch`] fetches partitions `0..FETCH_PARTITIONS` of [`FETCH_TOPIC`].
pub const FETCH_PARTITIONS: i32 = 4;

/// Decodes a Fetch response body at `version` and reads it as a fetch loop does: through a
/// [`FetchSession`] that asked for partitions `0..FETCH_PARTITIONS` of [`FETCH_TOPIC`],
/// in a full request, or with `incremental` (from v7) in an incremental one after a first
/// answer opened the session; then each answered partition's batch headers are scanned.
pub fn read_fetch(version: i16, body: Bytes, incremental: bool) -> Result<FetchAnswer, String> {
    let response = decode_body::<FetchResponse>(ApiKey::Fetch as i16, version, body)?;
    let topic: Arc<str> = Arc::from(FETCH_TOPIC);
    let params = FetchParams {
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 1 << 20,
        partition_max_bytes: 1 << 16,
        read_committed: false,
        rack_id: String::new(),
    };
    let wanted = |offset: i64| -> Vec<FetchTarget<'_>> {
        (0..FETCH_PARTITIONS)
            .map(|partition| FetchTarget {
                topic: &topic,
                topic_id: KNOWN_TOPIC_ID,
                partition,
                offset: offset + i64::from(partition),
                leader_epoch: -1,
                generation: 0,
            })
            .collect()
    };
    let mut session = FetchSession::new(true);
    session.request(wanted(0), &params, version);
    if incremental {
        session.read_response(opening_answer(version));
        session.request(wanted(1), &params, version);
    }
    let answer = session.read_response(response);
    Ok(FetchAnswer {
        partitions: answer
            .partitions
            .into_iter()
            .map(|(entry, p)| AnsweredPartition {
                entry,
                scan: scan_batches(&p.records),
                topic: p.topic,
                partition: p.partition,
                records: p.records,
            })
            .collect(),
        unchanged: answer.unchanged,
        mismatched: answer.mismatched,
    })
}

/// An answer to the full request of [`read_fetch`] that opens session 1, every partition
/// empty at offset 0.
fn opening_answer(version: i16) -> FetchResponse {
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    let partitions = (0..FETCH_PARTITIONS)
        .map(|partition| PartitionData::default().with_partition_index(partition))
        .collect();
    let topic = if version >= FIRST_VERSION_WITH_TOPIC_IDS {
        FetchableTopicResponse::default().with_topic_id(KNOWN_TOPIC_ID)
    } else {
        FetchableTopicResponse::default().with_topic(TopicName(
            kafka_protocol::protocol::StrBytes::from_static_str(FETCH_TOPIC),
        ))
    };
    FetchResponse::default()
        .with_session_id(1)
        .with_responses(vec![topic.with_partitions(partitions)])
}

/// The client nonce of [`scram_exchange`]'s client: a server-first that goes further must
/// start with `r=` and this.
pub const SCRAM_NONCE: &str = "fyko+d2lbbFgONRv9qkxdawL";
/// The password of [`scram_exchange`]'s client, which no output may contain.
pub const SCRAM_PASSWORD: &str = "pencil-fuzz-secret";

/// How far a SCRAM exchange got.
#[derive(Debug)]
pub struct ScramOutcome {
    /// The client-final message, if the server-first was accepted.
    pub client_final: Option<Vec<u8>>,
    /// True if the server-final verified.
    pub complete: bool,
    /// The fault's text, if one ended the exchange.
    pub fault: Option<String>,
}

/// Feeds `server_first` and then (if it was accepted) `server_final` to a client for user
/// `user` with [`SCRAM_NONCE`], accepting 1..=64 iterations so the fuzzer stays fast.
pub fn scram_exchange(sha512: bool, server_first: &[u8], server_final: &[u8]) -> ScramOutcome {
    let mechanism = if sha512 {
        ScramMechanism::Sha512
    } else {
        ScramMechanism::Sha256
    };
    let password = Secret::new(SCRAM_PASSWORD.to_owned());
    let mut client = match ScramClient::with_nonce(mechanism, "user", &password, SCRAM_NONCE) {
        Ok(client) => client.with_iteration_range(1..=64),
        Err(fault) => {
            return ScramOutcome {
                client_final: None,
                complete: false,
                fault: Some(fault.to_string()),
            }
        }
    };
    let client_final = match client.handle_server_first(server_first) {
        Ok(message) => message,
        Err(fault) => {
            return ScramOutcome {
                client_final: None,
                complete: false,
                fault: Some(fault.to_string()),
            }
        }
    };
    let fault = client.handle_server_final(server_final).err();
    ScramOutcome {
        client_final: Some(client_final),
        complete: client.is_complete(),
        fault: fault.map(|f| f.to_string()),
    }
}

/// A parsed login: (module, flag, options).
pub type JaasParts = (String, String, Vec<(String, String)>);

/// `sasl.jaas.config` parsed into its parts, or the fault's text.
pub fn jaas(text: &str) -> Result<JaasParts, String> {
    jaas::parse(text)
        .map(|login| (login.module, login.flag, login.options))
        .map_err(|fault| fault.to_string())
}

/// A properties file parsed into (key, value, line), or the fault's text.
pub fn properties(input: &[u8]) -> Result<Vec<(String, String, usize)>, String> {
    properties::parse(input)
        .map(|entries| {
            entries
                .into_iter()
                .map(|p| (p.key, p.value, p.line))
                .collect()
        })
        .map_err(|fault| fault.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use bytes::BytesMut;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    fn name(text: &'static str) -> StrBytes {
        StrBytes::from_static_str(text)
    }

    #[test]
    fn every_api_krec_sends_has_its_response_fuzzed() {
        let fuzzed: Vec<i16> = response_apis().iter().map(|(key, _, _)| *key).collect();
        for api in crate::versions::SPOKEN {
            assert!(fuzzed.contains(&api.key), "{} is not fuzzed", api.name);
            let body = Bytes::new();
            assert!(
                decode_response(api.key, api.max, body).is_err(),
                "{}",
                api.name
            );
        }
    }

    /// Seed bodies: populated responses, encoded at every version each fits.
    fn seeds() -> Vec<(i16, Vec<u8>)> {
        use kafka_protocol::messages::{fetch_response as f, metadata_response as m};
        let records = std::fs::read("../../tests/data/java-lz4.bin").unwrap();
        let fetch =
            FetchResponse::default().with_responses(vec![f::FetchableTopicResponse::default()
                .with_topic(TopicName(name("t")))
                .with_topic_id(KNOWN_TOPIC_ID)
                .with_partitions(vec![f::PartitionData::default()
                    .with_high_watermark(9)
                    .with_records(Some(Bytes::from(records)))])]);
        let metadata = MetadataResponse::default()
            .with_brokers(vec![
                m::MetadataResponseBroker::default().with_host(name("h"))
            ])
            .with_topics(vec![m::MetadataResponseTopic::default()
                .with_name(Some(TopicName(name("t"))))
                .with_partitions(vec![
                    m::MetadataResponsePartition::default().with_replica_nodes(vec![BrokerId(1)])
                ])]);
        let mut out = Vec::new();
        let mut add = |key: ApiKey, encode: &dyn Fn(&mut BytesMut, i16) -> bool| {
            for (pick, &(k, version)) in response_choices().iter().enumerate() {
                let mut body = BytesMut::new();
                if k == key as i16 && encode(&mut body, version) {
                    out.push((pick as i16, body.to_vec()));
                }
            }
        };
        fn ok<T: Encodable>(value: &T, body: &mut BytesMut, version: i16) -> bool {
            value.encode(body, version).is_ok()
        }
        add(ApiKey::Fetch, &|b, v| ok(&fetch, b, v));
        add(ApiKey::Metadata, &|b, v| ok(&metadata, b, v));
        add(ApiKey::ApiVersions, &|b, v| {
            ok(&ApiVersionsResponse::default(), b, v)
        });
        add(ApiKey::ListOffsets, &|b, v| {
            ok(&ListOffsetsResponse::default(), b, v)
        });
        add(ApiKey::FindCoordinator, &|b, v| {
            ok(&FindCoordinatorResponse::default(), b, v)
        });
        add(ApiKey::JoinGroup, &|b, v| {
            ok(&JoinGroupResponse::default(), b, v)
        });
        add(ApiKey::SyncGroup, &|b, v| {
            ok(&SyncGroupResponse::default(), b, v)
        });
        add(ApiKey::Heartbeat, &|b, v| {
            ok(&HeartbeatResponse::default(), b, v)
        });
        add(ApiKey::LeaveGroup, &|b, v| {
            ok(&LeaveGroupResponse::default(), b, v)
        });
        add(ApiKey::OffsetFetch, &|b, v| {
            ok(&OffsetFetchResponse::default(), b, v)
        });
        add(ApiKey::OffsetCommit, &|b, v| {
            ok(&OffsetCommitResponse::default(), b, v)
        });
        add(ApiKey::ConsumerGroupHeartbeat, &|b, v| {
            ok(&ConsumerGroupHeartbeatResponse::default(), b, v)
        });
        add(ApiKey::SaslHandshake, &|b, v| {
            ok(&SaslHandshakeResponse::default(), b, v)
        });
        add(ApiKey::SaslAuthenticate, &|b, v| {
            ok(&SaslAuthenticateResponse::default(), b, v)
        });
        add(ApiKey::Produce, &|b, v| {
            ok(&ProduceResponse::default(), b, v)
        });
        add(ApiKey::InitProducerId, &|b, v| {
            ok(&InitProducerIdResponse::default(), b, v)
        });
        let (create_topics, describe_configs, create_partitions) = admin_seeds();
        add(ApiKey::CreateTopics, &|b, v| ok(&create_topics, b, v));
        add(ApiKey::DescribeConfigs, &|b, v| ok(&describe_configs, b, v));
        add(ApiKey::CreatePartitions, &|b, v| {
            ok(&create_partitions, b, v)
        });
        out
    }

    /// Populated answers of the admin calls: a topic created with its configs, a topic's
    /// configs with a synonym, a refused partition count.
    fn admin_seeds() -> (
        CreateTopicsResponse,
        DescribeConfigsResponse,
        CreatePartitionsResponse,
    ) {
        use kafka_protocol::messages::{
            create_partitions_response as p, create_topics_response as c,
            describe_configs_response as d,
        };
        let created =
            CreateTopicsResponse::default().with_topics(vec![c::CreatableTopicResult::default()
                .with_name(TopicName(name("t")))
                .with_num_partitions(3)
                .with_configs(Some(vec![c::CreatableTopicConfigs::default()
                    .with_name(name("cleanup.policy"))
                    .with_value(Some(name("compact")))]))]);
        let configs = DescribeConfigsResponse::default().with_results(vec![
            d::DescribeConfigsResult::default()
                .with_resource_type(2)
                .with_resource_name(name("t"))
                .with_configs(vec![d::DescribeConfigsResourceResult::default()
                    .with_name(name("retention.ms"))
                    .with_value(Some(name("1000")))
                    .with_config_source(1)
                    .with_synonyms(vec![
                        d::DescribeConfigsSynonym::default().with_name(name("log.retention.ms"))
                    ])]),
        ]);
        let partitions = CreatePartitionsResponse::default().with_results(vec![
            p::CreatePartitionsTopicResult::default()
                .with_name(TopicName(name("t")))
                .with_error_code(37)
                .with_error_message(Some(name("Topic already has 3 partitions."))),
        ]);
        (created, configs, partitions)
    }

    /// Every seed decodes through the fuzz entry point, and a Fetch seed reads as its
    /// session's first partition with the batches whole. With `KREC_FUZZ_CORPUS` set, writes
    /// the seeds there as `responses/` and `fetch_response/` corpora (see `crates/client/fuzz/README.md`).
    #[test]
    fn seed_responses_decode() {
        let choices = response_choices();
        assert!(choices.len() <= 256, "byte 0 reaches every choice");
        let seeds = seeds();
        let corpus = std::env::var_os("KREC_FUZZ_CORPUS").map(std::path::PathBuf::from);
        for (i, (pick, body)) in seeds.iter().enumerate() {
            let (key, version) = choices[*pick as usize];
            decode_response(key, version, Bytes::from(body.clone()))
                .unwrap_or_else(|e| panic!("API {key} v{version}: {e}"));
            let mut input = vec![*pick as u8];
            input.extend_from_slice(body);
            if key == ApiKey::Fetch as i16 {
                let answer = read_fetch(version, Bytes::from(body.clone()), false).unwrap();
                let first = &answer.partitions[0];
                assert_eq!((&*first.topic, first.partition, first.entry), ("t", 0, 0));
                let scan = first.scan.unwrap();
                assert_eq!(scan.complete_bytes, first.records.len());
                if let Some(dir) = &corpus {
                    let pick =
                        version - <FetchRequest as kafka_protocol::protocol::Message>::VERSIONS.min;
                    let fetch_input = [&[pick as u8][..], body].concat();
                    write_seed(&dir.join("fetch_response"), i, &fetch_input);
                }
            }
            if let Some(dir) = &corpus {
                write_seed(&dir.join("responses"), i, &input);
            }
        }
    }

    /// With its high bit, byte 0 of the fuzz input reads the answer to an incremental
    /// request: an empty one leaves every partition unchanged, as in the fetch loop.
    #[test]
    fn an_empty_incremental_answer_leaves_every_partition_unchanged() {
        let mut body = BytesMut::new();
        FetchResponse::default()
            .with_session_id(1)
            .encode(&mut body, 12)
            .unwrap();
        let answer = read_fetch(12, body.freeze(), true).unwrap();
        assert!(answer.partitions.is_empty() && !answer.mismatched);
        assert_eq!(answer.unchanged, [0, 1, 2, 3]);
    }

    fn write_seed(dir: &std::path::Path, i: usize, input: &[u8]) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(format!("seed-{i}")), input).unwrap();
    }

    /// The fuzz corpus's seed exchange (16 iterations; signature from Python's hashlib):
    /// the wrapper reaches a verified end, so the fuzzer can too.
    #[test]
    fn seed_exchange_completes() {
        let outcome = scram_exchange(
            true,
            b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=ZnV6ei1zYWx0,i=16",
            b"v=VxIIxTdY3tJwLz3/jRIx8hjPi+0DSCGo7CpuH1uWa23rB0dqmxjsqeUaEQOWBrGaWuvQ3ssvRe3I/KRgeuCrCg==",
        );
        assert!(outcome.complete, "{outcome:?}");
        assert_eq!(
            jaas("M required k='v';"),
            Ok((
                "M".into(),
                "required".into(),
                vec![("k".into(), "v".into())]
            ))
        );
        assert_eq!(properties(b"k=v"), Ok(vec![("k".into(), "v".into(), 1)]));
    }
}
