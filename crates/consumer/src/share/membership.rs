//! A share-group member's heartbeat: a task that finds the group's coordinator
//! (FindCoordinator, key type 0), joins with ShareGroupHeartbeat, heartbeats at the interval
//! the coordinator asks for, publishes each new assignment, and leaves (epoch -1) when told.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use krec_client::group::group_codes;
use krec_client::share::{share_group_heartbeat, ShareHeartbeat};
use krec_client::{error_name, Connection, ConnectionSettings};
use tokio::sync::watch;
use uuid::Uuid;

use crate::group::session::coordinator_among;
use crate::shared::Backoff;
use crate::Error;

/// The partitions the coordinator gave this member, by topic id.
pub(crate) type Assignment = BTreeMap<Uuid, Vec<i32>>;

/// What the heartbeat task tells the fetching side.
#[derive(Debug, Default)]
pub(crate) struct MemberState {
    /// The current assignment (empty before the first one).
    pub(crate) assignment: Arc<Assignment>,
    /// The membership failed for good (the error waits in the task's failure slot).
    pub(crate) failed: bool,
}

/// What the membership task needs.
pub(crate) struct Membership {
    pub(crate) group: String,
    pub(crate) member_id: String,
    pub(crate) topics: Vec<String>,
    pub(crate) bootstrap: Vec<String>,
    pub(crate) settings: ConnectionSettings,
    pub(crate) backoff: (Duration, Duration),
    pub(crate) give_up_after: Duration,
}

/// A member id of the client's making (ShareGroupHeartbeat v1 wants one): random, from the
/// process's randomly seeded hasher.
pub(crate) fn new_member_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let state = std::collections::hash_map::RandomState::new();
    let mut halves = [0u64; 2];
    for (i, half) in halves.iter_mut().enumerate() {
        let mut hasher = state.build_hasher();
        hasher.write_usize(i);
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        hasher.write_u32(std::process::id());
        *half = hasher.finish();
    }
    Uuid::from_u64_pair(halves[0], halves[1]).to_string()
}

/// How soon a member without partitions heartbeats again: the coordinator assigns a new
/// member's partitions shortly after it joins.
const UNASSIGNED_HEARTBEAT: Duration = Duration::from_millis(500);

/// Codes after which the member joins again with epoch 0 (its membership lapsed).
fn must_rejoin(code: i16) -> bool {
    matches!(
        code,
        group_codes::UNKNOWN_MEMBER_ID | group_codes::FENCED_MEMBER_EPOCH
    )
}

impl Membership {
    /// Heartbeats until `leave` turns true, then leaves the group; publishes into `state`,
    /// and a failure for good into `failure`.
    pub(crate) async fn run(
        self,
        state: watch::Sender<MemberState>,
        mut leave: watch::Receiver<bool>,
        failure: Arc<Mutex<Option<Error>>>,
    ) {
        let fail = |error: Error| {
            *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
            state.send_modify(|s| s.failed = true);
        };
        let mut coordinator: Option<Connection> = None;
        let mut epoch = 0;
        let mut backoff = Backoff::new(self.backoff.0, self.backoff.1);
        let mut failing_since: Option<Instant> = None;
        loop {
            let leaving = *leave.borrow();
            let answer = self
                .beat(&mut coordinator, if leaving { -1 } else { epoch })
                .await;
            if leaving {
                if let Err(error) = answer {
                    tracing::debug!(%error, "leaving the share group");
                }
                return;
            }
            let pause = match answer {
                Ok(answer) if answer.error_code == 0 => {
                    failing_since = None;
                    backoff.reset();
                    epoch = answer.member_epoch;

                    if let Some(assignment) = answer.assignment {
                        tracing::info!(group = %self.group, ?assignment, "share group assignment");
                        state.send_modify(|s| s.assignment = Arc::new(assignment));
                    }
                    // Not assigned yet: ask again soon rather than an interval later.
                    let unassigned = state.borrow().assignment.is_empty();
                    let interval = answer.heartbeat_interval.max(Duration::from_millis(100));
                    if unassigned {
                        interval.min(UNASSIGNED_HEARTBEAT)
                    } else {
                        interval
                    }
                }
                Ok(answer) if must_rejoin(answer.error_code) => {
                    tracing::warn!(
                        code = answer.error_code,
                        "share group membership lapsed; joining again"
                    );
                    epoch = 0;
                    state.send_modify(|s| s.assignment = Arc::new(Assignment::new()));
                    Duration::ZERO
                }
                Ok(answer) if group_codes::needs_rediscovery(answer.error_code) => {
                    coordinator = None;
                    backoff.next_delay()
                }
                Ok(answer) => {
                    tracing::error!(message = ?answer.error_message, "ShareGroupHeartbeat refused");
                    return fail(self.error(answer.error_code));
                }
                Err(error) if error.is_security_failure() => return fail(error),
                Err(error) => {
                    coordinator = None;
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > self.give_up_after {
                        return fail(error);
                    }
                    tracing::warn!(%error, "share group heartbeat failed; retrying");
                    backoff.next_delay()
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = leave.changed() => {}
            }
        }
    }

    fn error(&self, code: i16) -> Error {
        Error::Group {
            group: self.group.clone(),
            broker: String::new(),
            api: "ShareGroupHeartbeat",
            code,
            name: error_name(code),
        }
    }

    /// One heartbeat at `epoch`, finding the coordinator first when there is none.
    async fn beat(
        &self,
        coordinator: &mut Option<Connection>,
        epoch: i32,
    ) -> Result<krec_client::share::ShareHeartbeatAnswer, Error> {
        if coordinator.is_none() {
            *coordinator = Some(self.find_coordinator().await?);
        }
        let connection = coordinator.as_mut().ok_or(Error::Stopped)?;
        let heartbeat = ShareHeartbeat {
            group: &self.group,
            member_id: &self.member_id,
            member_epoch: epoch,
            topics: (epoch == 0).then_some(&self.topics[..]),
        };
        Ok(share_group_heartbeat(connection, &heartbeat).await?)
    }

    async fn find_coordinator(&self) -> Result<Connection, Error> {
        coordinator_among(&self.bootstrap, &self.group, &self.settings).await
    }
}
