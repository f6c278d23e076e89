//! krec-client: the Kafka wire client under `krec-consumer`.
//!
//! One [`Connection`] per broker, built from [`ConnectionSettings`] and then used; nothing
//! above [`connection`] knows how its bytes travel. Messages are encoded and decoded by the
//! `kafka-protocol` crate (its record codecs off): record bytes stay opaque `Bytes` slices of
//! the response frame, decoded by krec-batch elsewhere.
//!
//! Layout, from the bottom up:
//! - `frame_buffers`, `receive_wait`: the reused response buffers and the socket's wake-up mark.
//! - [`versions`]: ApiVersions and the version each request is sent at.
//! - [`security`]: [`SecurityConfig`] (from typed fields or client properties), the rustls
//!   configuration, secrets ([`Secret`]), and the JAAS and properties-file parsers.
//! - [`sasl`]: the SASL mechanisms, one module each behind the [`sasl::SaslMechanism`] seam,
//!   and OAUTHBEARER's token sources behind [`sasl::TokenProvider`]. A new mechanism is one
//!   module and one line in its registration table.
//!   [`sasl::aws_msk_iam`] (Amazon MSK's IAM, both forms) needs the cargo feature
//!   `aws-msk-iam`, which brings AWS's credential chain and signer.
//! - `transport`, `authenticate`: plain TCP or TLS under a connection; the SASL exchange and
//!   the session lifetime that schedules re-authentication.
//! - `response_check`: every length and count of a response body checked against the bytes
//!   left, by the message's layout, before kafka-protocol decodes it.
//! - [`connection`]: framing, request/response matching (one at a time, or pipelined with
//!   cancel-safe reads), timeouts, one broker.
//! - [`metadata`], [`offsets`], [`fetch`], [`group`]: the requests, each in its own module;
//!   [`fetch_session`] keeps a broker's KIP-227 fetch session and builds its requests.
//! - [`produce`], [`producer_id`]: the write path's requests: Produce (one finished batch per
//!   partition, many partitions and topics per request, several in flight per connection,
//!   its answers typed per partition) and
//!   InitProducerId (the idempotent or transactional producer's id and epoch).
//! - [`transaction`]: a transactional producer's requests (AddPartitionsToTxn,
//!   AddOffsetsToTxn, TxnOffsetCommit, EndTxn), whether a broker offers Transactions v2
//!   (KIP-890), and what each error means for the producer.
//! - [`describe`]: the cluster as an operator asks about it: racks, replicas, ISR, errors.
//! - [`admin`]: what a copy asks of its target cluster: CreateTopics (created, already there,
//!   or refused in the broker's words), DescribeConfigs of topics (each value and its source),
//!   CreatePartitions; NOT_CONTROLLER retried as Java's admin client does.
//! - [`share`]: share groups (KIP-932): ShareGroupHeartbeat, ShareFetch (records as a slice
//!   of the frame, with the ranges acquired for the member), ShareAcknowledge.
//! - [`groups`], [`group_lag`]: groups as an operator asks about them: every group with its
//!   type and state, one group's members, assignor and per-partition lag.
//! - [`partitioner`]: where a producer sends a record, as the Java client and librdkafka
//!   do (murmur2 or CRC32 of the key, KIP-794's uniform sticky partition otherwise), shared by
//!   krec-consumer (to find a key) and krec-producer (to place one).
//! - [`error`]: the crate's one error enum, naming the broker and request.
//! - [`wire`]: the kafka-protocol types the raw calls above show.
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec_client::Error> {
//! use krec_client::metadata::MetadataClient;
//! use krec_client::ConnectionSettings;
//!
//! let settings = ConnectionSettings::default();
//! let mut client = MetadataClient::new(vec!["127.0.0.1:9092".into()], settings);
//! let cluster = client.fetch(&["events".to_owned()]).await?;
//! for partition in &cluster.topic("events")?.partitions {
//!     let leader = cluster.brokers.get(&partition.leader);
//!     println!("partition {}: leader {leader:?}", partition.partition);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Response splitting is a pure function of the bytes, so it runs without a broker: here on a
//! batch file written by the Java producer, cut short as a fetch response may cut it.
//!
//! ```
//! use krec_client::fetch::scan_batches;
//!
//! let records = std::fs::read("../../tests/data/java-lz4.bin").unwrap();
//! let whole = scan_batches(&records).unwrap();
//! assert_eq!(whole.complete_bytes, records.len());
//! let cut = scan_batches(&records[..records.len() - 1]).unwrap();
//! assert_eq!(cut.batches, whole.batches - 1);
//! assert!(cut.partial.is_some(), "the cut batch is where the next fetch starts");
//! ```
//!
//! # Public surface
//!
//! Everything public is named here (constants by their module); `tests/public_surface.rs`
//! fails when an item becomes public without a line here and in `public-surface.txt` (the
//! listing of every public item and member, with its signature).
//!
//! - Connecting, in [`connection`] and [`security`]: [`Connection`], [`ConnectionSettings`],
//!   [`connection::PendingResponse`] (a pipelined request's token), [`SecurityConfig`] with [`SecurityProtocol`], [`SaslConfig`], [`ScramMechanism`],
//!   [`TlsConfig`], [`security::Pem`] and [`Secret`] (in [`security::config`]); client properties
//!   in [`security::properties`] ([`security::properties::parse`],
//!   [`security::properties::Property`], [`security::properties::PropertiesFault`],
//!   [`security::properties::LineProblem`]); [`POOLED_FRAME_BUFFERS`] in the crate root.
//! - The client properties loader the consumer and the producer share, in
//!   [`client_properties`]: [`client_properties::apply_properties`] over a
//!   [`client_properties::PropertyTarget`], [`client_properties::Property`],
//!   [`client_properties::PropertyError`], [`client_properties::Setting`],
//!   [`client_properties::SecurityProperties`], [`client_properties::CommonKeys`],
//!   [`client_properties::parse_bootstrap`], `client_properties::FOREIGN_PREFIXES`.
//! - Authenticating, in [`sasl`]: the seams [`sasl::SaslMechanism`], [`sasl::SaslExchange`] and
//!   [`sasl::TokenProvider`] (with [`sasl::BearerToken`], [`sasl::BoxError`],
//!   [`sasl::BoxFuture`]); the mechanisms [`sasl::Plain`], [`sasl::Scram`], `sasl::Gssapi`
//!   (feature `gssapi`) and, with feature `aws-msk-iam`, [`sasl::aws_msk_iam`]
//!   (`sasl::aws_msk_iam::AwsMskIam`, `sasl::aws_msk_iam::MskIamTokens`,
//!   `sasl::aws_msk_iam::Settings`, `sasl::aws_msk_iam::AwsCredentials`,
//!   `sasl::aws_msk_iam::SignedToken`, `sasl::aws_msk_iam::native_payload`,
//!   `sasl::aws_msk_iam::oauthbearer_token`; in `sasl::aws_msk_iam::credentials`
//!   `sasl::aws_msk_iam::credentials::CredentialChain`,
//!   `sasl::aws_msk_iam::credentials::CredentialSource`,
//!   `sasl::aws_msk_iam::credentials::CredentialsFailure`; in `sasl::aws_msk_iam::region`
//!   `sasl::aws_msk_iam::region::region_from_host`; in `sasl::aws_msk_iam::sign`
//!   `sasl::aws_msk_iam::sign::expiry`).
//! - Asking, in [`metadata`], [`offsets`] and [`describe`]: [`metadata::MetadataClient`]
//!   ([`metadata::ClusterMetadata`], [`metadata::TopicMetadata`], [`metadata::PartitionMetadata`],
//!   [`metadata::fetch_metadata`], [`metadata::fetch_selected`] with [`metadata::TopicSelection`]);
//!   [`offsets::list_offsets`] ([`offsets::OffsetQuery`], [`offsets::ListedOffset`]);
//!   [`describe::describe_cluster`] ([`describe::ClusterDescription`],
//!   [`describe::BrokerDescription`], [`describe::TopicDescription`],
//!   [`describe::PartitionDescription`]).
//! - A group member's calls, in [`group`]: [`group::find_coordinator`], [`group::join_group`]
//!   ([`group::JoinRequest`]), [`group::sync_group`], [`group::heartbeat`], [`group::leave_group`],
//!   [`group::offset_fetch`] ([`group::CommittedOffset`]), [`group::fetch_committed`]
//!   ([`group::CommittedPosition`]: offset, leader epoch and metadata, stable offsets only when
//!   asked, [`Error::UnstableOffsetCommit`] while a transaction commits), [`group::offset_commit`]
//!   ([`group::Committer`]), [`group::consumer_group_heartbeat`] ([`group::ConsumerHeartbeat`]),
//!   and the codes in [`group::group_codes`] ([`group::group_codes::is_membership_change`],
//!   [`group::group_codes::needs_rediscovery`]).
//! - Groups as an operator sees them, in [`groups`]: [`groups::list_groups`]
//!   ([`groups::GroupFilter`], [`groups::GroupList`], [`groups::GroupListing`]),
//!   [`groups::describe_group`] ([`groups::GroupDescription`], [`groups::GroupMember`], and in
//!   [`group_lag`] [`group_lag::PartitionLag`]).
//! - Fetching, in [`fetch_session`] and [`fetch`]: [`fetch_session::FetchSession`]
//!   ([`fetch_session::SessionPartition`], [`fetch_session::SessionAnswer`],
//!   [`fetch_session::next_epoch`]) with [`fetch::FetchParams`] and [`fetch::FetchTarget`], its
//!   answers as [`fetch::PartitionResponse`]s ([`fetch::AbortedTransaction`]);
//!   [`fetch::scan_batches`] splits their record bytes ([`fetch::Scan`], [`fetch::PartialBatch`],
//!   [`fetch::ScanError`]).
//! - Producing, in [`produce`] and [`producer_id`]: [`produce::produce`], or pipelined
//!   [`produce::send_produce`] (in a transaction [`produce::send_produce_in_transaction`])
//!   and [`produce::ProduceInFlight`]'s answer
//!   ([`produce::ProduceParams`] with [`produce::Acks`], [`produce::ProduceTopic`],
//!   [`produce::ProducePartition`]) and its [`produce::ProduceAnswer`]
//!   ([`produce::PartitionProduced`], [`produce::Appended`], [`produce::ProduceError`] with
//!   [`produce::ProduceErrorKind`], [`produce::RecordError`], [`produce::LeaderHint`]);
//!   [`producer_id::init_producer_id`] ([`producer_id::ProducerIdentity`],
//!   [`producer_id::is_retriable`], and the codes
//!   [`producer_id::COORDINATOR_LOAD_IN_PROGRESS`], [`producer_id::COORDINATOR_NOT_AVAILABLE`],
//!   [`producer_id::NOT_COORDINATOR`], [`producer_id::CONCURRENT_TRANSACTIONS`]);
//!   [`producer_id::init_transactional_producer_id`].
//! - Transactions, in [`transaction`] (the coordinator found with
//!   [`group::find_coordinator_of`] and [`group::CoordinatorType`]):
//!   [`transaction::protocol`] ([`transaction::TransactionProtocol`],
//!   [`transaction::TRANSACTION_VERSION_FEATURE`]), [`transaction::add_partitions_to_txn`],
//!   [`transaction::add_offsets_to_txn`], [`transaction::txn_offset_commit`]
//!   ([`transaction::TxnOffset`]), [`transaction::end_txn`], each for a
//!   [`transaction::TransactionalProducer`], with per-partition answers in
//!   [`transaction::PartitionCodes`]; the classifier [`transaction::classify`] and
//!   [`transaction::classify_error`] ([`transaction::TxnApi`], [`transaction::TxnErrorClass`])
//!   and the codes in [`transaction::txn_codes`].
//! - Administering topics, in [`admin`]: [`admin::create_topics`] ([`admin::NewTopic`],
//!   [`admin::TopicCreation`], [`admin::CreationOutcome`]), [`admin::describe_topic_configs`]
//!   ([`admin::TopicConfigs`], [`admin::ConfigEntry`], [`admin::ConfigSource`]),
//!   [`admin::create_partitions`], and the codes [`admin::NOT_CONTROLLER`] and
//!   [`admin::TOPIC_ALREADY_EXISTS`]; a refusal about one topic is [`Error::TopicRefused`].
//! - Share groups, in [`share`]: [`share::share_group_heartbeat`] ([`share::ShareHeartbeat`],
//!   [`share::ShareHeartbeatAnswer`]), [`share::share_fetch`] ([`share::ShareSessionKey`],
//!   [`share::ShareFetchParams`], [`share::SharePartitionRequest`], [`share::ShareFetchAnswer`],
//!   [`share::SharePartitionResponse`], [`share::AcquiredRange`]), [`share::share_acknowledge`]
//!   ([`share::AcknowledgementRange`], [`share::AcknowledgeType`],
//!   [`share::ShareAcknowledgeAnswer`]), and the codes in [`share::share_codes`]
//!   ([`share::share_codes::is_session_error`]).
//! - The raw wire calls, in [`wire`]: [`wire::ApiRequest`] and the kafka-protocol types they show
//!   ([`wire::Message`], [`wire::Encodable`], [`wire::Decodable`], [`wire::HeaderVersion`],
//!   [`wire::FetchRequest`], [`wire::FetchResponse`], [`wire::JoinGroupResponse`],
//!   [`wire::JoinGroupResponseMember`], [`wire::ConsumerGroupHeartbeatResponse`]).
//! - Partitioning, in [`partitioner`]: [`partitioner::Partitioner`] (a key's partition),
//!   [`partitioner::StickyPartitioner`] with [`partitioner::RandomSource`] and
//!   [`partitioner::SeededRandom`] (records without a key), [`partitioner::Partitioning`] with
//!   [`partitioner::Unkeyed`] (the settings' choice; in [`partitioner::choice`]), the modules
//!   [`partitioner::choice`] and [`partitioner::sticky`].
//! - Helpers: [`TopicPartition`] (the one name of a partition, shared with krec-consumer),
//!   [`Error`] (in [`error`]), [`error_name`], [`codes`] ([`codes::is_fetch_session_error`],
//!   [`codes::needs_metadata_refresh`]); in [`versions`] [`versions::ApiVersions`] and
//!   [`versions::api_name`].
//! - What this build speaks (`krec version -v`): [`versions::SPOKEN`] ([`versions::SpokenApi`]),
//!   [`sasl::mechanisms`], [`sasl::token_methods`], [`security::TLS_PROVIDER`].
//!
//! Internal: framing buffers, transport, authentication, the response checks. `kafka-protocol`
//! types appear only where the raw wire calls need them, and only under one module,
//! [`wire`] (its re-exports and the [`wire::ApiRequest`] trait; its page lists those calls):
//! none in the crate-root re-exports, metadata, offsets, describe, admin, groups, produce,
//! producer_id or fetch's results.
//!
//! How this crate fits into krec (the crates, the hot path, the invariants):
//! `docs/ARCHITECTURE.md` in the repository.
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod admin;
mod authenticate;
pub mod client_properties;
pub mod connection;
pub mod describe;
pub mod error;
pub mod fetch;
pub mod fetch_session;
mod frame_buffers;
pub mod group;
pub mod group_lag;
pub mod groups;
pub mod metadata;
pub mod offsets;
pub mod partitioner;
pub mod produce;
pub mod producer_id;
mod receive_wait;
mod response_check;
pub mod sasl;
pub mod security;
pub mod share;
mod topic_partition;
pub mod transaction;
mod transport;
pub mod versions;
pub mod wire;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

pub use connection::{Connection, ConnectionSettings, POOLED_FRAME_BUFFERS};
pub use error::Error;
pub use security::{
    SaslConfig, ScramMechanism, Secret, SecurityConfig, SecurityProtocol, TlsConfig,
};
pub use topic_partition::TopicPartition;

/// Kafka's name for an error code, for messages (`"NOT_LEADER_OR_FOLLOWER"`, as the broker's
/// logs and Kafka's documentation spell it).
pub fn error_name(code: i16) -> String {
    let Some(error) = kafka_protocol::ResponseError::try_from_code(code) else {
        return format!("unknown error code {code}");
    };
    let camel = format!("{error:?}");
    let mut name = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

/// Kafka error codes this client reacts to by name.
pub mod codes {
    /// OFFSET_OUT_OF_RANGE.
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    /// CORRUPT_MESSAGE.
    pub const CORRUPT_MESSAGE: i16 = 2;
    /// UNKNOWN_TOPIC_OR_PARTITION.
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    /// LEADER_NOT_AVAILABLE.
    pub const LEADER_NOT_AVAILABLE: i16 = 5;
    /// NOT_LEADER_OR_FOLLOWER.
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    /// REPLICA_NOT_AVAILABLE.
    pub const REPLICA_NOT_AVAILABLE: i16 = 9;
    /// KAFKA_STORAGE_ERROR.
    pub const KAFKA_STORAGE_ERROR: i16 = 56;
    /// FENCED_LEADER_EPOCH.
    pub const FENCED_LEADER_EPOCH: i16 = 74;
    /// UNKNOWN_LEADER_EPOCH.
    pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
    /// OFFSET_NOT_AVAILABLE.
    pub const OFFSET_NOT_AVAILABLE: i16 = 78;
    /// UNSUPPORTED_VERSION.
    pub const UNSUPPORTED_VERSION: i16 = 35;
    /// UNKNOWN_TOPIC_ID.
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
    /// INCONSISTENT_TOPIC_ID.
    pub const INCONSISTENT_TOPIC_ID: i16 = 103;
    /// FETCH_SESSION_ID_NOT_FOUND: the broker no longer has the fetch session.
    pub const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
    /// INVALID_FETCH_SESSION_EPOCH: the request's epoch is not the one the broker expects.
    pub const INVALID_FETCH_SESSION_EPOCH: i16 = 71;
    /// FETCH_SESSION_TOPIC_ID_ERROR: the session and the request name topics differently.
    pub const FETCH_SESSION_TOPIC_ID_ERROR: i16 = 106;

    /// Request-wide fetch errors that only say the fetch session must start over.
    pub fn is_fetch_session_error(code: i16) -> bool {
        matches!(
            code,
            FETCH_SESSION_ID_NOT_FOUND | INVALID_FETCH_SESSION_EPOCH | FETCH_SESSION_TOPIC_ID_ERROR
        )
    }

    /// Errors after which the partition's leader must be looked up again before retrying.
    pub fn needs_metadata_refresh(code: i16) -> bool {
        matches!(
            code,
            UNKNOWN_TOPIC_OR_PARTITION
                | LEADER_NOT_AVAILABLE
                | NOT_LEADER_OR_FOLLOWER
                | REPLICA_NOT_AVAILABLE
                | KAFKA_STORAGE_ERROR
                | FENCED_LEADER_EPOCH
                | UNKNOWN_LEADER_EPOCH
                | OFFSET_NOT_AVAILABLE
                | UNKNOWN_TOPIC_ID
                | INCONSISTENT_TOPIC_ID
        )
    }
}
