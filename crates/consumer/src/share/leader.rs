//! One share session per partition leader: its connection, its epoch (0 opens, then each
//! request increments it, -1 closes), and which partitions the leader holds in it.

use std::collections::BTreeSet;

use krec_client::share::{
    share_acknowledge, share_fetch, AcknowledgementRange, ShareFetchAnswer, ShareFetchParams,
    SharePartitionRequest, ShareSessionKey,
};
use krec_client::{Connection, ConnectionSettings};

use super::acks::PartitionKey;
use crate::Error;

/// A member's share session with one leader.
#[derive(Debug)]
pub(crate) struct LeaderSession {
    pub(crate) node: i32,
    pub(crate) address: String,
    connection: Option<Connection>,
    epoch: i32,
    /// Partitions the leader holds in the session.
    pub(crate) in_session: BTreeSet<PartitionKey>,
}

/// Who the member is, for every share request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Member<'a> {
    pub(crate) group: &'a str,
    pub(crate) member_id: &'a str,
    pub(crate) settings: &'a ConnectionSettings,
}

impl LeaderSession {
    pub(crate) fn new(node: i32, address: String) -> Self {
        Self {
            node,
            address,
            connection: None,
            epoch: 0,
            in_session: BTreeSet::new(),
        }
    }

    /// Whether the leader holds a session of this member open.
    pub(crate) fn is_open(&self) -> bool {
        self.epoch > 0 && self.connection.is_some()
    }

    /// The session is gone (a broken connection, a session error): the next request opens a
    /// new one. Returns the partitions it held, whose acquired records the leader released.
    pub(crate) fn lose(&mut self) -> BTreeSet<PartitionKey> {
        self.connection = None;
        self.epoch = 0;
        std::mem::take(&mut self.in_session)
    }

    async fn connection(
        &mut self,
        settings: &ConnectionSettings,
    ) -> Result<&mut Connection, Error> {
        if self.connection.is_none() {
            self.connection = Some(Connection::connect(&self.address, settings).await?);
            self.epoch = 0;
        }
        self.connection.as_mut().ok_or(Error::Stopped)
    }

    fn next_epoch(&mut self) {
        self.epoch = if self.epoch == i32::MAX {
            1
        } else {
            self.epoch + 1
        };
    }

    /// ShareFetch of `wanted`, carrying `acks`, and forgetting what the session holds beyond
    /// `wanted`. On any error the session is lost (see [`LeaderSession::lose`]).
    pub(crate) async fn fetch(
        &mut self,
        member: Member<'_>,
        params: &ShareFetchParams,
        wanted: &BTreeSet<PartitionKey>,
        acks: &[(PartitionKey, Vec<AcknowledgementRange>)],
    ) -> Result<ShareFetchAnswer, Error> {
        let no_acks: &[AcknowledgementRange] = &[];
        let requests: Vec<SharePartitionRequest<'_>> = wanted
            .iter()
            .map(|key| SharePartitionRequest {
                topic_id: key.0,
                partition: key.1,
                acknowledgements: acks
                    .iter()
                    .find(|(k, _)| k == key)
                    .map_or(no_acks, |(_, a)| &a[..]),
            })
            .collect();
        let forgotten: Vec<PartitionKey> = if self.epoch == 0 {
            Vec::new()
        } else {
            self.in_session.difference(wanted).copied().collect()
        };
        let epoch = self.epoch;
        let session = ShareSessionKey {
            group: member.group,
            member_id: member.member_id,
            epoch,
        };
        let connection = self.connection(member.settings).await?;
        let answer = share_fetch(connection, session, params, &requests, &forgotten).await;
        match answer {
            Ok(answer) if answer.error_code == 0 => {
                self.next_epoch();
                self.in_session = wanted.clone();
                Ok(answer)
            }
            Ok(answer) => Ok(answer),
            Err(error) => Err(error.into()),
        }
    }

    /// Delivers `acks` with ShareAcknowledge; with `close`, ends the session too (epoch -1).
    /// Nothing is sent when no session is open: without one the member holds no records.
    pub(crate) async fn acknowledge(
        &mut self,
        member: Member<'_>,
        acks: &[(PartitionKey, Vec<AcknowledgementRange>)],
        close: bool,
    ) -> Result<Vec<(PartitionKey, i16)>, Error> {
        if !self.is_open() || (acks.is_empty() && !close) {
            return Ok(Vec::new());
        }
        let requests: Vec<SharePartitionRequest<'_>> = acks
            .iter()
            .map(|(key, ranges)| SharePartitionRequest {
                topic_id: key.0,
                partition: key.1,
                acknowledgements: ranges,
            })
            .collect();
        let session = ShareSessionKey {
            group: member.group,
            member_id: member.member_id,
            epoch: if close { -1 } else { self.epoch },
        };
        let connection = self.connection(member.settings).await?;
        let answer = share_acknowledge(connection, session, &requests).await?;
        if close {
            self.lose();
        } else if answer.error_code == 0 {
            self.next_epoch();
        }
        if answer.error_code != 0 {
            return Err(Error::Client(krec_client::Error::Broker {
                broker: self.address.clone(),
                api: "ShareAcknowledge",
                topic: None,
                partition: None,
                code: answer.error_code,
                name: krec_client::error_name(answer.error_code),
            }));
        }
        Ok(answer
            .partitions
            .into_iter()
            .map(|(topic, partition, code)| ((topic, partition), code))
            .collect())
    }
}
