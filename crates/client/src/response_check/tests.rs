use bytes::BytesMut;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};

use super::{check, known_versions};

fn s(text: &'static str) -> StrBytes {
    StrBytes::from_static_str(text)
}

/// Encodes each of `responses` at every version kafka-protocol speaks that it fits (some
/// fields exist only in some versions; every version must be covered): each encoding must be
/// walked exactly to its end, and every cut of it refused.
fn walks_every_version<T: Encodable + kafka_protocol::protocol::Message>(
    api: ApiKey,
    responses: &[T],
) {
    let key = api as i16;
    assert_eq!(
        known_versions(key),
        Some((T::VERSIONS.min, T::VERSIONS.max)),
        "{api:?}: the layouts cover exactly the versions kafka-protocol decodes"
    );
    for version in T::VERSIONS.min..=T::VERSIONS.max {
        let mut covered = false;
        for response in responses {
            let mut body = BytesMut::new();
            if response.encode(&mut body, version).is_err() {
                continue;
            }
            covered = true;
            assert_eq!(
                check(key, version, &body),
                Ok(body.len()),
                "{api:?} v{version}"
            );
            body.extend_from_slice(b"trailing");
            assert_eq!(check(key, version, &body), Ok(body.len() - 8));
            for cut in 0..body.len() - 8 {
                assert!(
                    check(key, version, &body[..cut]).is_err(),
                    "{api:?} v{version} cut at {cut}"
                );
            }
        }
        assert!(covered, "{api:?} v{version}: no sample encodes");
    }
}

#[test]
fn api_versions_layout() {
    let key = api_versions_response::ApiVersion::default()
        .with_api_key(1)
        .with_max_version(17);
    let response = ApiVersionsResponse::default()
        .with_api_keys(vec![key.clone(), key])
        .with_throttle_time_ms(5)
        .with_supported_features(vec![api_versions_response::SupportedFeatureKey::default()
            .with_name(s("kraft.version"))
            .with_max_version(1)])
        .with_finalized_features_epoch(7)
        .with_finalized_features(vec![
            api_versions_response::FinalizedFeatureKey::default().with_name(s("metadata.version"))
        ])
        .with_zk_migration_ready(true);
    walks_every_version(ApiKey::ApiVersions, &[response]);
}

#[test]
fn metadata_layout() {
    use metadata_response::*;
    let partition = MetadataResponsePartition::default()
        .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
        .with_isr_nodes(vec![BrokerId(1)])
        .with_offline_replicas(vec![BrokerId(3)]);
    let response = MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_host(s("h"))
            .with_rack(Some(s("r")))])
        .with_cluster_id(Some(s("c")))
        .with_topics(vec![MetadataResponseTopic::default()
            .with_name(Some(TopicName(s("t"))))
            .with_partitions(vec![partition.clone(), partition])]);
    walks_every_version(ApiKey::Metadata, &[response]);
}

#[test]
fn list_offsets_layout() {
    use list_offsets_response::*;
    let response =
        ListOffsetsResponse::default().with_topics(vec![ListOffsetsTopicResponse::default()
            .with_name(TopicName(s("t")))
            .with_partitions(vec![ListOffsetsPartitionResponse::default().with_offset(9)])]);
    walks_every_version(ApiKey::ListOffsets, &[response]);
}

#[test]
fn fetch_layout() {
    use fetch_response::*;
    let partition = PartitionData::default()
        .with_aborted_transactions(Some(vec![AbortedTransaction::default()]))
        .with_records(Some(bytes::Bytes::from_static(b"records")))
        .with_diverging_epoch(EpochEndOffset::default().with_epoch(3))
        .with_current_leader(LeaderIdAndEpoch::default().with_leader_epoch(4))
        .with_snapshot_id(SnapshotId::default().with_epoch(5));
    let response = FetchResponse::default()
        .with_responses(vec![FetchableTopicResponse::default()
            .with_topic(TopicName(s("t")))
            .with_partitions(vec![partition.clone(), partition])])
        .with_node_endpoints(vec![NodeEndpoint::default()
            .with_host(s("h"))
            .with_rack(Some(s("r")))]);
    walks_every_version(ApiKey::Fetch, &[response]);
}

#[test]
fn find_coordinator_layout() {
    let batched = FindCoordinatorResponse::default().with_coordinators(vec![
        find_coordinator_response::Coordinator::default()
            .with_key(s("g"))
            .with_host(s("h")),
    ]);
    let single = FindCoordinatorResponse::default()
        .with_error_message(Some(s("m")))
        .with_host(s("h"));
    let v0 = FindCoordinatorResponse::default().with_host(s("h"));
    walks_every_version(ApiKey::FindCoordinator, &[batched, single, v0]);
}

#[test]
fn group_layouts() {
    let join = JoinGroupResponse::default()
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(Some(s("range")))
        .with_leader(s("l"))
        .with_member_id(s("m"))
        .with_members(vec![join_group_response::JoinGroupResponseMember::default(
        )
        .with_member_id(s("m"))
        .with_group_instance_id(Some(s("i")))
        .with_metadata(bytes::Bytes::from_static(b"meta"))]);
    let old_join = join.clone().with_protocol_type(None).with_members(vec![
        join_group_response::JoinGroupResponseMember::default().with_member_id(s("m")),
    ]);
    walks_every_version(ApiKey::JoinGroup, &[join, old_join]);
    let sync = SyncGroupResponse::default()
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(Some(s("range")))
        .with_assignment(bytes::Bytes::from_static(b"assignment"));
    let old_sync = sync
        .clone()
        .with_protocol_type(None)
        .with_protocol_name(None);
    walks_every_version(ApiKey::SyncGroup, &[sync, old_sync]);
    walks_every_version(
        ApiKey::Heartbeat,
        &[HeartbeatResponse::default().with_error_code(27)],
    );
    let leave = LeaveGroupResponse::default().with_members(vec![
        leave_group_response::MemberResponse::default()
            .with_member_id(s("m"))
            .with_group_instance_id(Some(s("i"))),
    ]);
    walks_every_version(ApiKey::LeaveGroup, &[leave, LeaveGroupResponse::default()]);
}

#[test]
fn offset_layouts() {
    use offset_fetch_response::*;
    let old_topic = OffsetFetchResponseTopic::default()
        .with_name(TopicName(s("t")))
        .with_partitions(vec![OffsetFetchResponsePartition::default()
            .with_committed_offset(4)
            .with_metadata(Some(s("md")))]);
    let group = OffsetFetchResponseGroup::default()
        .with_group_id(GroupId(s("g")))
        .with_topics(vec![OffsetFetchResponseTopics::default()
            .with_name(TopicName(s("t")))
            .with_partitions(vec![
                OffsetFetchResponsePartitions::default().with_metadata(Some(s("md")))
            ])]);
    let fetch = OffsetFetchResponse::default().with_topics(vec![old_topic.clone(), old_topic]);
    let groups = OffsetFetchResponse::default().with_groups(vec![group]);
    walks_every_version(ApiKey::OffsetFetch, &[fetch, groups]);
    use offset_commit_response::*;
    let commit =
        OffsetCommitResponse::default().with_topics(vec![OffsetCommitResponseTopic::default()
            .with_name(TopicName(s("t")))
            .with_partitions(vec![
                OffsetCommitResponsePartition::default().with_error_code(3)
            ])]);
    let by_id = commit
        .clone()
        .with_topics(vec![OffsetCommitResponseTopic::default()
            .with_topic_id(uuid::Uuid::from_u128(7))
            .with_partitions(vec![OffsetCommitResponsePartition::default()])]);
    walks_every_version(ApiKey::OffsetCommit, &[commit, by_id]);
}

#[test]
fn consumer_group_heartbeat_and_sasl_layouts() {
    use consumer_group_heartbeat_response::*;
    let response = ConsumerGroupHeartbeatResponse::default()
        .with_error_message(Some(s("e")))
        .with_member_id(Some(s("m")))
        .with_assignment(Some(Assignment::default().with_topic_partitions(vec![
            TopicPartitions::default().with_partitions(vec![0, 1, 2]),
        ])));
    let unassigned = response.clone().with_assignment(None);
    walks_every_version(ApiKey::ConsumerGroupHeartbeat, &[response, unassigned]);
    let handshake =
        SaslHandshakeResponse::default().with_mechanisms(vec![s("PLAIN"), s("SCRAM-SHA-512")]);
    walks_every_version(ApiKey::SaslHandshake, &[handshake]);
    let authenticate = SaslAuthenticateResponse::default()
        .with_error_message(Some(s("e")))
        .with_auth_bytes(bytes::Bytes::from_static(b"v=proof"))
        .with_session_lifetime_ms(1000);
    walks_every_version(ApiKey::SaslAuthenticate, &[authenticate]);
}

#[test]
fn group_listing_and_description_layouts() {
    let listed = ListGroupsResponse::default().with_groups(vec![
        list_groups_response::ListedGroup::default()
            .with_group_id(GroupId(s("g")))
            .with_protocol_type(s("consumer"))
            .with_group_state(s("Stable"))
            .with_group_type(s("classic"));
        2
    ]);
    walks_every_version(ApiKey::ListGroups, &[listed]);
    use describe_groups_response::{DescribedGroup, DescribedGroupMember};
    let member = DescribedGroupMember::default()
        .with_member_id(s("m"))
        .with_client_id(s("c"))
        .with_client_host(s("/h"))
        .with_member_metadata(bytes::Bytes::from_static(b"meta"))
        .with_member_assignment(bytes::Bytes::from_static(b"assigned"));
    let classic = DescribeGroupsResponse::default().with_groups(vec![DescribedGroup::default()
        .with_group_id(GroupId(s("g")))
        .with_group_state(s("Stable"))
        .with_protocol_type(s("consumer"))
        .with_protocol_data(s("range"))
        .with_members(vec![
            member.clone(),
            member.with_group_instance_id(Some(s("i"))),
        ])]);
    walks_every_version(ApiKey::DescribeGroups, &[classic]);
}

#[test]
fn consumer_and_share_group_layouts() {
    use consumer_group_describe_response as cgd;
    let owned =
        cgd::Assignment::default().with_topic_partitions(vec![cgd::TopicPartitions::default()
            .with_topic_name(TopicName(s("t")))
            .with_partitions(vec![0, 1])]);
    let member = cgd::Member::default()
        .with_member_id(s("m"))
        .with_instance_id(Some(s("i")))
        .with_subscribed_topic_names(vec![TopicName(s("t"))])
        .with_subscribed_topic_regex(Some(s("t.*")))
        .with_assignment(owned.clone())
        .with_target_assignment(owned)
        .with_member_type(1);
    let consumer =
        ConsumerGroupDescribeResponse::default().with_groups(vec![cgd::DescribedGroup::default()
            .with_error_message(Some(s("e")))
            .with_group_id(GroupId(s("g")))
            .with_assignor_name(s("uniform"))
            .with_members(vec![member.clone(), member])]);
    walks_every_version(ApiKey::ConsumerGroupDescribe, &[consumer]);
    use share_group_describe_response as sgd;
    let member = sgd::Member::default()
        .with_member_id(s("m"))
        .with_rack_id(Some(s("r")))
        .with_subscribed_topic_names(vec![TopicName(s("t"))])
        .with_assignment(sgd::Assignment::default().with_topic_partitions(vec![
            sgd::TopicPartitions::default().with_partitions(vec![2]),
        ]));
    let share =
        ShareGroupDescribeResponse::default().with_groups(vec![sgd::DescribedGroup::default()
            .with_group_id(GroupId(s("g")))
            .with_members(vec![member])]);
    walks_every_version(ApiKey::ShareGroupDescribe, &[share]);
    use describe_share_group_offsets_response as dso;
    let partition = dso::DescribeShareGroupOffsetsResponsePartition::default()
        .with_start_offset(5)
        .with_error_message(Some(s("e")));
    let offsets = DescribeShareGroupOffsetsResponse::default().with_groups(vec![
        dso::DescribeShareGroupOffsetsResponseGroup::default()
            .with_group_id(GroupId(s("g")))
            .with_topics(vec![dso::DescribeShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(s("t")))
                .with_partitions(vec![partition.clone(), partition])]),
    ]);
    walks_every_version(ApiKey::DescribeShareGroupOffsets, &[offsets]);
}

#[test]
fn share_group_layouts() {
    use share_fetch_response as sf;
    let endpoint = sf::NodeEndpoint::default()
        .with_host(s("h"))
        .with_rack(Some(s("r")));
    let fetch = ShareFetchResponse::default()
        .with_error_message(Some(s("e")))
        .with_responses(vec![sf::ShareFetchableTopicResponse::default()
            .with_partitions(vec![sf::PartitionData::default()
                .with_error_message(Some(s("e")))
                .with_acknowledge_error_message(Some(s("a")))
                .with_records(Some(bytes::Bytes::from_static(b"records")))
                .with_acquired_records(vec![sf::AcquiredRecords::default(); 2])])])
        .with_node_endpoints(vec![endpoint]);
    walks_every_version(ApiKey::ShareFetch, &[fetch]);
    use share_acknowledge_response as sa;
    let acknowledge = ShareAcknowledgeResponse::default()
        .with_responses(vec![sa::ShareAcknowledgeTopicResponse::default()
            .with_partitions(vec![
                sa::PartitionData::default().with_error_message(Some(s("e")))
            ])])
        .with_node_endpoints(vec![sa::NodeEndpoint::default().with_host(s("h"))]);
    walks_every_version(ApiKey::ShareAcknowledge, &[acknowledge]);
    use share_group_heartbeat_response as sh;
    let heartbeat = ShareGroupHeartbeatResponse::default()
        .with_member_id(Some(s("m")))
        .with_assignment(Some(sh::Assignment::default().with_topic_partitions(vec![
            sh::TopicPartitions::default().with_partitions(vec![0, 1]),
        ])));
    walks_every_version(ApiKey::ShareGroupHeartbeat, &[heartbeat]);
}

#[test]
fn a_count_beyond_the_bytes_left_is_refused_before_decoding() {
    // Metadata v12: throttle, then a compact array of brokers claiming u32::MAX - 1 entries.
    let body = [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0];
    assert_eq!(
        check(ApiKey::Metadata as i16, 12, &body),
        Err("array of 4294967294 elements at byte 4 with 1 bytes left".to_owned())
    );
    // Metadata v8 (non-flexible): an i32 count, and a negative one.
    let body = [0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0];
    assert_eq!(
        check(ApiKey::Metadata as i16, 8, &body),
        Err("array of 2147483647 elements at byte 4 with 1 bytes left".to_owned())
    );
    let body = [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe];
    assert_eq!(
        check(ApiKey::Metadata as i16, 8, &body),
        Err("negative length -2 at byte 4".to_owned())
    );
}

#[test]
fn a_tag_claiming_many_fields_is_refused() {
    // Heartbeat v4: throttle, error, then 2^21 tagged fields in four bytes.
    let body = [0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x01];
    let error = check(ApiKey::Heartbeat as i16, 4, &body).unwrap_err();
    assert!(error.starts_with("2097152 tagged fields"), "{error}");
}

#[test]
fn producer_layouts() {
    use produce_response as pr;
    let partition = |full: bool| {
        let plain = pr::PartitionProduceResponse::default()
            .with_index(2)
            .with_base_offset(7);
        if !full {
            return plain;
        }
        plain
            .with_log_start_offset(3)
            .with_error_message(Some(s("e")))
            .with_record_errors(vec![pr::BatchIndexAndErrorMessage::default()
                .with_batch_index(1)
                .with_batch_index_error_message(Some(s("bad")))])
            .with_current_leader(
                pr::LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(4))
                    .with_leader_epoch(9),
            )
    };
    let by_name = |full: bool| {
        ProduceResponse::default().with_responses(vec![pr::TopicProduceResponse::default()
            .with_name(TopicName(s("t")))
            .with_partition_responses(vec![partition(full), partition(false)])])
    };
    let by_id = ProduceResponse::default()
        .with_responses(vec![pr::TopicProduceResponse::default()
            .with_topic_id(uuid::Uuid::from_u128(5))
            .with_partition_responses(vec![partition(true)])])
        .with_node_endpoints(vec![pr::NodeEndpoint::default().with_host(s("h"))]);
    walks_every_version(ApiKey::Produce, &[by_name(false), by_name(true), by_id]);
    let init = InitProducerIdResponse::default()
        .with_producer_id(ProducerId(42))
        .with_producer_epoch(3);
    walks_every_version(ApiKey::InitProducerId, &[init]);
}

#[test]
fn transaction_layouts() {
    let partition = |index| {
        add_partitions_to_txn_response::AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(index)
            .with_partition_error_code(51)
    };
    let topic = add_partitions_to_txn_response::AddPartitionsToTxnTopicResult::default()
        .with_name(TopicName(s("t")))
        .with_results_by_partition(vec![partition(0), partition(1)]);
    // The client's versions (up to 3) and the brokers' (4 on) share no field but the first.
    let by_topic = AddPartitionsToTxnResponse::default()
        .with_throttle_time_ms(3)
        .with_results_by_topic_v3_and_below(vec![topic.clone(), topic.clone()]);
    let by_transaction = AddPartitionsToTxnResponse::default()
        .with_error_code(5)
        .with_results_by_transaction(vec![
            add_partitions_to_txn_response::AddPartitionsToTxnResult::default()
                .with_transactional_id(TransactionalId(s("x")))
                .with_topic_results(vec![topic]),
        ]);
    walks_every_version(ApiKey::AddPartitionsToTxn, &[by_topic, by_transaction]);
    let add_offsets = AddOffsetsToTxnResponse::default().with_error_code(47);
    walks_every_version(ApiKey::AddOffsetsToTxn, &[add_offsets]);
    let end = EndTxnResponse::default()
        .with_error_code(90)
        .with_producer_id(ProducerId(7))
        .with_producer_epoch(2);
    walks_every_version(ApiKey::EndTxn, &[end]);
    let commit_partition = txn_offset_commit_response::TxnOffsetCommitResponsePartition::default()
        .with_partition_index(4)
        .with_error_code(22);
    let commit = TxnOffsetCommitResponse::default().with_topics(vec![
        txn_offset_commit_response::TxnOffsetCommitResponseTopic::default()
            .with_name(TopicName(s("t")))
            .with_partitions(vec![commit_partition.clone(), commit_partition]),
    ]);
    walks_every_version(ApiKey::TxnOffsetCommit, &[commit]);
}

#[test]
fn admin_layouts() {
    use create_topics_response::*;
    let created = CreatableTopicResult::default()
        .with_name(TopicName(s("t")))
        .with_error_message(Some(s("exists")))
        .with_topic_config_error_code(29)
        .with_configs(Some(vec![CreatableTopicConfigs::default()
            .with_name(s("cleanup.policy"))
            .with_value(Some(s("compact")))]));
    let unconfigured = created.clone().with_configs(None);
    let topics = CreateTopicsResponse::default().with_topics(vec![created, unconfigured]);
    walks_every_version(ApiKey::CreateTopics, &[topics]);
    use describe_configs_response::*;
    let entry = DescribeConfigsResourceResult::default()
        .with_name(s("retention.ms"))
        .with_value(Some(s("1000")))
        .with_config_source(1)
        .with_synonyms(vec![DescribeConfigsSynonym::default()
            .with_name(s("log.retention.ms"))
            .with_value(None)])
        .with_documentation(Some(s("how long")));
    let undocumented = entry.clone().with_documentation(None);
    let resource = DescribeConfigsResult::default()
        .with_error_message(Some(s("e")))
        .with_resource_type(2)
        .with_resource_name(s("t"))
        .with_configs(vec![entry, undocumented]);
    let configs = DescribeConfigsResponse::default().with_results(vec![resource.clone(), resource]);
    walks_every_version(ApiKey::DescribeConfigs, &[configs]);
    use create_partitions_response::*;
    let result = CreatePartitionsTopicResult::default()
        .with_name(TopicName(s("t")))
        .with_error_code(37)
        .with_error_message(Some(s("too few")));
    let partitions = CreatePartitionsResponse::default().with_results(vec![result.clone(), result]);
    walks_every_version(ApiKey::CreatePartitions, &[partitions]);
}
