//! Following a subscription: the topics it takes now (looked up with care, since a broker can
//! briefly answer without a topic that exists), and the task that keeps a [`crate::Consumer`]'s
//! cursors on them, looking again every [`crate::ConsumerConfig::metadata_refresh`] or as soon
//! as the coordinator finds a matched topic missing.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::Mutex as AsyncMutex;

use super::config::StartOffset;
use super::cursor::Cursor;
use super::shared::{Event, Shared};
use super::subscription::TopicSubscription;
use crate::{Error, UNKNOWN_TOPIC_LOOKUPS, UNKNOWN_TOPIC_RETRY_DELAY};
use krec_client::metadata::{ClusterMetadata, MetadataClient};

/// Topics a subscription takes, with their partition ids.
pub type Matched = BTreeMap<String, Vec<i32>>;

/// The topics `subscription` takes now. A pattern-matched topic of `previous` missing from the
/// answer is asked about again, [`UNKNOWN_TOPIC_LOOKUPS`] answers in all, before it is left
/// out: a broker that has just restarted can answer from metadata that is not caught up, and
/// a topic wrongly dropped would be read again from its start policy. Named topics missing
/// are left out at once: they are not the subscription's to drop.
pub async fn look_up(
    metadata: &AsyncMutex<MetadataClient>,
    subscription: &TopicSubscription,
    previous: &Matched,
) -> Result<Matched, Error> {
    let mut matched = subscription.select(&describe(metadata, subscription).await?);
    let mut missing: Vec<&String> = previous
        .keys()
        .filter(|t| !matched.contains_key(*t) && !subscription.is_named(t))
        .collect();
    let mut lookups = 1;
    while !missing.is_empty() && lookups < UNKNOWN_TOPIC_LOOKUPS {
        tokio::time::sleep(UNKNOWN_TOPIC_RETRY_DELAY).await;
        lookups += 1;
        let again = subscription.select(&describe(metadata, subscription).await?);
        missing.retain(|topic| match again.get(*topic) {
            Some(partitions) => {
                matched.insert((*topic).clone(), partitions.clone());
                false
            }
            None => true,
        });
    }
    Ok(matched)
}

/// Every topic when there are patterns to match, else only the named ones.
async fn describe(
    metadata: &AsyncMutex<MetadataClient>,
    subscription: &TopicSubscription,
) -> Result<ClusterMetadata, Error> {
    let mut client = metadata.lock().await;
    let cluster = if subscription.has_patterns() {
        client.fetch_all().await?
    } else {
        client.fetch(subscription.names()).await?
    };
    Ok(cluster)
}

/// What following the subscription needs, kept from one look to the next.
#[derive(Debug)]
pub struct Follower {
    /// The subscription.
    pub subscription: TopicSubscription,
    /// Where partitions of topics that start being consumed begin.
    pub start: StartOffset,
    /// The topics consumed now.
    pub current: Matched,
}

/// Topics a look added and dropped.
#[derive(Debug, Default)]
pub struct Changes {
    /// Topics that started being consumed.
    pub added: Vec<Arc<str>>,
    /// Pattern-matched topics that are gone (deleted).
    pub dropped: Vec<Arc<str>>,
}

impl Follower {
    /// Moves the consumer's cursors to `now`: new topics and partitions start at the start
    /// policy; pattern-matched topics no longer there are dropped, their cursors removed.
    /// A named topic that went missing keeps its cursors: the coordinator reports it.
    pub fn apply(&mut self, shared: &Shared, now: Matched) -> Changes {
        let mut changes = Changes::default();
        {
            let mut state = shared.state();
            let generation = shared.next_generation();
            for (topic, partitions) in &now {
                let name: Arc<str> = Arc::from(topic.as_str());
                if !self.subscription.is_named(topic) {
                    state.matched_topics.insert(name.clone());
                }
                let mut started = false;
                for &partition in partitions {
                    let key = (name.clone(), partition);
                    if let std::collections::btree_map::Entry::Vacant(slot) =
                        state.cursors.entry(key)
                    {
                        let mut cursor = Cursor::new(name.clone(), partition, self.start);
                        cursor.generation = generation;
                        slot.insert(cursor);
                        started = true;
                    }
                }
                if started && !self.current.contains_key(topic) {
                    changes.added.push(name);
                }
                state.metadata_stale |= started;
            }
            for topic in self.current.keys() {
                if now.contains_key(topic) || self.subscription.is_named(topic) {
                    continue;
                }
                let name: Arc<str> = Arc::from(topic.as_str());
                state.cursors.retain(|(t, _), _| *t != name);
                state.matched_topics.remove(&name);
                changes.dropped.push(name);
            }
        }
        for topic in &changes.added {
            let partitions = now.get(&**topic).map_or(0, Vec::len);
            tracing::info!(%topic, partitions, "consuming a topic the subscription matches");
        }
        for topic in &changes.dropped {
            tracing::warn!(%topic, "a subscribed topic was deleted; no longer consuming it");
        }
        let named_missing: Vec<(String, Vec<i32>)> = self
            .current
            .iter()
            .filter(|(t, _)| self.subscription.is_named(t) && !now.contains_key(*t))
            .map(|(t, p)| (t.clone(), p.clone()))
            .collect();
        self.current = now;
        self.current.extend(named_missing);
        changes
    }
}

/// Follows the subscription until the consumer stops: looks every `metadata_refresh`, or at
/// once when woken, and tells the consumer handle what changed.
#[tracing::instrument(name = "subscription", skip_all)]
pub async fn run(
    shared: Arc<Shared>,
    metadata: Arc<AsyncMutex<MetadataClient>>,
    mut follower: Follower,
) {
    while !shared.is_stopping() {
        tokio::select! {
            _ = tokio::time::sleep(shared.config.metadata_refresh) => {}
            _ = shared.subscription_wakeup.notified() => {}
        }
        let now = match look_up(&metadata, &follower.subscription, &follower.current).await {
            Ok(now) => now,
            Err(Error::Client(error)) if error.is_security_failure() => {
                return shared.fail(error.into());
            }
            // Outages are the coordinator's to give up on; the next look may do better.
            Err(error) => {
                tracing::warn!(%error, "looking up the subscribed topics failed; trying again later");
                continue;
            }
        };
        let changes = follower.apply(&shared, now);
        if changes.added.is_empty() && changes.dropped.is_empty() {
            continue;
        }
        if !changes.added.is_empty() {
            shared.coordinator_wakeup.notify_one();
        }
        let _ = shared.events.send(Event::SubscriptionChanged {
            added: changes.added,
            dropped: changes.dropped,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConsumerConfig;

    fn matched(topics: &[(&str, &[i32])]) -> Matched {
        topics
            .iter()
            .map(|(t, p)| (t.to_string(), p.to_vec()))
            .collect()
    }

    fn cursors(shared: &Shared) -> Vec<(String, i32)> {
        let state = shared.state();
        state
            .cursors
            .keys()
            .map(|(t, p)| (t.to_string(), *p))
            .collect()
    }

    #[test]
    fn new_topics_start_and_deleted_pattern_topics_go_but_named_ones_stay() {
        let (events, _receiver) = tokio::sync::mpsc::unbounded_channel();
        let shared = Shared::new(ConsumerConfig::new(vec!["h:1".into()]), events);
        let mut follower = Follower {
            subscription: TopicSubscription::parse(["named", "^p-"]).unwrap(),
            start: StartOffset::Beginning,
            current: Matched::new(),
        };
        let first = follower.apply(&shared, matched(&[("named", &[0]), ("p-a", &[0, 1])]));
        assert_eq!(first.added.len(), 2);
        assert!(first.dropped.is_empty());
        assert!(shared.state().matched_topics.contains("p-a"));
        assert!(!shared.state().matched_topics.contains("named"));

        // p-a deleted, p-b created, a partition added to the named topic.
        let second = follower.apply(&shared, matched(&[("named", &[0, 1]), ("p-b", &[0])]));
        assert_eq!(second.added, vec![Arc::<str>::from("p-b")]);
        assert_eq!(second.dropped, vec![Arc::<str>::from("p-a")]);
        assert_eq!(
            cursors(&shared),
            vec![
                ("named".to_owned(), 0),
                ("named".to_owned(), 1),
                ("p-b".to_owned(), 0)
            ]
        );
        assert!(!shared.state().matched_topics.contains("p-a"));

        // A named topic missing is not the subscription's to drop.
        let third = follower.apply(&shared, matched(&[("p-b", &[0])]));
        assert!(third.dropped.is_empty());
        assert_eq!(cursors(&shared).len(), 3);
        assert!(follower.current.contains_key("named"));
    }
}
