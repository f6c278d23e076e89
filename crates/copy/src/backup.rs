//! `krec backup`: the pipeline from a cluster to a backup location (a directory or an object
//! store), and the reader of the source's consumer groups the backup keeps beside the data.

use std::collections::BTreeMap;
use std::time::Duration;

use krec_client::connection::Connection;
use krec_client::group::{find_coordinator, offset_fetch};
use krec_client::groups::{list_groups, GroupFilter};
use krec_client::metadata::MetadataClient;
use krec_client::ConnectionSettings;
use krec_consumer::{ConsumerConfig, TopicSubscription};

use crate::backup_sink::BackupSink;
use crate::cluster_source::ClusterSource;
use crate::connect::connect_any;
use crate::pipeline::{Pipeline, PipelineSettings};
use crate::store::Store;
use crate::Error;

/// A backup of a cluster's topics.
pub type Backup = Pipeline<ClusterSource, BackupSink>;

/// What a backup reads, and where it keeps it.
///
/// ```no_run
/// # async fn demo() -> Result<(), krec_copy::Error> {
/// use krec_consumer::{ConsumerConfig, TopicSubscription};
/// use krec_copy::BackupConfig;
///
/// let source = ConsumerConfig::from_properties([("bootstrap.servers", "source:9092")])?;
/// let topics = TopicSubscription::parse(["orders", "^logs-"])?;
/// let backup = BackupConfig::new(source, topics, "s3://bucket/kafka".to_owned())
///     .connect()
///     .await?;
/// let done = backup.run(std::future::pending()).await?;
/// println!("{} records backed up, {} lost", done.records, done.lost_records);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BackupConfig {
    /// The source cluster (read committed whatever it says).
    pub source: ConsumerConfig,
    /// The topics: names and patterns.
    pub topics: TopicSubscription,
    /// A directory, or an object store URL (`s3://bucket/prefix`, `gs://`, `az://`).
    pub location: String,
    /// Keep going as records arrive; otherwise stop once every partition is backed up to the
    /// end it had.
    pub follow: bool,
    /// A segment file is closed before it grows past this many bytes (a larger batch gets a
    /// segment of its own). Every commit also closes the open segments.
    pub segment_bytes: u64,
    /// Pacing and limits: [`BackupConfig::new`] sets the backup's own commit pace.
    pub settings: PipelineSettings,
}

impl BackupConfig {
    /// Segments are closed at this size unless told otherwise.
    pub const DEFAULT_SEGMENT_BYTES: u64 = 128 << 20;

    /// A backup commits (publishes its open segments, then rewrites the manifest) this often:
    /// each commit closes every open segment, so committing more often makes more, smaller
    /// files, and a crash loses at most this much work, read again by the next run.
    pub const COMMIT_INTERVAL: Duration = Duration::from_secs(30);

    /// ... or once this many bytes are staged, which bounds the staging space a backup uses
    /// and the work a crash loses.
    pub const MAX_STAGED_BYTES: u64 = 1 << 30;

    /// A backup of `topics` from the cluster `source` describes into `location`, stopping at
    /// the partitions' ends, with the backup's segment size and commit pace.
    pub fn new(source: ConsumerConfig, topics: TopicSubscription, location: String) -> Self {
        let settings = PipelineSettings {
            commit_interval: Self::COMMIT_INTERVAL,
            max_transaction_bytes: Self::MAX_STAGED_BYTES,
            decode: source.decode.clone(),
            ..PipelineSettings::default()
        };
        BackupConfig {
            source,
            topics,
            location,
            follow: false,
            segment_bytes: Self::DEFAULT_SEGMENT_BYTES,
            settings,
        }
    }

    /// Opens the location (reading its manifest: a backup run again continues where it
    /// stopped) and connects to the source; [`Pipeline::run`] then backs up.
    pub async fn connect(self) -> Result<Backup, Error> {
        if self.segment_bytes == 0 {
            return Err(Error::InvalidConfig {
                what: "segment bytes",
                detail: "a segment needs room for at least one batch: give a positive size"
                    .to_owned(),
            });
        }
        let store = Store::open_to_write(&self.location).await?;
        let groups = GroupOffsetsReader::new(
            self.source.bootstrap.clone(),
            self.source.connection.clone(),
        );
        let sink = BackupSink::open(
            store,
            self.source.bootstrap.clone(),
            self.segment_bytes,
            self.follow,
            groups,
        )
        .await?;
        let source = ClusterSource::connect(self.source, self.topics, !self.follow).await?;
        Ok(Pipeline::new(source, sink, self.settings))
    }
}

/// Committed offsets at the source: by topic, then group, then partition.
pub(crate) type GroupOffsets = BTreeMap<String, BTreeMap<String, BTreeMap<i32, i64>>>;

/// Reads the committed offsets of the source's consumer groups (ListGroups, then OffsetFetch
/// at each group's coordinator) for the partitions backed up. The sink calls it; it holds its
/// own connections, apart from the source's consumer.
pub(crate) struct GroupOffsetsReader {
    bootstrap: Vec<String>,
    settings: ConnectionSettings,
    metadata: MetadataClient,
    /// A connection to any broker, for FindCoordinator.
    any: Option<Connection>,
    /// Coordinators' connections, by address.
    coordinators: BTreeMap<String, Connection>,
}

impl GroupOffsetsReader {
    pub(crate) fn new(bootstrap: Vec<String>, settings: ConnectionSettings) -> Self {
        let metadata = MetadataClient::new(bootstrap.clone(), settings.clone());
        GroupOffsetsReader {
            bootstrap,
            settings,
            metadata,
            any: None,
            coordinators: BTreeMap::new(),
        }
    }

    /// The offsets every group (share groups have none) committed on `partitions` (by topic).
    /// A group that cannot be read now (its coordinator moving, not authorized) is left out
    /// with a warning: the groups are a copy of the source's state at one moment, not data.
    pub(crate) async fn read(
        &mut self,
        partitions: &BTreeMap<String, Vec<i32>>,
    ) -> Result<GroupOffsets, Error> {
        let mut offsets = GroupOffsets::new();
        if partitions.is_empty() {
            return Ok(offsets);
        }
        let listed = list_groups(&mut self.metadata, &self.settings, &GroupFilter::default())
            .await
            .map_err(Error::source_client)?;
        let groups = (listed.groups.into_iter()).filter(|g| g.group_type != "share");
        for group in groups.map(|g| g.group) {
            match self.committed(&group, partitions).await {
                Ok(committed) => {
                    for ((topic, partition), offset) in committed {
                        let topic = offsets.entry(topic).or_default();
                        let group = topic.entry(group.clone()).or_default();
                        group.insert(partition, offset);
                    }
                }
                Err(error) => {
                    tracing::warn!(%group, %error, "group's committed offsets not read");
                }
            }
        }
        Ok(offsets)
    }

    /// One group's committed offsets on `partitions`.
    async fn committed(
        &mut self,
        group: &str,
        partitions: &BTreeMap<String, Vec<i32>>,
    ) -> Result<Vec<((String, i32), i64)>, Error> {
        let mut any = match self.any.take() {
            Some(connection) => connection,
            None => (connect_any(&self.bootstrap, &self.settings).await)
                .map_err(Error::source_client)?,
        };
        let found = find_coordinator(&mut any, group).await;
        let found = found.map_err(Error::source_client)?;
        self.any = Some(any);
        let address = match found {
            Ok((_, address)) => address,
            Err(code) => return Err(refused(group, "FindCoordinator", code)),
        };
        let connection = match self.coordinators.remove(&address) {
            Some(connection) => connection,
            None => (Connection::connect(&address, &self.settings).await)
                .map_err(Error::source_client)?,
        };
        let mut connection = connection;
        let answer = offset_fetch(&mut connection, group, partitions).await;
        let (code, answers) = answer.map_err(Error::source_client)?;
        self.coordinators.insert(address, connection);
        if code != 0 {
            return Err(refused(group, "OffsetFetch", code));
        }
        Ok((answers.into_iter())
            .filter(|(_, c)| c.error_code == 0 && c.offset >= 0)
            .map(|(p, c)| ((p.topic.to_string(), p.partition), c.offset))
            .collect())
    }
}

fn refused(group: &str, request: &str, code: i16) -> Error {
    Error::Refused {
        cluster: "source",
        what: format!("{request} of group {group}"),
        detail: krec_client::error_name(code),
    }
}
